// Kernel sweeps (sweep.h): every grid point is one operation of hw/ops/ (the `hw bench` operations), captured
// in a CUDA graph of one call and replayed `reps` times; each replay is timed on the GPU timeline (first
// activity start to last activity end of that replay) or, without CUPTI, with CUDA events around it.
#include "dcpsim/hw/sweep.h"
#include "dcpsim/dates.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "bench_op.h"
#include "correct_bench.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/models/cost_kernels.h"
#include "device_buffer.h"
#include "gpu_timeline.h"
#include "ops.h"
#include "sweep_grid.h"
#include "timing.h"

namespace dcpsim::hw {
namespace {

using models::TableKernel;

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { DCPSIM_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
};

struct Graph {
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

// What runs before each replay, outside its timeline tag (so not part of its time): optionally every SM busy
// for a while, then either the cold inputs' eviction from L2, a read of twice the L2, or a touch of one word
// per 64 KiB of scratch (address translations gone, inputs still in L2). Small inputs rotated over a few sets
// still fit in L2 together (8 sets of a 1 MB correction input are 8 MB of a 63 MB L2); this does not. A read,
// not a memset: in an emulated step what went through the L2 in between is the later ranks' attention reading
// their KV caches, which leaves clean lines; a memset leaves dirty ones, and every miss of the timed kernel
// then waits for a write-back first (tables made so priced an emulated correction 25-60% over what the steps
// measured).
struct L2Flush {
  DeviceBuffer scratch, sink;
  bool pages = false;               // touch one 16-byte word per 64 KiB instead of reading everything
  long long busy_ns = 0;            // first keep every SM busy this long
  DeviceBuffer copy_from, copy_to;  // then a device-to-device copy between these (copy engine)
  bool copy_in_graph = false;       // the copy is a node of the call's graph instead (copy() at capture)
  bool evicts = false;              // it evicts the L2 (cold inputs)
  DeviceBuffer dirty;               // last, a memset of these bytes: dirty lines in L2
  unsigned char dirty_value = 0;
  void copy(cudaStream_t stream) {
    if (copy_to.bytes() > 0)
      DCPSIM_CUDA(
          cudaMemcpyAsync(copy_to.get(), copy_from.get(), copy_to.bytes(), cudaMemcpyDeviceToDevice, stream));
  }
  void operator()(cudaStream_t stream) {
    if (busy_ns > 0) ops::launch_busy(busy_ns, sink.as<unsigned>(), stream);
    if (!copy_in_graph) copy(stream);
    if (dirty.bytes() > 0)  // a new value each time: the lines are written, not left as they were
      DCPSIM_CUDA(cudaMemsetAsync(dirty.get(), ++dirty_value, dirty.bytes(), stream));
    if (scratch.bytes() == 0) return;
    if (pages)
      ops::launch_touch_pages(scratch.get(), scratch.bytes(), std::size_t{64} << 10, sink.as<unsigned>(),
                              stream);
    else
      ops::launch_read_through(scratch.get(), scratch.bytes(), sink.as<unsigned>(), stream);
  }
};

// Cold: the read of twice the L2. Otherwise, with `prelude` bytes, a kernel touching every 64 KiB of that
// much scratch just before the call: the inputs stay in L2, their address translations do not.
L2Flush make_l2_flush(bool cold, std::int64_t prelude, double busy_us, std::int64_t copy, bool copy_in_graph,
                      int device) {
  L2Flush f;
  f.copy_in_graph = copy_in_graph;
  f.busy_ns = static_cast<long long>(busy_us * 1e3);
  if (f.busy_ns > 0) f.sink = DeviceBuffer(sizeof(unsigned));
  if (copy > 0) {
    f.copy_from = DeviceBuffer(static_cast<std::size_t>(copy));
    f.copy_to = DeviceBuffer(static_cast<std::size_t>(copy));
    DCPSIM_CUDA(cudaMemset(f.copy_from.get(), 0, f.copy_from.bytes()));
  }
  if (!cold && prelude <= 0) return f;
  int l2 = 0;
  DCPSIM_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  f.pages = !cold;
  f.evicts = cold;
  f.scratch = DeviceBuffer(cold ? 2 * static_cast<std::size_t>(l2) : static_cast<std::size_t>(prelude));
  f.sink = DeviceBuffer(sizeof(unsigned));
  DCPSIM_CUDA(cudaMemset(f.scratch.get(), 1, f.scratch.bytes()));  // written once, clean after the first read
  DCPSIM_CUDA(cudaDeviceSynchronize());
  return f;
}

// Per-replay times of one operation, in ns.
// `rotate`: replays cycle through the operation's input sets (cold inputs, as a step's KV cache is);
// otherwise every replay reads set 0, which stays in L2 when it fits (as a merge kernel's inputs do in a
// step, written by the kernel just before it) unless `flush` evicts it before each replay. `warm_lse`: after
// the eviction a correction's LSEs are read back (what the emulated LSE all-gather leaves in L2).
// `pdl_chain` > 0: the graph holds that many calls launched with PDL (a call after others of its kind, as an
// emulated step's later ranks run in a chain; the first call of a graph has nothing to wait for), on sets
// ..., 1, 0, and the last is timed from its predecessor's end.
std::vector<double> time_point(ops::BenchOp& op, bool rotate, int warmup, int reps, GpuTimeline* timeline,
                               cudaStream_t stream, L2Flush& flush, bool warm_lse = false,
                               int pdl_chain = 0) {
  const bool pdl = pdl_chain > 0;
  if (rotate && pdl) throw std::logic_error("time_point: --pdl chains one input set per call, never rotated");
  static_assert(kPdlColdChainMax == ops::kMinInputSets);
  if (pdl && (pdl_chain < 2 || (flush.evicts && pdl_chain > ops::kMinInputSets)))
    throw std::logic_error("time_point: a PDL chain of " + std::to_string(pdl_chain) + " calls");
  // Set 0 is timed. Under PDL with cold inputs its predecessors read sets ..., 2, 1 (each with its own LSEs),
  // all evicted before the replay; with warm ones they read set 0 too, so that it stays in L2 whatever its
  // size.
  const int calls = pdl ? pdl_chain : 1;
  const bool own_sets = pdl && flush.evicts;
  const auto before = [&] {
    flush(stream);
    if (!warm_lse) return;
    for (int set = 0; set < (own_sets ? calls : 1); ++set)
      if (const auto lse = ops::correct_bench_lse(op, set))
        ops::launch_read_through(lse->first, lse->second, flush.sink.as<unsigned>(), stream);
  };

  for (int i = 0; i < std::max(warmup, 1); ++i) op.launch(rotate ? i : 0, stream);  // module load, plans
  wait_stream(stream, 120, nullptr);
  // One graph per input set.
  std::vector<Graph> graphs(rotate ? 8 : 1);
  for (std::size_t g = 0; g < graphs.size(); ++g) {
    cudaGraph_t graph = nullptr;
    DCPSIM_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    if (flush.copy_in_graph) flush.copy(stream);
    {
      ops::PdlScope scope(pdl);
      // The predecessors the timed call overlaps: cold, each on its own input set (as in a step the previous
      // ranks' kernels work on their own buffers), every set evicted before the replay; warm, on the timed
      // call's set.
      for (int c = calls - 1; c >= 0; --c) op.launch(static_cast<int>(g) + (own_sets ? c : 0), stream);
    }
    DCPSIM_CUDA(cudaStreamEndCapture(stream, &graph));
    DCPSIM_CUDA(cudaGraphInstantiate(&graphs[g].exec, graph, 0));
    cudaGraphDestroy(graph);
  }
  for (int i = 0; i < warmup; ++i) DCPSIM_CUDA(cudaGraphLaunch(graphs[i % graphs.size()].exec, stream));
  wait_stream(stream, 120, nullptr);
  if (timeline != nullptr) timeline->take();  // drop the warm-up's activities

  std::vector<double> t;
  if (timeline == nullptr && (flush.copy_in_graph || pdl))
    throw RuntimeError(std::string("kernel sweep: ") + (pdl ? "--pdl" : "a prelude copy inside the graph") +
                       " needs the GPU timeline (CUPTI) to time the kernels apart");
  if (timeline == nullptr) {
    cudaEvent_t a = nullptr, b = nullptr;
    DCPSIM_CUDA(cudaEventCreate(&a));
    DCPSIM_CUDA(cudaEventCreate(&b));
    for (int r = 0; r < reps; ++r) {
      before();
      DCPSIM_CUDA(cudaEventRecord(a, stream));
      DCPSIM_CUDA(cudaGraphLaunch(graphs[r % graphs.size()].exec, stream));
      DCPSIM_CUDA(cudaEventRecord(b, stream));
      wait_stream(stream, 120, nullptr);
      float ms = 0;
      DCPSIM_CUDA(cudaEventElapsedTime(&ms, a, b));
      t.push_back(ms * 1e6);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t;
  }
  for (int r = 0; r < reps; ++r) {
    before();  // untagged: not part of the replay's span
    TimelineTag tag(timeline, timeline_tag(r, 0, 1));
    DCPSIM_CUDA(cudaGraphLaunch(graphs[r % graphs.size()].exec, stream));
    // One replay at a time: the next one's launch must not overlap this one's kernels.
    wait_stream(stream, 120, nullptr);
  }
  std::vector<std::vector<GpuActivity>> by_rep(reps);
  for (GpuActivity& a : timeline->take()) {
    if (a.tag == 0 || (flush.copy_in_graph && a.kind != GpuActivity::Kind::kKernel)) continue;
    const int r = tag_rep(a.tag);
    if (r >= 0 && r < reps) by_rep[r].push_back(std::move(a));
  }
  std::vector<std::uint64_t> first(reps, UINT64_MAX), last(reps, 0);
  for (int r = 0; r < reps; ++r) {
    std::vector<GpuActivity>& v = by_rep[r];
    std::size_t from = 0;
    std::uint64_t busy = 0;  // end of the predecessors' activities
    if (pdl) {
      // Under PDL each kernel is scheduled only once its predecessor has started, so in start order the
      // earlier calls' activities come first (every merge kernel launches one kernel whose first statement is
      // pdl_begin; an operation with a kernel that does not would break this); the last call is charged
      // from max(start, their end), as the runner charges a phase (timing.cc).
      if (v.size() % static_cast<std::size_t>(calls) != 0) continue;
      std::sort(v.begin(), v.end(), [](const GpuActivity& x, const GpuActivity& y) {
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns < y.end_ns;
      });
      from = v.size() / calls * (calls - 1);
      for (std::size_t i = 0; i < from; ++i) busy = std::max(busy, v[i].end_ns);
    }
    for (std::size_t i = from; i < v.size(); ++i) {
      first[r] = std::min(first[r], std::max(v[i].start_ns, std::min(busy, v[i].end_ns)));
      last[r] = std::max(last[r], v[i].end_ns);
    }
  }
  for (int r = 0; r < reps; ++r) {
    if (last[r] > first[r]) t.push_back(double(last[r] - first[r]));
  }
  if (t.size() * 2 < static_cast<std::size_t>(reps))
    throw RuntimeError("kernel sweep: the GPU timeline placed " + std::to_string(t.size()) + " of " +
                       std::to_string(reps) + " replays (CUPTI lost records?)");
  return t;
}

// The NVIDIA kernel driver's version ("580.159.04"), or "" where /proc does not say.
std::string driver_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(f, line)) return "";
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    if (std::count(word.begin(), word.end(), '.') >= 1 && std::isdigit(static_cast<unsigned char>(word[0])) &&
        word.find_first_not_of("0123456789.") == std::string::npos)
      return word;
  }
  return "";
}

}  // namespace

models::KernelTables run_kernel_sweep(const KernelSweepConfig& c,
                                      const std::function<void(const SweepProgress&)>& progress) {
  detail::check_grid(c);
  if (c.attention == AttentionImpl::kFlashInfer && !built_with_flashinfer())
    throw InputError("kernel sweep: --attention flashinfer: " + flashinfer_unsupported({}));
  const bool fp8 = c.kv_dtype == models::DType::kFP8E4M3;
  if (fp8 && !built_with_flashinfer())
    throw InputError("kernel sweep: --kv-dtype fp8: " + flashinfer_unsupported({}));
  if (device_count() <= c.device) throw RuntimeError("no CUDA device " + std::to_string(c.device) + " here");
  // An fp8 cache where FlashInfer's kernels do not run would leave every point a hole: refused up front.
  for (const SweepGeometry& g : c.geometries) {
    if (!fp8 || ops::flashinfer_runs_on(g.mla ? ops::Geometry::kMla576 : ops::Geometry::kGqa128, c.device))
      continue;
    const DeviceInfo info = device_info(c.device);
    throw InputError("kernel sweep: --kv-dtype fp8: device " + std::to_string(c.device) + " (" + info.name +
                     ", sm_" + std::to_string(info.cc_major) + std::to_string(info.cc_minor) +
                     ") is not a GPU FlashInfer's FP8-KV " +
                     (g.mla ? "MLA kernel runs on (sm_90a)" : "decode kernel runs on (sm_90, sm_100)"));
  }
  std::vector<std::string> skipped;
  const std::vector<detail::SweepPoint> points = detail::grid_points(c, &skipped);
  if (points.empty()) throw InputError("kernel sweep: every grid point was skipped");
  DCPSIM_CUDA(cudaSetDevice(c.device));

  std::string why;
  std::unique_ptr<GpuTimeline> timeline = GpuTimeline::start(&why);
  if ((c.merge_prelude_copy_in_graph || c.pdl) && !timeline)  // before any point is timed
    throw RuntimeError(std::string("kernel sweep: ") + (c.pdl ? "--pdl" : "a prelude copy inside the graph") +
                       " needs the GPU timeline to time the kernels apart (CUPTI: " + why + ")");

  models::KernelTables out;
  const DeviceInfo info = device_info(c.device);
  const SoftwareVersions v = software_versions();
  out.provenance.device = info.name;
  out.provenance.driver = driver_version();
  if (out.provenance.driver.empty()) out.provenance.driver = "CUDA " + v.cuda_driver;
  out.provenance.cuda = v.cuda_runtime;
  out.provenance.nccl = "";  // no collective is swept
  out.provenance.clocks =
      std::string("as found (application clocks not locked); timed ") +
      (timeline ? "on the GPU timeline (CUPTI" +
                      std::string(timeline->hardware_timestamps() ? ", hardware timestamps)" : ")")
                : "with CUDA events around graph replays (CUPTI: " + why + ")");
  if (c.attention_prelude_write_bytes > 0)  // the keys do not say it: the provenance does
    out.provenance.clocks += "; before each attention call a memset of " +
                             std::to_string(c.attention_prelude_write_bytes) +
                             " bytes left dirty in L2 (--attention-prelude-write)";
  if (fp8)
    out.provenance.clocks +=
        "; KV cache fp8 e4m3 with one per-tensor scale 2^-8 (query and output bf16), FlashInfer's FP8-KV "
        "kernels";
  out.provenance.date = c.date.empty() ? today_utc() : c.date;
  out.provenance.command = c.command.empty() ? "dcpsim hw sweep" : c.command;

  std::map<std::pair<TableKernel, std::string>, std::size_t> index;
  Stream stream;
  L2Flush flush = make_l2_flush(c.cold_merge_inputs, c.merge_prelude_bytes, c.merge_prelude_busy_us,
                                c.merge_prelude_copy_bytes, c.merge_prelude_copy_in_graph, c.device);
  L2Flush attention_prelude;  // none, or the dirty lines of --attention-prelude-write
  if (c.attention_prelude_write_bytes > 0) {
    attention_prelude.dirty = DeviceBuffer(static_cast<std::size_t>(c.attention_prelude_write_bytes));
    DCPSIM_CUDA(cudaMemset(attention_prelude.dirty.get(), 0, attention_prelude.dirty.bytes()));
  }
  const int total = static_cast<int>(points.size());
  int done = 0;
  for (const detail::SweepPoint& p : points) {
    SweepProgress pr{++done, total, p.label, false, ""};
    std::unique_ptr<ops::BenchOp> op;
    std::vector<double> t, t_pdl;
    try {
      if (p.op == "attention") op = ops::make_attention_bench(p.shape, c.seed);
      if (p.op == "correct") op = ops::make_correct_bench(p.shape, c.seed);
      if (p.op == "a2a-pack") op = ops::make_a2a_pack_bench(p.shape, c.seed);
      if (p.op == "a2a-combine") op = ops::make_a2a_combine_bench(p.shape, c.seed);
      const bool attention = p.kernel == TableKernel::kAttention;
      t = time_point(*op, attention, c.warmup, c.reps, timeline.get(), stream.s,
                     attention ? attention_prelude : flush, !attention && c.warm_lse);
      if (!p.pdl_key.empty())
        t_pdl = time_point(*op, false, c.warmup, c.reps, timeline.get(), stream.s, flush, c.warm_lse,
                           c.pdl_chain);
    } catch (const InputError& e) {  // a shape the kernel refuses: a hole in the grid, said as such
      pr.skipped = true;
      pr.why = e.what();
      if (progress) progress(pr);
      continue;
    }
    op.reset();
    const auto record = [&](const std::string& key, const std::vector<double>& times) {
      const auto [it, fresh] = index.try_emplace({p.kernel, key}, out.tables.size());
      if (fresh) {
        models::KernelTable table;
        table.kernel = p.kernel;
        table.key = key;
        out.tables.push_back(std::move(table));
      }
      models::TablePoint tp;
      tp.at = p.at;
      tp.median_ns = median_of(times);
      tp.samples = static_cast<int>(times.size());
      tp.min_ns = *std::min_element(times.begin(), times.end());
      tp.max_ns = *std::max_element(times.begin(), times.end());
      out.tables[it->second].points.push_back(tp);
    };
    record(p.key, t);
    if (!p.pdl_key.empty()) record(p.pdl_key, t_pdl);
    if (progress) progress(pr);
  }
  for (models::KernelTable& t : out.tables) t.finalize("kernel sweep " + t.key);
  return out;
}

}  // namespace dcpsim::hw
