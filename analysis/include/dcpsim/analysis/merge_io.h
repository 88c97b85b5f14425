#pragma once
// JSON input and output of `dcpsim merge`: user-supplied per-rank partials in, the exact merge out.
// Input:  {"lse": [N][B][H], "out": [N][B][H][D]}
// Output: {"lse": [B][H], "out": [B][H][D], ... and for head-scattering strategies "ranks": [{rank, heads,
// lse, out}]} Numbers may be JSON numbers or the strings "nan", "inf", "-inf" (JSON has no non-finite
// numbers); the writer uses the same strings.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/models/merge.h"
#include "dcpsim/models/tensor.h"

namespace dcpsim::analysis {

// A value as written in the files: a number, or "nan" / "inf" / "+inf" / "-inf". `where` names the element in
// the InputError thrown for anything else (e.g. "out[1][0][2][5]").
double json_to_double(const nlohmann::json& value, const std::string& where);
nlohmann::json double_to_json(double value);

// Dense per-rank partials from a parsed document. Throws InputError naming the first missing key, wrong type
// or ragged dimension, or a rank count that differs between "lse" and "out".
std::vector<models::Partial> partials_from_json(const nlohmann::json& doc);

// Reads and parses `path`; InputError for a missing/unreadable file or invalid JSON.
std::vector<models::Partial> read_partials(const std::string& path);

// The merged result: full "lse"/"out", the options used, and "ranks" when the strategy scatters heads.
nlohmann::json merge_result_to_json(const models::MergeResult& result, const models::MergeOptions& options);

// Writes `doc` to a temporary file in the same directory, then renames it over `path`.
void write_json_file(const std::string& path, const nlohmann::json& doc);

}  // namespace dcpsim::analysis
