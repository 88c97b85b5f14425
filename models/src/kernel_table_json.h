#pragma once
// Reading a kernel table from an already parsed JSON value: a profile's inline `tables` entries.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/models/kernel_table.h"

namespace dcpsim::models::detail {

// `where` prefixes every message (a file name, or "profile.json: tables[1]").
// `fast_points`: per entry of root's "tables", the points kernel_table_points.h read (the entries' own
// "points" are then empty), or null to read them from `root`.
KernelTables parse_kernel_tables_json(const nlohmann::ordered_json& root, const std::string& where,
                                      std::vector<std::vector<TablePoint>>* fast_points = nullptr);
nlohmann::ordered_json kernel_tables_to_json(const KernelTables& t);

}  // namespace dcpsim::models::detail
