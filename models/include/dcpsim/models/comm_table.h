#pragma once
// Measured collective tables ("dcpsim-comm-tables/1"): NCCL collective times by op, group size and nccl-tests
// size, with the measurement's provenance (device, NCCL version, system, source, command). `dcpsim import
// --nccl-tests` makes them from nccl-tests output; a profile lists them under `comm_tables`; the collective
// pricing (cost_collectives.h, price_collective) looks a collective up here before it falls back to NCCL's
// tuning model. Format and lookup rules: models/profiles/README.md, "Communication tables".
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/collective.h"

namespace dcpsim::models {

inline constexpr std::string_view kCommTablesFormat = "dcpsim-comm-tables/1";

struct CommProvenance {
  std::string device;   // as the run reported it, e.g. "NVIDIA H100 80GB HBM3" (compared with gpu.name)
  std::string nccl;     // NCCL version, e.g. "2.27.3" ("" when the log did not say)
  std::string system;   // what the GPUs sat in: "HGX H100 8-GPU, NVSwitch, 1 node"
  std::string source;   // where the numbers come from: files, a repository and commit, a URL
  std::string date;     // YYYY-MM-DD of the measurement or of the import
  std::string command;  // how the table was made (dcpsim import ... or the benchmark's command line)
  bool operator==(const CommProvenance&) const = default;
};

// One measured size on one group. Times are nccl-tests' per-call averages (their median when several runs
// were merged).
struct CommPoint {
  int gpus = 0;           // ranks in the communicator
  int nodes = 1;          // hosts (NVLink domains) they spanned
  double size_bytes = 0;  // nccl-tests' size column (cost_metrics.h: nccl_tests_size_bytes)
  double time_us = 0;     // median over the merged measurements
  double min_us = 0;      // fastest and slowest of them
  double max_us = 0;
  int samples = 1;  // measurements merged (runs, files, repetitions)
  bool operator==(const CommPoint&) const = default;
};

// One op as one kind of run measured it, over group sizes and sizes.
struct CommTable {
  Collective op = Collective::kAllGather;
  std::string dtype;      // nccl-tests' type name ("half", "bfloat16", "float", "int8", ...)
  bool in_place = false;  // nccl-tests' in-place columns (default: out-of-place)
  bool graph = false;     // nccl-tests -G: the calls replayed from a CUDA graph
  std::string algorithm;  // NCCL_ALGO the run forced ("" = NCCL's own choice)
  std::string protocol;   // NCCL_PROTO the run forced ("" = NCCL's own choice)
  // Which library ran the op: "" = NCCL (nccl-tests); otherwise a framework's own kernel, e.g. "vllm-custom"
  // (vLLM's custom all-reduce: one-shot below its size switch, two-shot above, in one NVLink domain of at
  // most 8 GPUs) or "deepep-ll" (DeepEP's low-latency dispatch/combine). Only queries for the same
  // implementation match.
  std::string implementation;
  std::vector<CommPoint> points;
  bool operator==(const CommTable&) const = default;
};

struct CommTables {
  std::string origin;  // the path as a profile wrote it, or "" when inline or built in code
  CommProvenance provenance;
  std::vector<CommTable> tables;
  // A profile may borrow a table measured on another GPU of the same interconnect (h200-sxm: H100's NVLink 4
  // tables); this says why ("" when the table was measured on the profile's own GPU).
  std::string borrowed;
  bool operator==(const CommTables&) const = default;
};

// Parses a table file; every error is one line naming `where` and the JSON path, e.g.
// "h100.json: tables[0].points[3].time_us: expected a positive number, got -1".
CommTables parse_comm_tables(std::string_view json_text, std::string_view where);
CommTables load_comm_tables(const std::filesystem::path& path);
// Canonical text: one point per line; parse_comm_tables(comm_tables_json(t)) == t.
std::string comm_tables_json(const CommTables& t);
// Human-readable listing: provenance, each table's op and kind, group sizes and size ranges.
std::string describe_comm_tables(const CommTables& t);

// Physical bounds on a measured point (InputError at `at` outside them): groups of at most kMaxCommGpus,
// sizes in [1 B, 1 PiB], times in [0.1 us, 1000 s], and at most 100 TB/s (size / time).
inline constexpr int kMaxCommGpus = 1 << 20;
inline constexpr double kMaxCommBytes = 1125899906842624.0;  // 1 PiB
inline constexpr double kMinCommUs = 0.1, kMaxCommUs = 1e9;
inline constexpr double kMaxCommBandwidth = 1e14;  // B/s
void check_comm_point(const CommPoint& p, const std::string& at);

// Makes the points of one group and size one point: the median of their times, the least min and the
// greatest max, the samples summed. Importers add every measurement as a point, then merge.
void merge_comm_points(CommTable& table);
// Sorts points by (nodes, gpus, size) and checks them (positive finite numbers, min <= time <= max, no
// duplicates); InputError prefixed by `where`.
void finalize_comm_table(CommTable& table, const std::string& where);

// What a lookup asks for.
struct CommQuery {
  Collective op = Collective::kAllGather;
  int gpus = 2;
  int nodes = 1;
  double size_bytes = 0;  // nccl-tests' size
  std::string dtype;      // preferred type ("" = any); other types of the op are used when none matches
  bool in_place = false;  // preferred placement; the other is used when no table of this one covers it
  bool graph = false;     // preferred launch (nccl-tests -G or not)
  std::string algorithm;  // forced NCCL_ALGO ("" = NCCL's choice): only tables run the same way match
  std::string protocol;
  bool extrapolate = true;     // anchor the model to the nearest measured point outside the table (see below)
  std::string implementation;  // "" = NCCL: only tables of the same implementation match
};

struct CommTableHit {
  double time_s = 0;
  bool exact = false;           // a measured point, as measured
  bool between_groups = false;  // interpolated between two measured group sizes
  // Outside every measured size or group of the layout: the model at the query, scaled by measured / model at
  // the nearest measured point (the nearest group, the nearest size in it). Only with
  // CommQuery::extrapolate; the price is then marked extrapolated.
  bool extrapolated = false;
  const CommTables* file = nullptr;
  const CommTable* table = nullptr;
};

// The time of `q` from the tables, or nullopt when none covers it: same op, same node count, the size inside
// the sizes measured at that group size (log(time) linear in log(size) between measured neighbours, exact at
// measured sizes), and a group size that was measured or lies between two measured ones. Between group sizes
// g0 < N < g1 the ratio of measured to `guide` (the analytic time of the same op and size on g ranks) is
// interpolated linearly in log(g) and applied to guide(N), so the analytic model's shape in N carries the
// measurement. Candidate tables are tried in order of preference: forced algorithm/protocol equal, launch
// (graph) equal, placement equal, dtype equal (then one of the same width: half and bfloat16), then any.
// With q.extrapolate, a query outside every candidate (a larger size, a group beyond the measured ones, same
// layout) is the model anchored at the nearest measured point of the first candidate that has the layout:
// guide(query) × measured / guide at that point, marked `extrapolated`. `guide(gpus, size)` is the analytic
// time of the same op (NCCL's tuning model) at nccl-tests size `size`.
std::optional<CommTableHit> lookup_comm_time(const std::vector<CommTables>& files, const CommQuery& q,
                                             const std::function<double(int gpus, double size)>& guide);

// nccl-tests type names normalised ("fp16" -> "half", "bf16" -> "bfloat16", "float32" -> "float", ...).
std::string normalise_dtype(std::string_view name);

}  // namespace dcpsim::models
