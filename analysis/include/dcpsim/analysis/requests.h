#pragma once
// Request traces: when each request arrives, how long its prompt is, how many tokens it generates.
//
// Formats (plain or gzip, recognised by content, not name):
//  - Mooncake JSONL (kvcache-ai/Mooncake FAST'25 traces): one object per line with "timestamp" (ms since the
//    start of the trace), "input_length" and "output_length"; other fields (hash_ids) are ignored.
//  - Azure LLM inference CSV (Azure/AzurePublicDataset, 2023): header
//  TIMESTAMP,ContextTokens,GeneratedTokens,
//    timestamps as "2023-11-16 18:15:46.6805900" (UTC date-time, up to 9 fractional digits), made relative to
//    the earliest row (the first, in the published traces, which are sorted).
// Arrival times are kept as integer ns, so nothing is rounded on the way in.
// Every problem — missing or empty file, corrupt gzip, wrong header, a malformed line or field, a negative
// length — is an InputError "file:line: what is wrong".
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace dcpsim::analysis {

struct Request {
  std::int64_t id = 0;  // 0-based position in the file
  // Since the trace's time 0 (Mooncake: its timestamp 0; Azure: the earliest row).
  std::int64_t arrival_ns = 0;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;

  double arrival_s() const { return static_cast<double>(arrival_ns) * 1e-9; }
  bool operator==(const Request&) const = default;
};

enum class RequestFormat { kMooncakeJsonl, kAzureCsv };

std::vector<Request> read_mooncake_jsonl(const std::filesystem::path& path);
std::vector<Request> read_azure_csv(const std::filesystem::path& path);

// Picks the format from the name (.jsonl / .json, .csv, each optionally .gz); throws InputError for any
// other.
RequestFormat request_format_of(const std::filesystem::path& path);
std::vector<Request> read_requests(const std::filesystem::path& path);

// "2023-11-16 18:15:46.6805900" (or with a 'T') -> ns since 1970-01-01 UTC; throws InputError naming `what`.
std::int64_t parse_utc_datetime_ns(std::string_view text, std::string_view what);

}  // namespace dcpsim::analysis
