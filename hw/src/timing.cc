#include "timing.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "cuda_check.h"
#include "dcpsim/error.h"

namespace dcpsim::hw {

namespace {
thread_local int t_rep = 0;
}  // namespace

int current_rep() {
  return t_rep;
}

void Samples::resize(int ranks, std::size_t phases) {
  duration.assign(ranks, std::vector<std::vector<double>>(phases));
  offset.assign(ranks, std::vector<std::vector<double>>(phases));
  gap.assign(ranks, std::vector<std::vector<double>>(phases));
  rank_step.assign(ranks, {});
  outer_step.assign(ranks, {});
  stamps.assign(ranks, {});
  phase_origin.assign(ranks, {});
  stamp_origin.assign(ranks, 0.0);
}

void Samples::collect(const RankState& r) {
  float ms = 0;
  DCPSIM_CUDA(cudaEventElapsedTime(&ms, r.ev_step_begin, r.ev_step_end));
  outer_step[r.rank].push_back(ms * 1e6);
  if (timing == Timing::kEvents) {
    const std::size_t n = r.ev_begin.size();
    for (std::size_t i = 0; i < n; ++i) {
      DCPSIM_CUDA(cudaEventElapsedTime(&ms, r.ev_begin[i], r.ev_end[i]));
      duration[r.rank][i].push_back(ms * 1e6);
      DCPSIM_CUDA(cudaEventElapsedTime(&ms, r.ev_begin[0], r.ev_begin[i]));
      offset[r.rank][i].push_back(ms * 1e6);
      double g = 0;
      if (i > 0) {
        DCPSIM_CUDA(cudaEventElapsedTime(&ms, r.ev_end[i - 1], r.ev_begin[i]));
        g = std::max(0.0, ms * 1e6);  // row-stream's combine starts before attention ends
      }
      gap[r.rank][i].push_back(g);
    }
    DCPSIM_CUDA(cudaEventElapsedTime(&ms, r.ev_begin[0], r.ev_end[n - 1]));
    rank_step[r.rank].push_back(ms * 1e6);
    phase_origin[r.rank].push_back(0.0);
  } else if (timing == Timing::kStep) {
    rank_step[r.rank].push_back(outer_step[r.rank].back());
    phase_origin[r.rank].push_back(0.0);
  }
  if (r.stamps.get() != nullptr)
    stamps[r.rank] = download<unsigned long long>(r.stamps, r.stamps.bytes() / 8);
}

namespace {

struct Slotted {
  const GpuActivity* a;
  int rep, rank, slot;
};

bool same_kernel(const GpuActivity& a, const GpuActivity& b) {
  return a.kind == b.kind && a.name == b.name;
}

// Pairs each replayed activity with an eager one: in order (the eager pass with its one-time activities left
// out), or, when work of several streams interleaves differently in the replay (row-stream's concurrent
// ranks), each with the first unused eager activity of the same kind and name. Returns how many replayed
// activities found a partner.
std::size_t pair_replay(const std::vector<const GpuActivity*>& eager,
                        const std::vector<const GpuActivity*>& seq,
                        std::vector<std::pair<const GpuActivity*, const GpuActivity*>>& pairs) {
  pairs.clear();
  std::size_t j = 0;
  for (std::size_t i = 0; i < eager.size() && j < seq.size(); ++i)
    if (same_kernel(*eager[i], *seq[j])) pairs.emplace_back(seq[j++], eager[i]);
  if (j == seq.size()) return j;
  pairs.clear();
  std::vector<bool> used(eager.size(), false);
  for (j = 0; j < seq.size(); ++j) {
    std::size_t i = 0;
    while (i < eager.size() && (used[i] || !same_kernel(*eager[i], *seq[j]))) ++i;
    if (i == eager.size()) return j;
    used[i] = true;
    pairs.emplace_back(seq[j], eager[i]);
  }
  return j;
}

}  // namespace

void Samples::from_timeline(const StepPlan& p, int rank_count, std::vector<GpuActivity> all, int warmup,
                            int reps) {
  timing = Timing::kCupti;
  std::sort(all.begin(), all.end(), [](const GpuActivity& x, const GpuActivity& y) {
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns < y.end_ns;
  });
  // Under PDL a kernel starts while its predecessor on the stream drains and waits for it on the GPU: a phase
  // is charged from when its stream turned to it, max(start, end of everything before it on the stream).
  std::map<const GpuActivity*, std::uint64_t> own_start;
  {
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> stream_end;
    for (const GpuActivity& a : all) {
      std::uint64_t& busy = stream_end[{a.device, a.stream}];
      own_start[&a] = std::max(a.start_ns, std::min(busy, a.end_ns));
      busy = std::max(busy, a.end_ns);
    }
  }
  // Place every activity: (repetition, rank, slot) from its tag, or by position for graph replays.
  std::vector<Slotted> placed;
  std::map<std::uint32_t, std::vector<const GpuActivity*>> templ;  // device -> eager pass, in GPU order
  std::map<std::pair<std::uint32_t, int>, std::vector<const GpuActivity*>> replays;  // (device, rep)
  std::map<const GpuActivity*, std::pair<int, int>> templ_slot;
  for (const GpuActivity& a : all) {
    if (a.tag == 0) {
      ++unplaced;
      continue;
    }
    const int rep = tag_rep(a.tag), rank = tag_rank(a.tag), slot = tag_slot(a.tag);
    if (slot == kGraphSlot) {
      replays[{a.device, rep}].push_back(&a);
    } else if (rep == kTemplateRep) {
      templ[a.device].push_back(&a);
      templ_slot[&a] = {rank, slot};
    } else {
      placed.push_back({&a, rep, rank, slot});
    }
  }
  // The eager pass may run one-time work the graph does not repeat (a pointer table uploaded on first use):
  // the replay must be the eager pass with such activities left out, in the same order.
  for (const auto& [key, seq] : replays) {
    static const std::vector<const GpuActivity*> kNone;
    const auto t = templ.find(key.first);
    const auto& eager = t == templ.end() ? kNone : t->second;
    std::vector<std::pair<const GpuActivity*, const GpuActivity*>> pairs;
    const std::size_t j = pair_replay(eager, seq, pairs);
    if (j != seq.size())
      throw RuntimeError("GPU timeline: graph replay " + std::to_string(key.second) + " on device " +
                         std::to_string(key.first) + " ran " + std::to_string(seq.size()) +
                         " activities that do not follow the " + std::to_string(eager.size()) +
                         " of the eager pass (" + seq[j]->name + " is not among them); rerun with " +
                         "--timing events");
    for (const auto& [replayed, model] : pairs) {
      const auto [rank, slot] = templ_slot.at(model);
      placed.push_back({replayed, key.second, rank, slot});
    }
  }
  const std::size_t phases = p.phases.size(), nranks = static_cast<std::size_t>(rank_count);
  resize(rank_count, phases);
  timing = Timing::kCupti;
  // [rep][rank][slot] -> (first start, last end); reps are the measured ones.
  struct Span {
    std::uint64_t begin = ~0ull, end = 0;
    bool any() const { return end != 0; }
  };
  std::vector<std::vector<std::vector<Span>>> span(
      reps, std::vector<std::vector<Span>>(nranks, std::vector<Span>(phases + 1)));
  std::vector<std::uint64_t> rep_origin(reps, ~0ull);
  std::vector<std::uint64_t> stamp_start(nranks, 0);  // prologue stamp kernel, last measured rep
  for (const Slotted& s : placed) {
    const int k = s.rep - warmup;
    if (k < 0 || k >= reps || s.rank < 0 || s.rank >= static_cast<int>(nranks) || s.slot < 0 ||
        s.slot > static_cast<int>(phases))
      continue;
    Span& sp = span[k][s.rank][s.slot];
    sp.begin = std::min<std::uint64_t>(sp.begin, own_start.at(s.a));
    sp.end = std::max<std::uint64_t>(sp.end, s.a->end_ns);
    rep_origin[k] = std::min<std::uint64_t>(rep_origin[k], s.a->start_ns);
    if (k == reps - 1 && s.slot == 0 && s.a->name.find("stamp_kernel") != std::string::npos)
      stamp_start[s.rank] = s.a->start_ns;
  }
  for (const Slotted& s : placed) {
    const int k = s.rep - warmup;
    if (k < 0 || k >= reps) continue;
    PlacedActivity pa;
    pa.a = *s.a;
    pa.rep = k;
    pa.rank = s.rank;
    pa.slot = s.slot;
    pa.start_ns = static_cast<double>(s.a->start_ns - rep_origin[k]);
    pa.end_ns = static_cast<double>(s.a->end_ns - rep_origin[k]);
    activities.push_back(std::move(pa));
  }
  std::vector<bool> present(nranks, false);  // MPI: this process's rank only
  for (const Slotted& s : placed)
    if (s.rank >= 0 && static_cast<std::size_t>(s.rank) < nranks) present[s.rank] = true;
  for (std::size_t r = 0; r < nranks; ++r) {
    if (!present[r]) continue;
    for (int k = 0; k < reps; ++k) {
      const auto& sl = span[k][r];
      std::uint64_t first = ~0ull, last = 0;
      for (std::size_t i = 1; i <= phases; ++i)
        if (sl[i].any()) first = std::min(first, sl[i].begin), last = std::max(last, sl[i].end);
      if (last == 0)
        throw RuntimeError("GPU timeline: rank " + std::to_string(r) + " has no GPU activity in repetition " +
                           std::to_string(k) + " (records lost: " + std::to_string(dropped) +
                           "); rerun with --timing events");
      std::uint64_t prev_end = first;
      for (std::size_t i = 0; i < phases; ++i) {
        const Span& x = sl[i + 1];
        const std::uint64_t b = x.any() ? x.begin : prev_end, e = x.any() ? x.end : prev_end;
        duration[r][i].push_back(static_cast<double>(e - b));
        offset[r][i].push_back(static_cast<double>(b - first));
        gap[r][i].push_back(i == 0 || b < prev_end ? 0.0 : static_cast<double>(b - prev_end));
        prev_end = std::max(prev_end, e);
      }
      rank_step[r].push_back(static_cast<double>(last - first));
      phase_origin[r].push_back(static_cast<double>(first - rep_origin[k]));
      if (k == reps - 1 && stamp_start[r] != 0)
        stamp_origin[r] = static_cast<double>(stamp_start[r] - rep_origin[k]);
    }
  }
}

void timeline_samples(const StepPlan& p, const RunConfig& c, GpuTimeline& t, Samples& s) {
  std::uint64_t dropped = 0;
  std::vector<GpuActivity> acts = t.take(&dropped);
  auto outer = std::move(s.outer_step);
  auto stamps = std::move(s.stamps);
  s.dropped = dropped;
  s.hardware_timestamps = t.hardware_timestamps();
  s.from_timeline(p, p.N, std::move(acts), c.warmup, c.reps);
  s.outer_step = std::move(outer);
  s.stamps = std::move(stamps);
}

void wait_stream(cudaStream_t stream, double timeout_s, const std::atomic<bool>* abort) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) throw_cuda(e, "cudaStreamQuery (step)", __FILE__, __LINE__);
    if (abort != nullptr && abort->load()) throw RuntimeError("step abandoned: another rank failed");
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_s)
      throw RuntimeError("step did not finish within " + std::to_string(static_cast<int>(timeout_s)) +
                         " s (a collective or a flag never completed)");
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void run_repetitions(cudaStream_t stream, bool graph, int warmup, int reps, double timeout_s,
                     const std::atomic<bool>* abort, GpuTimeline* timeline, int tag_rank,
                     const std::function<void(bool)>& enqueue, const std::function<void()>& after_any,
                     const std::function<void()>& after_rep) {
  auto step = [&](const std::function<void()>& launch, bool measured) {
    launch();
    wait_stream(stream, timeout_s, abort);
    after_any();
    if (measured) after_rep();
  };
  if (!graph) {
    for (int i = 0; i < warmup + reps; ++i) {
      t_rep = i;
      step([&] { enqueue(false); }, i >= warmup);
    }
    return;
  }
  t_rep = kTemplateRep;                  // the timeline places graph replays by position against this pass
  step([&] { enqueue(false); }, false);  // loads modules and checks the step once before it is captured
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  DCPSIM_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(true);
  } catch (...) {
    cudaStreamEndCapture(stream, &g);
    if (g) cudaGraphDestroy(g);
    throw;
  }
  DCPSIM_CUDA(cudaStreamEndCapture(stream, &g));
  // Node priorities: row-stream's combines are launched at the device's greatest priority.
  const cudaError_t inst = cudaGraphInstantiate(&exec, g, cudaGraphInstantiateFlagUseNodePriority);
  cudaGraphDestroy(g);
  if (inst != cudaSuccess) throw_cuda(inst, "cudaGraphInstantiate", __FILE__, __LINE__);
  try {
    for (int i = 0; i < warmup + reps; ++i)
      step(
          [&] {
            TimelineTag tag(timeline, timeline_tag(i, tag_rank, kGraphSlot));
            DCPSIM_CUDA(cudaGraphLaunch(exec, stream));
          },
          i >= warmup);
  } catch (...) {
    cudaGraphExecDestroy(exec);
    throw;
  }
  DCPSIM_CUDA(cudaGraphExecDestroy(exec));
}

void check_direct_error(const RankState& r, std::int64_t timeout_ms) {
  if (r.error.get() == nullptr) return;
  const int e = download<int>(r.error, 1)[0];
  if (e != 0)
    throw RuntimeError("direct merge: rank " + std::to_string(r.rank) + " waited " +
                       std::to_string(timeout_ms) + " ms for the flag of rank " + std::to_string(e - 1) +
                       " and gave up (raise --direct-timeout-ms if the ranks are merely slow)");
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

PhaseStats make_stats(int rank, const std::string& phase, std::vector<double> samples, bool emulated) {
  PhaseStats s;
  s.rank = rank;
  s.phase = phase;
  s.emulated = emulated;
  if (!samples.empty()) {
    s.median_ns = median_of(samples);
    s.min_ns = *std::min_element(samples.begin(), samples.end());
    s.max_ns = *std::max_element(samples.begin(), samples.end());
  }
  s.samples_ns = std::move(samples);
  return s;
}

}  // namespace dcpsim::hw
