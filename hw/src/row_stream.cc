#include "row_stream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "row_stream_layout.h"
#include "step.h"

namespace dcpsim::hw {
namespace {

constexpr int kMaxAttentionStreams = 4;  // chunk k of a rank runs on its stream k mod 4

std::size_t phase_index(const StepPlan& p, Phase ph) {
  const auto it = std::find(p.phases.begin(), p.phases.end(), ph);
  return it == p.phases.end() ? p.phases.size() : static_cast<std::size_t>(it - p.phases.begin());
}

row_stream::Shape shape_of(const StepPlan& p) {
  return {p.N, p.rows_total, p.J, p.D};
}

ops::RowStamps stamps_of(const StepPlan& p, RankState& r, bool output) {
  if (r.stamps.get() == nullptr) return {};
  const int off = output ? p.rows_total : 0;  // as step.cc: lse_ready at [2 + b], out_ready at [2 + B' + b]
  return {r.stamps.as<unsigned long long>() + 2 + off, r.stamp_counters.as<unsigned>() + off};
}

// Fork/join events stay inside a capture; timing events become external event nodes.
void record(cudaEvent_t e, cudaStream_t s, bool external) {
  if (external)
    DCPSIM_CUDA(cudaEventRecordWithFlags(e, s, cudaEventRecordExternal));
  else
    DCPSIM_CUDA(cudaEventRecord(e, s));
}

void alloc_rank(const StepPlan& p, const RunConfig& c, RankState& r) {
  const row_stream::Shape s = shape_of(p);
  const std::size_t ob = ops::elem_bytes(p.out);
  auto rs = std::make_unique<RowStreamRank>();
  rs->device = r.device;
  rs->win_o = DeviceBuffer(2 * row_stream::o_elems(s) * ob);
  rs->win_lse = DeviceBuffer(2 * row_stream::lse_elems(s) * sizeof(float));
  rs->win_flags = DeviceBuffer(2 * row_stream::flag_elems(s) * sizeof(unsigned long long));
  rs->counters = DeviceBuffer((1 + row_stream::counter_elems(s)) * sizeof(unsigned long long));
  rs->error = DeviceBuffer(2 * sizeof(int));
  rs->claim = DeviceBuffer(sizeof(unsigned));
  if (c.row_probe)
    rs->probe = DeviceBuffer(std::size_t(p.rows_total) * row_stream::items_per_row(p.J, p.D) *
                             row_stream::kProbeSlots * sizeof(unsigned long long));
  DCPSIM_CUDA(cudaMemset(rs->win_flags.get(), 0, rs->win_flags.bytes()));
  DCPSIM_CUDA(cudaMemset(rs->counters.get(), 0, rs->counters.bytes()));
  DCPSIM_CUDA(cudaMemset(rs->error.get(), 0, rs->error.bytes()));
  r.out = DeviceBuffer(std::size_t(p.rows_total) * p.J * p.D * ob);
  r.merged_lse = DeviceBuffer(std::size_t(p.rows_total) * p.J * sizeof(float));

  const ops::AttentionArgs a = attention_args(p, r);  // dcpsim's kernel: the plan refuses FlashInfer's
  rs->splits = ops::attention_splits(a, r.device);
  const int wave = ops::attention_rows_per_wave(a, rs->splits, r.device);
  rs->chunks = row_stream::row_chunks(p.rows_total, row_stream::rows_per_chunk(wave, p.N));
  const int streams = std::clamp(static_cast<int>(rs->chunks.size()), 1, kMaxAttentionStreams);
  int least = 0, greatest = 0;  // numerically greatest ≤ least
  DCPSIM_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  // With the early tail, the attention one level above it, so that no block of the early tail takes a
  // multiprocessor an attention block is waiting for (where that level is still below the combines'; the
  // early tail's gate copes either way).
  const int attention_priority = c.row_early_tail && least - 1 > greatest ? least - 1 : least;
  for (int i = 0; i < streams; ++i) {
    cudaStream_t st = nullptr;
    DCPSIM_CUDA(cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, attention_priority));
    rs->attention_streams.push_back(st);
    cudaEvent_t ev = nullptr;
    DCPSIM_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    rs->attention_done.push_back(ev);
  }
  DCPSIM_CUDA(cudaStreamCreateWithPriority(&rs->combine_stream, cudaStreamNonBlocking, greatest));
  DCPSIM_CUDA(cudaStreamCreateWithPriority(&rs->tail_stream, cudaStreamNonBlocking, greatest));
  DCPSIM_CUDA(cudaStreamCreateWithPriority(&rs->early_stream, cudaStreamNonBlocking, least));
  DCPSIM_CUDA(cudaEventCreateWithFlags(&rs->early_done, cudaEventDisableTiming));
  DCPSIM_CUDA(cudaEventCreateWithFlags(&rs->fork, cudaEventDisableTiming));
  DCPSIM_CUDA(cudaEventCreateWithFlags(&rs->combine_done, cudaEventDisableTiming));
  DCPSIM_CUDA(cudaEventCreateWithFlags(&rs->tail_done, cudaEventDisableTiming));
  r.row_stream = std::move(rs);
}

ops::AttentionArgs chunk_args(const StepPlan& p, RankState& r, int b0, int b1, const ops::RowPush& push) {
  const RowStreamRank& rs = *r.row_stream;
  ops::AttentionArgs a = attention_args(p, r);
  const std::size_t ib = ops::elem_bytes(p.in);
  const int dv = p.mla ? 512 : 128;
  a.rows = b1 - b0;
  a.valid_rows = std::clamp(p.B - b0, 0, a.rows);
  a.q = static_cast<const std::uint8_t*>(a.q) + std::size_t(b0) * a.q_row_stride * ib;
  a.kv_offset += b0;
  a.kv_len += b0;
  a.max_len = 0;
  for (int b = b0; b < b1; ++b) a.max_len = std::max<std::int64_t>(a.max_len, r.kv_len_host[b]);
  a.splits = rs.splits;
  a.workspace += std::size_t(b0) * p.H * rs.splits * (dv + 1);  // the chunks' workspaces do not overlap
  a.o = nullptr;
  a.lse = {};
  a.stamps = {};
  a.push = &push;
  return a;
}

ops::RowCombineArgs combine_args(const StepPlan& p, const RunConfig& c, RankState& r) {
  RowStreamRank& rs = *r.row_stream;
  auto a = ops::with_dims<ops::RowCombineArgs>(p.merge_dims(p.J));
  a.o = rs.win_o.get();
  a.lse = rs.win_lse.as<float>();
  a.flags = rs.win_flags.as<unsigned long long>();
  a.epoch = rs.counters.as<unsigned long long>();
  a.dst = r.out.get();
  a.dst_row_stride = std::int64_t(p.J) * p.D;
  a.dst_head_stride = p.D;
  a.merged_lse = {r.merged_lse.as<float>(), p.J, 1};
  a.lse_stamps = stamps_of(p, r, false);
  a.out_stamps = stamps_of(p, r, true);
  a.timeout_ns = c.direct_timeout_ms * 1000000LL;
  a.error = rs.error.as<int>();
  a.claim = rs.claim.as<unsigned>();
  a.ranks_on_device = p.N;
  a.probe = rs.probe.get() != nullptr ? rs.probe.as<unsigned long long>() : nullptr;
  a.staged = c.row_combine_staged;
  return a;
}

}  // namespace

RowStreamRank::~RowStreamRank() {
  cudaSetDevice(device);
  for (auto e : attention_done) cudaEventDestroy(e);
  for (auto s : attention_streams) cudaStreamDestroy(s);
  if (fork) cudaEventDestroy(fork);
  if (combine_done) cudaEventDestroy(combine_done);
  if (tail_done) cudaEventDestroy(tail_done);
  if (early_done) cudaEventDestroy(early_done);
  if (last_launch_started) cudaEventDestroy(last_launch_started);
  if (early_stream) cudaStreamDestroy(early_stream);
  if (combine_stream) cudaStreamDestroy(combine_stream);
  if (tail_stream) cudaStreamDestroy(tail_stream);
}

bool is_row_stream(const StepPlan& p) {
  return p.N > 1 && p.s.strategy == models::Strategy::kRowStream;
}

void setup_row_stream(const StepPlan& p, const RunConfig& c, Ranks& ranks) {
  int sms = 0;
  DCPSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ranks.front()->device));
  if (2 * p.N > sms)  // every owner's combine holds at least one multiprocessor while it waits
    throw InputError("--strategy row-stream emulates at most " + std::to_string(sms / 2) +
                     " ranks on this device (" + std::to_string(sms) + " multiprocessors), not " +
                     std::to_string(p.N));
  for (auto& r : ranks) {
    DCPSIM_CUDA(cudaSetDevice(r->device));
    alloc_rank(p, c, *r);
  }
  const int N = p.N;
  const std::size_t ob = ops::elem_bytes(p.out);
  const row_stream::Shape s = shape_of(p);
  std::vector<void*> po(2 * N);
  std::vector<float*> pl(2 * N);
  std::vector<unsigned long long*> pf(2 * N);
  for (int par = 0; par < 2; ++par)
    for (int n = 0; n < N; ++n) {
      RowStreamRank& owner = *ranks[n]->row_stream;
      po[par * N + n] = owner.win_o.as<std::uint8_t>() + par * row_stream::o_elems(s) * ob;
      pl[par * N + n] = owner.win_lse.as<float>() + par * row_stream::lse_elems(s);
      pf[par * N + n] = owner.win_flags.as<unsigned long long>() + par * row_stream::flag_elems(s);
    }
  for (auto& r : ranks) {
    RowStreamRank& rs = *r->row_stream;
    DCPSIM_CUDA(cudaSetDevice(r->device));
    rs.dst_o = upload(po);
    rs.dst_lse = upload(pl);
    rs.dst_flags = upload(pf);
    ops::RowPush& q = rs.push;
    q.dcp = N;
    q.rank = r->rank;
    q.rows = p.rows_total;
    q.heads_per_owner = p.J;
    q.dim = p.D;
    q.o = rs.dst_o.as<void* const>();
    q.lse = rs.dst_lse.as<float* const>();
    q.flags = rs.dst_flags.as<unsigned long long* const>();
    q.epoch = rs.counters.as<unsigned long long>();
    q.counters = rs.counters.as<unsigned long long>() + 1;
    q.system_scope = false;  // every logical rank is on this device
  }
  // The early tail: every pushing attention block of the step counts itself into rank 0's counter (one
  // device), unless some chunk's push runs in its split combine (those blocks do not count).
  if (!c.row_early_tail) return;
  RowStreamRank& first = *ranks.front()->row_stream;
  unsigned long long per_step = 0;
  bool counted = true;
  for (auto& r : ranks)
    for (const auto& [b0, b1] : r->row_stream->chunks) {
      const int n = ops::attention_push_blocks(chunk_args(p, *r, b0, b1, r->row_stream->push), r->device);
      counted = counted && n > 0;
      per_step += static_cast<unsigned long long>(n);
    }
  if (!counted) {
    std::fprintf(stderr,
                 "row-stream: no early tail (the split combine pushes: several KV splits, or an output type "
                 "other than the input's)\n");
    return;
  }
  DCPSIM_CUDA(cudaSetDevice(ranks.front()->device));
  first.producers = DeviceBuffer(sizeof(unsigned long long));
  DCPSIM_CUDA(cudaMemset(first.producers.get(), 0, first.producers.bytes()));
  DCPSIM_CUDA(cudaEventCreateWithFlags(&first.last_launch_started, cudaEventDisableTiming));
  first.producers_per_step = per_step;
  for (auto& r : ranks) r->row_stream->push.started = first.producers.as<unsigned long long>();
}

void enqueue_row_stream_step(const StepPlan& p, const RunConfig& c, Ranks& ranks, Exchange& ex,
                             bool capturing) {
  const std::size_t ia = phase_index(p, Phase::kAttention), ic = phase_index(p, Phase::kRowCombine);
  const bool events = !ranks.empty() && ranks[0]->timing == Timing::kEvents;
  const int rep = current_rep();
  ops::PdlScope pdl(p.s.launch == models::LaunchMode::kPdl);
  for (auto& r : ranks) enqueue_prologue(p, c, *r, capturing);
  for (auto& r : ranks) {
    TimelineTag tag(r->timeline, timeline_tag(rep, r->rank, 0));
    ops::launch_advance_epoch(r->row_stream->counters.as<unsigned long long>(), r->stream);
    DCPSIM_CUDA(cudaMemsetAsync(r->row_stream->claim.get(), 0, sizeof(unsigned), r->stream));
    if (r->row_stream->probe.get() != nullptr)
      DCPSIM_CUDA(cudaMemsetAsync(r->row_stream->probe.get(), 0, r->row_stream->probe.bytes(), r->stream));
  }
  for (std::size_t i = 0; i < ia; ++i)  // the query all-gather, as every strategy runs it
    for (auto& r : ranks) enqueue_phase(p, c, i, *r, ex, capturing);

  for (auto& r : ranks) {
    RowStreamRank& rs = *r->row_stream;
    DCPSIM_CUDA(cudaEventRecord(rs.fork, r->stream));
    for (cudaStream_t s : rs.attention_streams) DCPSIM_CUDA(cudaStreamWaitEvent(s, rs.fork, 0));
    DCPSIM_CUDA(cudaStreamWaitEvent(rs.combine_stream, rs.fork, 0));
    if (events) record(r->ev_begin[ia], rs.attention_streams[0], capturing);
  }
  // The producers: chunk k of every rank before chunk k + 1 of any, so the logical ranks advance together.
  // The last launch of all releases the early tail once its blocks have all begun.
  const RowStreamRank& first = *ranks.front()->row_stream;
  const bool early = first.producers_per_step > 0;
  const std::size_t rounds = first.chunks.size();
  for (std::size_t k = 0; k < rounds; ++k)
    for (auto& r : ranks) {
      RowStreamRank& rs = *r->row_stream;
      TimelineTag tag(r->timeline, timeline_tag(rep, r->rank, static_cast<int>(ia) + 1));
      ops::RowPush push = rs.push;
      const auto [b0, b1] = rs.chunks[k];
      push.row_base = b0;
      ops::AttentionArgs a = chunk_args(p, *r, b0, b1, push);
      if (early && k + 1 == rounds && r == ranks.back()) a.blocks_started = first.last_launch_started;
      ops::launch_attention(a, rs.attention_streams[k % rs.attention_streams.size()]);
    }
  for (auto& r : ranks) {  // each rank's attention ends on its first stream
    RowStreamRank& rs = *r->row_stream;
    for (std::size_t i = 1; i < rs.attention_streams.size(); ++i) {
      DCPSIM_CUDA(cudaEventRecord(rs.attention_done[i], rs.attention_streams[i]));
      DCPSIM_CUDA(cudaStreamWaitEvent(rs.attention_streams[0], rs.attention_done[i], 0));
    }
    if (events) record(r->ev_end[ia], rs.attention_streams[0], capturing);
    DCPSIM_CUDA(cudaEventRecord(rs.attention_done[0], rs.attention_streams[0]));
  }
  // The early tails, at the least priority, on multiprocessors the last attention blocks leave; without
  // PDL (they must not wait for the producers' end) and after this rank's step prologue (the claim counter).
  if (early)
    for (auto& r : ranks) {
      RowStreamRank& rs = *r->row_stream;
      DCPSIM_CUDA(cudaStreamWaitEvent(rs.early_stream, rs.fork, 0));
      DCPSIM_CUDA(cudaStreamWaitEvent(rs.early_stream, first.last_launch_started, 0));
      TimelineTag tag(r->timeline, timeline_tag(rep, r->rank, static_cast<int>(ic) + 1));
      ops::PdlScope no_pdl(false);
      ops::RowCombineArgs a = combine_args(p, c, *r);
      a.tail = true;
      a.early = true;
      a.producers_started = first.producers.as<unsigned long long>();
      a.producers_per_step = first.producers_per_step;
      ops::launch_row_combine(a, rs.early_stream);
      DCPSIM_CUDA(cudaEventRecord(rs.early_done, rs.early_stream));
    }
  // The owners' streaming combines, after the producers (a device that runs kernels one at a time still
  // finishes) and at the greatest priority (their few blocks start as soon as there is room). The tail
  // combines run on streams of their own, from the moment every rank's attention is done, beside whatever
  // the streaming grids still hold; both grids claim items from the same counter, so each item is merged
  // once. The combine phase ends when both grids have.
  for (auto& r : ranks) {
    RowStreamRank& rs = *r->row_stream;
    if (events) record(r->ev_begin[ic], rs.combine_stream, capturing);
    TimelineTag tag(r->timeline, timeline_tag(rep, r->rank, static_cast<int>(ic) + 1));
    ops::launch_row_combine(combine_args(p, c, *r), rs.combine_stream);
  }
  for (auto& r : ranks) {
    RowStreamRank& rs = *r->row_stream;
    DCPSIM_CUDA(cudaStreamWaitEvent(rs.tail_stream, rs.fork, 0));
    for (auto& q : ranks)
      DCPSIM_CUDA(cudaStreamWaitEvent(rs.tail_stream, q->row_stream->attention_done[0], 0));
    {
      TimelineTag tag(r->timeline, timeline_tag(rep, r->rank, static_cast<int>(ic) + 1));
      ops::RowCombineArgs tail = combine_args(p, c, *r);
      tail.tail = true;
      ops::launch_row_combine(tail, rs.tail_stream);
    }
    DCPSIM_CUDA(cudaEventRecord(rs.tail_done, rs.tail_stream));
    DCPSIM_CUDA(cudaStreamWaitEvent(rs.combine_stream, rs.tail_done, 0));
    if (early) DCPSIM_CUDA(cudaStreamWaitEvent(rs.combine_stream, rs.early_done, 0));
    if (events) record(r->ev_end[ic], rs.combine_stream, capturing);
    DCPSIM_CUDA(cudaEventRecord(rs.combine_done, rs.combine_stream));
  }
  for (auto& r : ranks) {
    RowStreamRank& rs = *r->row_stream;
    DCPSIM_CUDA(cudaStreamWaitEvent(r->stream, rs.attention_done[0], 0));
    DCPSIM_CUDA(cudaStreamWaitEvent(r->stream, rs.combine_done, 0));
    record(r->ev_step_end, r->stream, capturing);
  }
}

void check_row_stream_error(const RankState& r, std::int64_t timeout_ms) {
  if (!r.row_stream) return;
  const auto e = download<int>(r.row_stream->error, 2);
  if (e[0] != 0)
    throw RuntimeError("row-stream merge: rank " + std::to_string(r.rank) + " waited " +
                       std::to_string(timeout_ms) + " ms for row " + std::to_string(e[1]) + " of rank " +
                       std::to_string(e[0] - 1) +
                       " and gave up (raise --direct-timeout-ms if the ranks are merely slow)");
}

std::vector<std::pair<std::string, double>> row_stream_figures(const StepPlan& p, const Samples& s) {
  std::vector<std::pair<std::string, double>> out;
  const std::size_t ia = phase_index(p, Phase::kAttention);
  if (s.timing != Timing::kCupti || ia >= p.phases.size()) return out;
  const std::size_t ranks = s.rank_step.size();
  if (ranks == 0 || s.rank_step[0].empty()) return out;
  const std::size_t reps = s.rank_step[0].size();
  auto attention_end = [&](std::size_t r, std::size_t k) {
    return s.phase_origin[r][k] + s.offset[r][ia][k] + s.duration[r][ia][k];
  };
  // Per repetition: the last phase end of any rank after the slowest rank's attention end.
  std::vector<double> tail;
  for (std::size_t k = 0; k < reps; ++k) {
    double att = 0, last = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
      att = std::max(att, attention_end(r, k));
      for (std::size_t i = 0; i < p.phases.size(); ++i)
        last = std::max(last, s.phase_origin[r][k] + s.offset[r][i][k] + s.duration[r][i][k]);
    }
    tail.push_back(last - att);
  }
  out.emplace_back("row_stream.merge_after_attention_median_us", median_of(tail) / 1e3);
  // The last repetition's rows, from their %globaltimer stamps.
  double att = 0;
  for (std::size_t r = 0; r < ranks; ++r) att = std::max(att, attention_end(r, reps - 1));
  std::vector<double> ready;
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto& st = s.stamps[r];
    if (st.size() < static_cast<std::size_t>(2 + 2 * p.rows_total)) continue;
    for (int b = 0; b < p.B; ++b) {
      const unsigned long long v = st[2 + p.rows_total + b];
      if (v == 0 || v < st[0]) continue;
      ready.push_back(s.stamp_origin[r] + static_cast<double>(v - st[0]) - att);
    }
  }
  if (ready.empty()) return out;
  std::sort(ready.begin(), ready.end());
  auto at = [&](double q) {
    return ready[static_cast<std::size_t>(q * double(ready.size() - 1) + 0.5)] / 1e3;
  };
  out.emplace_back("row_stream.output_after_attention_min_us", at(0.0));
  out.emplace_back("row_stream.output_after_attention_p50_us", at(0.5));
  out.emplace_back("row_stream.output_after_attention_p90_us", at(0.9));
  out.emplace_back("row_stream.output_after_attention_max_us", at(1.0));
  return out;
}

std::vector<std::pair<std::string, double>> row_stream_early_figures(const Ranks& ranks) {
  if (ranks.empty() || !ranks.front()->row_stream) return {};
  const RowStreamRank& first = *ranks.front()->row_stream;
  if (first.producers_per_step == 0) return {{"row_stream.early_tail", 0.0}};
  DCPSIM_CUDA(cudaSetDevice(ranks.front()->device));
  const auto started = download<unsigned long long>(first.producers, 1);
  const auto epoch = download<unsigned long long>(first.counters, 1);
  return {{"row_stream.early_tail", 1.0},
          {"row_stream.early_tail.producer_blocks_per_step", static_cast<double>(first.producers_per_step)},
          {"row_stream.early_tail.producer_blocks_begun_per_step",
           epoch[0] == 0 ? 0.0 : static_cast<double>(started[0]) / static_cast<double>(epoch[0])}};
}

std::vector<RowProbeItem> row_stream_probe(const StepPlan& p, const Ranks& ranks, const Samples& s) {
  std::vector<RowProbeItem> out;
  const std::size_t ia = phase_index(p, Phase::kAttention);
  const bool timeline =
      s.timing == Timing::kCupti && ia < p.phases.size() && !s.rank_step.empty() && !s.rank_step[0].empty();
  double att = 0;  // the slowest rank's attention end on the last repetition's timeline
  if (timeline) {
    const std::size_t k = s.rank_step[0].size() - 1;
    for (std::size_t r = 0; r < s.duration.size(); ++r)
      att = std::max(att, s.phase_origin[r][k] + s.offset[r][ia][k] + s.duration[r][ia][k]);
  }
  const int per_row = row_stream::items_per_row(p.J, p.D);
  for (const auto& rp : ranks) {
    const RankState& r = *rp;
    if (!r.row_stream || r.row_stream->probe.get() == nullptr) continue;
    DCPSIM_CUDA(cudaSetDevice(r.device));
    const std::size_t items =
        r.row_stream->probe.bytes() / (row_stream::kProbeSlots * sizeof(unsigned long long));
    const auto raw = download<unsigned long long>(r.row_stream->probe, items * row_stream::kProbeSlots);
    const auto rank = static_cast<std::size_t>(r.rank);
    const unsigned long long origin =
        rank < s.stamps.size() && !s.stamps[rank].empty() ? s.stamps[rank][0] : 0;
    const double placed = timeline && rank < s.stamp_origin.size() ? s.stamp_origin[rank] - att : 0.0;
    for (std::size_t i = 0; i < items; ++i) {
      const unsigned long long* v = raw.data() + i * row_stream::kProbeSlots;
      if (v[row_stream::kProbeStored] == 0) continue;  // not merged (a failed wait)
      RowProbeItem it;
      it.rank = r.rank;
      it.item = static_cast<int>(i);
      it.row = static_cast<int>(i) / per_row;
      const unsigned long long who = v[row_stream::kProbeWho];
      it.tail = (who >> 63) != 0;
      it.early = (who >> 62 & 1ULL) != 0;
      it.sm = static_cast<int>((who >> 32) & 0x3fffffffULL);
      it.warp = static_cast<int>(who & 0xffffffffULL);
      for (std::size_t k = 0; k < it.t_ns.size(); ++k)
        it.t_ns[k] = placed + (static_cast<double>(v[k]) - static_cast<double>(origin));
      out.push_back(it);
    }
  }
  return out;
}

std::vector<std::pair<std::string, double>> row_probe_figures(const std::vector<RowProbeItem>& items) {
  std::vector<std::pair<std::string, double>> out;
  for (const std::string grid : {"streaming", "early", "tail"}) {
    std::vector<const RowProbeItem*> mine;
    for (const auto& it : items)
      if (grid == row_probe_grid(it)) mine.push_back(&it);
    if (mine.empty()) continue;
    out.emplace_back("row_stream.probe." + grid + ".items", static_cast<double>(mine.size()));
    for (std::size_t k = 1; k < kRowProbeStages.size(); ++k) {
      std::vector<double> d;
      for (const RowProbeItem* it : mine) d.push_back(it->t_ns[k] - it->t_ns[k - 1]);
      std::sort(d.begin(), d.end());
      const std::string name = "row_stream.probe." + grid + "." + kRowProbeStages[k];
      out.emplace_back(name + "_p50_us", median_of(d) / 1e3);
      out.emplace_back(name + "_max_us", d.back() / 1e3);
    }
    double first = mine.front()->t_ns[1], last = mine.front()->t_ns.back();
    for (const RowProbeItem* it : mine) {
      first = std::min(first, it->t_ns[1]);
      last = std::max(last, it->t_ns.back());
    }
    out.emplace_back("row_stream.probe." + grid + ".first_claim_us", first / 1e3);
    out.emplace_back("row_stream.probe." + grid + ".last_stored_us", last / 1e3);
  }
  return out;
}

}  // namespace dcpsim::hw
