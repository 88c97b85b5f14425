#pragma once
// `dcpsim hw run`: one DCP decode step (query all-gather, local attention, the strategy's merge) on real GPUs
// — one thread per device, or one process per device under MPI — or emulated: N logical ranks on one device,
// each collective replaced by a device-local stand-in and marked as emulated. Warm-up, repetitions, CUDA
// events per phase per rank, medians; the merged output is checked against the fp64 no-DCP reference
// (models/).
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dcpsim/error.h"
#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/traces/schema.h"
#include "dcpsim/traces/trace_sink.h"

namespace dcpsim::hw {

enum class ProcessMode {
  kEmulate,  // N logical ranks on one device
  kThreads,  // one thread per device of this process
  kMpi,      // one process per device; this process is one rank (DCPSIM_WITH_MPI builds)
};

// Where phase durations come from. kCupti: the GPU timeline (CUPTI activity records of every kernel, memcpy
// and memset, nothing added to the streams); kEvents: CUDA events recorded around each phase (the fallback;
// short phases read long); kStep: one pair of events around each rank's whole step and nothing else (the
// baseline that shows what the other two cost). kAuto: CUPTI when it loads, else events with a notice.
enum class Timing { kAuto, kCupti, kEvents, kStep };
inline const char* timing_name(Timing t) {
  switch (t) {
    case Timing::kAuto:
      return "auto";
    case Timing::kCupti:
      return "cupti";
    case Timing::kEvents:
      return "cuda-events";
    case Timing::kStep:
      return "step";
  }
  return "?";
}
// "auto" | "cupti" | "events" | "step"; InputError otherwise.
inline Timing parse_timing(const std::string& s) {
  if (s == "auto") return Timing::kAuto;
  if (s == "cupti") return Timing::kCupti;
  if (s == "events" || s == "cuda-events") return Timing::kEvents;
  if (s == "step") return Timing::kStep;
  throw InputError("--timing '" + s + "' is not one of auto, cupti, events, step");
}

struct RunConfig {
  models::Scenario
      scenario;  // validated; any strategy (row-stream: emulation only); launch eager, graph, pdl
  ProcessMode mode = ProcessMode::kEmulate;
  std::vector<int> devices;  // kThreads: N device ordinals; kEmulate: one (default 0)
  int warmup = 5;
  int reps = 20;
  int check_rows = -1;      // rows compared with the reference; -1: all rows up to 16, else 4 sampled
  bool row_stamps = false;  // %globaltimer per row where its LSE and output become ready
  std::uint64_t seed = 1;
  int padded_rows = 0;                    // extra CUDA-graph padding rows, masked like empty shards
  std::int64_t direct_timeout_ms = 2000;  // how long an owner waits for a flag (direct, row-stream)
  Timing timing = Timing::kAuto;
  AttentionImpl attention = AttentionImpl::kAuto;  // local attention: FlashInfer where it runs, else dcpsim
  bool row_probe =
      false;  // row-stream: %globaltimer at each stage of each combine item (RunResult::row_probe)
  bool row_combine_staged = false;  // row-stream: the combine's shared-memory stages where registers would do
  // row-stream: an early tail combine too, released as the last attention launch's blocks have all begun
  // (RowCombineArgs::early); off, the tail starts once every rank's attention has ended
  bool row_early_tail = false;
};

struct PhaseStats {
  int rank = 0;
  std::string phase;
  std::vector<double> samples_ns;  // one per repetition
  double median_ns = 0, min_ns = 0, max_ns = 0;
  bool emulated = false;  // a device-local stand-in for a collective
};

struct CheckResult {
  int rows_checked = 0;
  double rel_l2 = 0;  // ‖gpu − ref‖₂/‖ref‖₂ over the checked rows (every rank's kept heads)
  double max_abs = 0;
  double worst_bound =
      0;  // max over elements of |gpu − ref| / bound (≤ 1 passes); bound from SPEC's roundings
  double lse_max_abs = 0;  // merged LSE vs reference
  std::int64_t mismatched_nonfinite = 0;
  bool passed = false;
  std::string summary;  // one line with the figures
};

// One item of the row-stream combine (a slice of one row's heads at its owner), as the last
// measured step merged it (`hw run --row-probe`): which grid and warp took it, and when each stage ended.
// Times are ns after the slowest rank's attention ended on the GPU timeline (CUPTI); with other timings,
// after the owner's step stamp.
struct RowProbeItem {
  int rank = 0, item = 0, row = 0;
  bool tail = false;   // a tail grid (else the streaming grid beside the attention)
  bool early = false;  // the early tail, released while the attention ran (else the tail after it)
  int sm = 0, warp = 0;
  // claimed, saw the row's flags, held the LSEs, the weights, the first partials, stored the output
  std::array<double, 6> t_ns{};
};
// "streaming", "early" or "tail": which of the owner's combine grids merged the item.
inline const char* row_probe_grid(const RowProbeItem& it) {
  return it.early ? "early" : it.tail ? "tail" : "streaming";
}
inline constexpr std::array<const char*, 6> kRowProbeStages = {"claimed", "flags",    "lse",
                                                               "weights", "partials", "stored"};

struct RunResult {
  std::vector<PhaseStats> phases;
  double step_median_ns = 0;  // threads/MPI: slowest rank's step; emulate: Σ over phases of the slowest rank
  double merge_median_ns = 0;       // the phases after attention, same rule
  double outer_step_median_ns = 0;  // each rank's whole step between two CUDA events (max over ranks)
  Timing timing = Timing::kEvents;  // what the phase figures were measured with (never kAuto)
  std::string timing_note;          // why CUPTI was not used, when it was asked for and not used
  CheckResult check;
  // Further named figures (row-stream: when rows became ready after the slowest rank's attention, µs).
  std::vector<std::pair<std::string, double>> figures;
  std::vector<RowProbeItem> row_probe;  // with RunConfig::row_probe: every item of the last measured step
};

// Runs the step, writes one trace section (scenario, events of the median repetition, phase summaries, row
// results, summary) into `sink` when it is not null, and returns the figures. Throws InputError for a
// scenario the runner cannot run, RuntimeError for a CUDA/NCCL failure or a flag timeout; a failed check is
// reported in the result (the caller decides the exit status).
RunResult run_step(const RunConfig& config, traces::TraceSink* sink);

// Why `s` cannot run in `mode` with `dcp` ranks, in one line ("" when it can, as far as the strategy goes;
// the scenario and the devices are checked by run_step). `hw run --strategy all` skips those with a reason.
std::string strategy_unavailable(models::Strategy s, ProcessMode mode, int dcp);

// A measured-trace header: source HW or EMULATED, provenance (argv, git sha, time, host), the devices with
// names, UUIDs and bus ids, CUDA runtime/driver and NCCL versions.
traces::v1::Header measured_header(ProcessMode mode, const std::vector<int>& devices,
                                   const std::vector<std::string>& argv);

// MPI mode: this process's rank and the group size (1 and 0 outside MPI builds).
struct MpiWorld {
  int rank = 0;
  int size = 1;
};
MpiWorld mpi_init(int* argc, char*** argv);  // throws RuntimeError in builds without MPI
void mpi_finalize();

}  // namespace dcpsim::hw
