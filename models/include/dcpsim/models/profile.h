#pragma once
// Hardware profiles: every number the cost models and the simulator start from, each kept together with its
// unit and its source. The JSON files in models/profiles/ are the single source of truth; the same files are
// embedded in the library, so a built-in name works from any directory. See models/profiles/README.md for the
// format.
#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/comm_table.h"
#include "dcpsim/models/kernel_table.h"

namespace dcpsim::models {

// The units a profile may state a number in. Each field has one dimension (time, bytes, bandwidth, count,
// ratio); a file may use any unit of that dimension, and the value is kept exactly as written so that files
// round-trip.
enum class Unit {
  kCount,         // "count"
  kRatio,         // "ratio" (dimensionless fraction, e.g. an efficiency)
  kBytes,         // "B"
  kKB,            // "KB"  = 1e3 B
  kMB,            // "MB"  = 1e6 B
  kGB,            // "GB"  = 1e9 B
  kKiB,           // "KiB" = 1024 B
  kMiB,           // "MiB" = 1024² B
  kGiB,           // "GiB" = 1024³ B
  kBps,           // "B/s"
  kGBps,          // "GB/s" = 1e9 B/s
  kTBps,          // "TB/s" = 1e12 B/s
  kGbps,          // "Gb/s" = 1e9 bit/s = 1.25e8 B/s
  kSeconds,       // "s"
  kMilliseconds,  // "ms"
  kMicroseconds,  // "us"
  kNanoseconds,   // "ns"
  kFlops,         // "FLOP/s"
  kTFlops,        // "TFLOP/s" = 1e12 FLOP/s
};

enum class Dimension { kCount, kRatio, kBytes, kBandwidth, kTime, kComputeRate };

std::string_view to_string(Unit u);
Unit parse_unit(std::string_view s);  // throws InputError listing the allowed spellings
Dimension dimension_of(Unit u);
// Factor from the unit to the base unit of its dimension (s, B, B/s, count, ratio).
double si_factor(Unit u);

// One number of a profile: value as written, its unit, and where it came from (a spec sheet, a source file
// and line, a measurement with its command, "estimate: ..." when nothing better exists).
struct Quantity {
  double value = 0.0;
  Unit unit = Unit::kCount;
  std::string source;

  // The value in base units: seconds, bytes, bytes per second, a count or a ratio.
  double si() const { return value * si_factor(unit); }
  bool operator==(const Quantity&) const = default;
};

// Builds a quantity from a base-unit value, expressed in `unit` (e.g. calibrated 3.1e-6 s written as 3.1 us).
Quantity quantity_from_si(double base_value, Unit unit, std::string source);

// An on/off setting with its source.
struct Switch {
  bool value = false;
  std::string source;
  bool operator==(const Switch&) const = default;
};

// NCCL protocols and algorithms, in the spelling of NCCL_PROTO / NCCL_ALGO (lower case here).
enum class Protocol { kLL, kLL128, kSimple };
// kP2p is NCCL's send/recv path: all-to-all as concurrent point-to-point transfers.
enum class Algorithm { kRing, kTree, kNvls, kP2p };
inline constexpr std::array<Protocol, 3> kAllProtocols = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};
std::string_view to_string(Protocol p);
std::string_view to_string(Algorithm a);
Protocol parse_protocol(std::string_view s);    // "ll" | "ll128" | "simple" (any case)
Algorithm parse_algorithm(std::string_view s);  // "ring" | "tree" | "nvls" | "p2p" (any case)

struct GpuSpec {
  std::string name;  // marketing name, e.g. "NVIDIA H200 SXM"
  // The names CUDA reports for the GPUs this profile describes (cudaDeviceProp::name, as `dcpsim hw devices`
  // and every measured table's provenance.device print them), e.g. "NVIDIA H100 80GB HBM3". Optional in a
  // file (`gpu.devices`); a table measured on any of them, or on a device whose name starts `name` or that
  // `name` starts (the prefix rule), loads (profile_describes_device).
  std::vector<std::string> devices;
  Quantity sm_count;                // count
  Quantity hbm_capacity;            // bytes
  Quantity hbm_bandwidth_spec;      // bandwidth, data-sheet peak
  Quantity hbm_bandwidth_measured;  // bandwidth, device-to-device copy (what kernels are scaled from)
  Quantity l2_size;                 // bytes
  bool operator==(const GpuSpec&) const = default;
};

struct TopologySpec {
  Quantity gpus_per_nvlink_domain;  // count: GPUs reachable over NVLink without leaving the switch fabric
  Quantity gpus_per_node;           // count: GPUs per host / tray (one OS image, one set of CPUs)
  bool operator==(const TopologySpec&) const = default;
};

struct NvlinkSpec {
  Quantity bandwidth;           // bandwidth, per GPU, one direction, data-sheet
  Quantity measured_bandwidth;  // bandwidth, per GPU, one direction, measured peer copy (used by the models)
  Quantity hop_latency;         // time, one GPU-to-GPU hop through the NVSwitch
  // bandwidth, per GPU, one direction: what a kernel's stores into peer memory reach (the direct,
  // row-stream and FlashInfer pushes, one-shot all-reduces); optional in a file: without it the pushes
  // move at measured_bandwidth
  std::optional<Quantity> store_bandwidth;
  bool operator==(const NvlinkSpec&) const = default;
};

struct InterNodeSpec {
  Quantity bandwidth;  // bandwidth, per GPU, one direction (its NIC)
  Quantity latency;    // time, one message end to end through the fabric
  bool operator==(const InterNodeSpec&) const = default;
};

// The kernels that may carry their own memory-kernel numbers (kernel.<name> in the file): the merge kernels,
// and the copy of the gathered query into the dense layout FlashInfer's MLA kernel reads (`q_repack`).
enum class MemoryKernel { kCorrection, kA2aPack, kA2aCombine, kDirectCombine, kQRepack };
inline constexpr std::array<MemoryKernel, 5> kAllMemoryKernels = {
    MemoryKernel::kCorrection, MemoryKernel::kA2aPack, MemoryKernel::kA2aCombine,
    MemoryKernel::kDirectCombine, MemoryKernel::kQRepack};
// "correction" | "a2a_pack" | "a2a_combine" | "direct_combine" | "q_repack"
std::string_view to_string(MemoryKernel k);
// The merge kernels an emulated step runs rank after rank, each after the previous rank's kernel of its kind
// (LaunchSpec::pdl_saving).
inline constexpr std::array<MemoryKernel, 3> kPdlChainKernels = {
    MemoryKernel::kCorrection, MemoryKernel::kA2aPack, MemoryKernel::kA2aCombine};
// The merge kernels that follow a collective's result: the runner's emulated all-gather (correction) and
// all-to-all (A2A combine) are copy nodes of the step's graph (LaunchSpec::after_copy_node).
inline constexpr std::array<MemoryKernel, 2> kAfterCopyKernels = {MemoryKernel::kCorrection,
                                                                  MemoryKernel::kA2aCombine};

struct LaunchSpec {
  Quantity cpu_issue_eager;     // time: host cost of one eager kernel launch (per kernel)
  Quantity cpu_issue_graph;     // time: per kernel inside a replayed CUDA graph
  Quantity cpu_issue_pdl;       // time: per kernel with programmatic dependent launch (captured in a graph)
  Quantity gpu_launch_latency;  // time: from issue to the kernel starting on an idle GPU
  Quantity dependent_gap;       // time: end of a kernel to the start of the already-queued dependent kernel
                                // (graph-replayed)
  Quantity dependent_gap_pdl;   // time: the same gap when PDL lets the next kernel's prologue overlap
  // time: the same gap between eagerly launched kernels (each its own launch, none in a graph); optional in
  // a profile file: without it eager kernels get dependent_gap
  std::optional<Quantity> dependent_gap_eager;
  // time: how much longer a kernel runs on the GPU timeline when it follows a device-to-device copy node of
  // the same CUDA graph (`hw sweep --merge-prelude-copy 4k --prelude-copy-in-graph`); the runner's emulated
  // all-gather and all-to-all are such copies, NCCL's collectives are kernels.
  Quantity kernel_after_copy_node;
  // time, per kernel type that follows such copies (correction, a2a_combine; optional in a profile file as
  // launch.kernel_after_copy_node_<type>): the same for that kernel alone. The direct measurement above is
  // one median over three kernels; the steps show the correction pays less and the A2A combine more, so
  // `hw calibrate` fits these on its steps. Absent: kernel_after_copy_node. Indexed by MemoryKernel; only
  // kAfterCopyKernels' entries are read, written or validated.
  std::array<std::optional<Quantity>, kAllMemoryKernels.size()> after_copy_node;
  // time, per merge kernel type (correction, a2a_pack, a2a_combine; optional as launch.graph_saving_<type>):
  // how much less the kernel takes in an emulated step launched as a graph (or with PDL, before its PDL
  // saving) than its table prices it: the steps' graph-launched kernels run shorter than the same
  // kernels launched eagerly, by more than the tables' own timing shows. Fitted on steps; absent: 0.
  // Indexed by MemoryKernel; only kPdlChainKernels' entries are read, written or validated.
  std::array<std::optional<Quantity>, kAllMemoryKernels.size()> graph_saving;
  // What a kernel of type `k` adds after a copy node of its graph: its own after_copy_node where it is one of
  // kAfterCopyKernels and the profile has one, else kernel_after_copy_node.
  double after_copy_node_s(MemoryKernel k) const {
    const std::optional<Quantity>& own = after_copy_node[static_cast<std::size_t>(k)];
    const bool has_slot =
        std::find(kAfterCopyKernels.begin(), kAfterCopyKernels.end(), k) != kAfterCopyKernels.end();
    return own && has_slot ? own->si() : kernel_after_copy_node.si();
  }
  // time, per merge kernel type (correction, a2a_pack, a2a_combine; optional in a profile file as
  // launch.pdl_saving_<type>): how much less the kernel takes under PDL than graph-replayed when the kernel
  // before it on its stream lets it launch early (dcpsim's kernels trigger their dependents as they start):
  // an emulated step's later ranks, each after the previous rank's kernel of its kind, and the A2A pack after
  // its rank's attention. Measured on steps (`hw run --launch pdl` against the same scenarios
  // graph-replayed); a three-call sweep of one kernel (`hw sweep --pdl`) shows less for the pack. Without it
  // the " pdl" kernel tables price those kernels, else the graph-replayed ones do; a saving of 0 prices them
  // graph-replayed. Indexed by MemoryKernel; only kPdlChainKernels' entries are read, written or validated.
  std::array<std::optional<Quantity>, kAllMemoryKernels.size()> pdl_saving;
  // time, optional (launch.pdl_saving_attention): the same for dcpsim's attention kernels (launched with PDL;
  // FlashInfer's are not), an emulated step's later ranks each right after the previous rank's attention:
  // the kernel's launch and block scheduling overlap the previous one's tail (its blocks wait for it before
  // any work). Fitted on PDL steps; absent: 0.
  std::optional<Quantity> pdl_saving_attention;
  // time, optional: what a CUDA event pair around one phase adds to that phase as `hw run --timing events`
  // times it (the event nodes and the launch gap they expose), on top of the phase's kernels. validate and
  // calibrate add it to every phase of event-timed traces (the November two-GPU runs); absent: 0.
  std::optional<Quantity> event_pair;
  // time, optional: what separates two consecutive event-timed phases on the GPU (the end event of one and
  // the start event of the next, which CUPTI-timed and untimed steps do not run): an event-timed step holds
  // it once per phase boundary beyond its phases; absent: 0
  std::optional<Quantity> event_gap;
  bool operator==(const LaunchSpec&) const = default;
};

// A memory-bound kernel moving `bytes` takes floor + bytes / (hbm_bandwidth_measured × efficiency(bytes)),
// efficiency(bytes) = efficiency_max × bytes / (bytes + half_efficiency_bytes).
struct MemoryKernelSpec {
  Quantity hbm_efficiency_max;     // ratio in (0, 1]
  Quantity half_efficiency_bytes;  // bytes at which efficiency reaches half its maximum
  Quantity floor;                  // time: fixed cost of any small kernel (prologue, tail, write-back)
  bool operator==(const MemoryKernelSpec&) const = default;
};

// The shared numbers (attention's bandwidth share, the split-KV combine, and every merge kernel without its
// own) plus optional per-kernel-type numbers: the runner's merge kernels differ from each other by 2-4x in
// floor and efficiency, which one shared set cannot express.
struct KernelSpec : MemoryKernelSpec {
  std::array<std::optional<MemoryKernelSpec>, kAllMemoryKernels.size()> per_type;  // indexed by MemoryKernel
  // ratio (>= 0), optional (absent: 0): what an emulated step's A2A pack and combine pay, as a share of their
  // missed bytes' time at hbm_bandwidth_measured, when the kernels before them (the ranks' attention outputs,
  // the earlier packs, the emulated all-to-all's copies) wrote at least an L2's worth: every line they
  // allocate then evicts a dirty one, whose write-back the tables (measured after a clean eviction) never
  // saw. Fitted by `hw calibrate` on its fit steps (sim/src/step_graph.h).
  std::optional<Quantity> l2_dirty_writeback;
  // The numbers kernel type `k` uses: its own when present, else the shared ones.
  const MemoryKernelSpec& of(MemoryKernel k) const {
    const auto& own = per_type[static_cast<std::size_t>(k)];
    return own ? *own : *this;
  }
  bool operator==(const KernelSpec&) const = default;
};

// Split-KV decode attention (FlashDecoding / FlashMLA style), modelled by work units and SM waves.
// vLLM's Triton MLA decode kernel (TRITON_MLA: `_fwd_grouped_kernel_stage1` and its split-KV reduce, as vLLM
// PR #40750 runs it), where the profile's attention is that kernel rather than a FlashMLA-like persistent
// one: a grid of rows x head groups of block_h query heads x KV splits, rows fastest; every head group
// streams its split's KV itself (the head groups of one KV read are separate CTAs), and every CTA's MMA tile
// is at least mma_min_heads rows tall. Splits: vLLM's rule for a decode bucket, the largest power of two <=
// split_target / (rows x ceil(H / 8)), at most max_splits; with sm120_fp8_table = 1 and an fp8 KV cache, PR
// #40750's tuned table for SM120 picks block_h and the splits where it has the head count (its max_model_len
// 262144 bucket). Its compute rate is its own (tensor_rate): attention.tensor_rate stays the rate of the
// other analytic kernels.
struct TritonMlaSpec {
  Quantity block_h;          // count: query heads per CTA when no tuned entry applies (vLLM: 8)
  Quantity mma_min_heads;    // count: the MMA tile's rows (mma.sync m16: 16); fewer heads still cost 16
  Quantity split_target;     // count: vLLM's CUDA-graph split heuristic's CTA target (576)
  Quantity max_splits;       // count: MAX_NUM_KV_SPLITS (64)
  Quantity ctas_per_sm;      // count: CTAs resident per SM at once
  Quantity sm120_fp8_table;  // count: 1 = PR #40750's SM120 fp8 tuned table applies, 0 = not
  Quantity tensor_rate;      // FLOP/s: the dense MMA rate its CTAs reach with every SM busy (per SM: / SMs)
  bool operator==(const TritonMlaSpec&) const = default;
};

struct AttentionSpec {
  Quantity work_unit_tokens;   // count: split granularity in KV tokens (a split is a multiple of this)
  Quantity ctas_per_sm;        // count: work units resident per SM at once
  Quantity heads_per_cta;      // count: query heads one work unit handles when the KV is shared (MLA)
  Quantity cta_overhead;       // time: fixed cost per work unit (Q load, softmax epilogue, partial write)
  Quantity max_cta_bandwidth;  // bandwidth: the most one work unit can stream (bytes in flight / HBM latency)
  Quantity floor;              // time: fixed cost of the attention kernel (setup before any unit starts)
  // compute rate (FLOP/s): the dense tensor-core rate the kernel reaches with every SM busy; a unit gets at
  // most one SM's share, so a wave lasts at least its largest unit's FLOPs at that share (the roofline)
  Quantity tensor_rate;
  // bandwidth: the most one block of dcpsim's own attention kernel streams, which it reaches once few others
  // run beside it (rows of unequal length: the long rows' blocks outlast the rest). Fitted on steps of mixed
  // row lengths; absent, such rows are read off the tables at their mean length.
  std::optional<Quantity> dcpsim_block_bandwidth;
  // The attention kernel is vLLM's Triton MLA (see TritonMlaSpec); absent: the persistent-CTA model above.
  std::optional<TritonMlaSpec> triton_mla;
  bool operator==(const AttentionSpec&) const = default;
};

// NCCL latencies for one algorithm × protocol (NCCL src/graph/tuning.cc baseLat and hwLat).
struct NcclLatency {
  Quantity base_latency;        // time, once per collective
  Quantity nvlink_hop_latency;  // time, per step over NVLink
  Quantity net_hop_latency;     // time, per step over the inter-node fabric (added to internode.latency)
  bool operator==(const NcclLatency&) const = default;
};

struct NcclSpec {
  std::array<NcclLatency, 3> ring;              // indexed by Protocol
  std::array<NcclLatency, 3> tree;              // indexed by Protocol (all-reduce only)
  std::array<Quantity, 3> protocol_efficiency;  // ratio of link bandwidth each protocol delivers
  Quantity ll_max_bus_bandwidth;                // bandwidth cap on LL (NCCL llMaxBws)
  Switch nvls_enabled;                          // NVLink SHARP (multicast) collectives available
  Quantity nvls_latency;                        // time, whole NVLS collective
  Quantity nvls_bandwidth_efficiency;           // ratio of link bandwidth NVLS delivers
  Quantity p2p_base_latency;                    // time, one send/recv round (all-to-all)
  Quantity p2p_ll_threshold;                    // bytes per peer up to which send/recv uses LL
  // time, one send/recv round with the Simple protocol (above the LL threshold: its larger setup shows as a
  // plateau in nccl-tests' all-to-all); optional in a file, absent: p2p_base_latency
  std::optional<Quantity> p2p_simple_base_latency;
  // What a collective costs inside a decode step beyond nccl-tests' steady state (back-to-back calls), all
  // optional in a file (absent: 0). in_step_graph / in_step_eager: time added to a collective issued after a
  // kernel (no back-to-back pipelining of its launch and setup) in a CUDA graph / eagerly; eager_host_issue:
  // the host time of one eager NCCL call, which the GPU waits for when nothing is queued ahead of it (a
  // step's first collective); arrival_skew_graph / _eager: how far apart the ranks reach a step's first
  // collective (each waits there for the last; the simulator spreads the ranks evenly over this span).
  std::optional<Quantity> in_step_graph;
  std::optional<Quantity> in_step_eager;
  std::optional<Quantity> eager_host_issue;
  std::optional<Quantity> arrival_skew_graph;
  std::optional<Quantity> arrival_skew_eager;
  bool operator==(const NcclSpec&) const = default;
};

// Direct (one-shot) delivery: flags written over NVLink and polled by the owner.
struct SignalSpec {
  Quantity flag_write_latency;  // time: a store to a peer's flag becoming visible there
  Quantity poll_interval;       // time: between two reads of the flag by the waiting owner
  Quantity epoch_handshake;     // time: per step, flipping the double-buffer epoch
  bool operator==(const SignalSpec&) const = default;
};

struct HardwareProfile {
  std::string name;         // e.g. "h200-sxm"
  std::string description;  // one line
  GpuSpec gpu;
  TopologySpec topology;
  NvlinkSpec nvlink;
  InterNodeSpec internode;
  LaunchSpec launch;
  KernelSpec kernel;
  AttentionSpec attention;
  NcclSpec nccl;
  SignalSpec signal;
  // Measured kernel tables (kernel_table.h), in the order the file lists them; `tables` in the file: a path
  // relative to the profile file (or to models/ for a built-in) or an inline table object.
  std::vector<KernelTables> tables;
  // Measured collective tables (comm_table.h), in the order the file lists them (`comm_tables`: paths,
  // inline table objects, or {"path": ..., "borrowed": why} for a table of another GPU of the same
  // interconnect). Collectives they cover are priced from them (cost_collectives_price.h).
  std::vector<CommTables> comm_tables;
  bool operator==(const HardwareProfile&) const = default;
};

// The built-in profile names, sorted: "b200", "gb200-nvl72", "h100-sxm", "h200-sxm", "rtx-pro-6000".
const std::vector<std::string>& builtin_profile_names();
// The embedded JSON text of a built-in profile; throws InputError listing the known names.
std::string_view builtin_profile_json(std::string_view name);

// A built-in profile's topology.gpus_per_nvlink_domain, read without loading its tables (the simulator
// reserves a platform for each built-in domain size when it starts).
int builtin_nvlink_domain_size(std::string_view name);

// A built-in name or a path to a JSON file. Errors name the file and the field, e.g.
// "h200.json: nvlink.bandwidth.value: expected a positive number, got -3"; unknown and missing fields are
// errors.
HardwareProfile load_profile(std::string_view name_or_path);
// The files load_profile(name_or_path) reads: none for a built-in name; else the profile file and each kernel
// or communication table file it lists that exists beside it (a listed name that does not falls back to the
// embedded table). Never
// throws: a file that cannot be parsed is listed alone (load_profile then says what is wrong with it).
std::vector<std::filesystem::path> profile_files(std::string_view name_or_path);
// Parses profile JSON; `origin` (a file name or "built-in h200-sxm") prefixes every error message.
// A `tables` entry that is a path is read relative to the directory of `origin` when origin names a file.
HardwareProfile parse_profile(std::string_view json_text, std::string_view origin);
// The same, with the directory that relative table paths are resolved against ("" for built-ins: the embedded
// models/tables/*.json are looked up by file name).
HardwareProfile parse_profile(std::string_view json_text, std::string_view origin,
                              const std::string& table_dir, bool builtin);
// The same format load_profile reads; parse_profile(to_json(p), ...) == p for any valid profile.
std::string to_json(const HardwareProfile& p);
// Checks every field of a profile built or edited in code (calibration) the way parse_profile does;
// throws InputError naming `origin` and the field.
void validate_profile(const HardwareProfile& p, std::string_view origin);

// Whether `p` describes the GPU CUDA names `device`: equal (ignoring case) to one of gpu.devices, or one of
// the device name and gpu.name starts with the other at a word boundary ("NVIDIA H200" measured, "NVIDIA H200
// SXM" in the profile; "NVIDIA H20" does not describe "NVIDIA H200"). Kernel and communication tables load by
// it.
bool profile_describes_device(const HardwareProfile& p, std::string_view device);

// NCCL parameters for one algorithm × protocol (ring or tree); throws InputError for kNvls / kP2p.
const NcclLatency& nccl_latency(const HardwareProfile& p, Algorithm a, Protocol proto);

}  // namespace dcpsim::models
