#pragma once
// Reading a communication table from an already parsed JSON value: a profile's inline `comm_tables` entries.
#include <string>

#include <nlohmann/json.hpp>

#include "dcpsim/models/comm_table.h"

namespace dcpsim::models::detail {

// `where` prefixes every message (a file name, or "profile.json: comm_tables[1]").
CommTables parse_comm_tables_json(const nlohmann::ordered_json& root, const std::string& where);
nlohmann::ordered_json comm_tables_to_json(const CommTables& t);

}  // namespace dcpsim::models::detail
