#pragma once
// The GPU timeline of a measured run, from CUPTI's Activity API: every kernel (dcpsim's and NCCL's), memcpy
// and memset with its GPU start and end, the way Nsight Systems and Kineto record them. CUPTI is loaded at
// run time (libcupti.so.13 from the library path, $DCPSIM_CUPTI_LIB, or the CUDA toolkit), so a runner
// without it still runs and falls back to CUDA events around phases.
//
// Activities are tagged with what the runner was enqueueing when it launched them (repetition, rank, phase
// slot) through CUPTI's external correlation ids, one stack per host thread. Eager launches carry their tag;
// kernels replayed from a CUDA graph share the graph launch's correlation id, so graph repetitions are
// matched by position against the eager pass that preceded the capture (same code, same order per device).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dcpsim::hw {

struct GpuActivity {
  enum class Kind { kKernel, kMemcpy, kMemset };
  Kind kind = Kind::kKernel;
  std::string name;                        // demangled kernel name, or "memcpy DtoD" / "memset"
  std::uint64_t start_ns = 0, end_ns = 0;  // CUPTI timestamps (one clock for every device of the process)
  std::uint32_t device = 0, stream = 0, correlation = 0;
  std::uint64_t graph_node = 0;
  int grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int registers = 0, shared_bytes = 0;
  std::uint64_t bytes = 0;
  std::uint64_t tag = 0;  // external correlation id (0: none seen)
};

// The tag of work enqueued for (repetition, rank, slot); slot 0 is the step's prologue, slot i+1 phase i.
inline std::uint64_t timeline_tag(int rep, int rank, int slot) {
  return (std::uint64_t(rep + 1) << 32) | (std::uint64_t(rank & 0xffff) << 16) | std::uint64_t(slot & 0xffff);
}
inline int tag_rep(std::uint64_t t) {
  return static_cast<int>(t >> 32) - 1;
}
inline int tag_rank(std::uint64_t t) {
  return static_cast<int>((t >> 16) & 0xffff);
}
inline int tag_slot(std::uint64_t t) {
  return static_cast<int>(t & 0xffff);
}

class GpuTimeline {
 public:
  // Loads CUPTI and starts recording kernels, memcpys and memsets. Returns null (and `why`) when CUPTI cannot
  // be loaded or refuses (another profiler attached, say). One recorder per process at a time.
  static std::unique_ptr<GpuTimeline> start(std::string* why);
  ~GpuTimeline();  // stops recording
  GpuTimeline(const GpuTimeline&) = delete;
  GpuTimeline& operator=(const GpuTimeline&) = delete;

  // Tags the work the calling thread enqueues until pop().
  void push(std::uint64_t tag);
  void pop();

  // Flushes CUPTI and returns every activity recorded since start() (or the last take()), with the tags of
  // eager launches resolved. `dropped` counts records CUPTI reported lost.
  std::vector<GpuActivity> take(std::uint64_t* dropped = nullptr);

  std::string library() const;  // the CUPTI library file loaded
  // Kernel timestamps from the GPU's Hardware Event System (Blackwell); otherwise CUPTI's software
  // timestamps, which add a little idle time around each kernel (docs/hw/timeline.md).
  bool hardware_timestamps() const { return hw_trace_; }

 private:
  GpuTimeline() = default;
  bool hw_trace_ = false;
};

// RAII tag for one enqueue (a null timeline does nothing).
class TimelineTag {
 public:
  TimelineTag(GpuTimeline* t, std::uint64_t tag) : t_(t) {
    if (t_) t_->push(tag);
  }
  ~TimelineTag() {
    if (t_) t_->pop();
  }
  TimelineTag(const TimelineTag&) = delete;
  TimelineTag& operator=(const TimelineTag&) = delete;

 private:
  GpuTimeline* t_;
};

}  // namespace dcpsim::hw
