// The one-shot strategies (SPEC "direct"): each rank writes its head blocks and LSEs straight into the
// owners' windows over NVLink and then sets an epoch-stamped flag; the owner polls for the flags and combines
// in fp32.
//   direct          ONE kernel per rank after attention, as the runner's (hw/ops/direct_merge.cu): its blocks
//                   store the rank's slices into the owners' windows with 16-byte vector stores (at the
//                   measured peer-copy bandwidth) and publish a flag per owner, then wait for the N − 1
//                   peers' flags and combine the owner's rows. One launch, one kernel floor (the combine's),
//                   no second kernel. The runner's kernel raises a flag per chunk of eight (row, head) pairs
//                   and an owner's block combines a chunk once every source sent it; a rank's blocks store
//                   all their chunks at once, at the link's shared bandwidth, so the chunks of one source
//                   land together and the model keeps one flag per (source, owner) after its last store.
//   row-stream      the attention kernel (or its split-KV combine) pushes each group of rows the moment it
//                   is done; a persistent combine kernel on a second stream merges rows as their partials
//                   arrive, so the merge overlaps attention. Its SMs are not taken from attention (a limit
//                   of the model).
//   flashinfer-a2a  FlashInfer's fused DCP merge (comm/dcp_lse_reduce.cuh), one cooperative kernel per rank:
//                   a grid barrier to pick the epoch, the packed per-destination stores, a grid barrier
//                   before the flags are published, block 0 polls every source's flag, a grid barrier, then
//                   the merge. Each grid barrier costs signal.epoch_handshake (one grid-wide arrive and
//                   poll); the merge is priced analytically with the direct combine's numbers (same bytes; no
//                   table holds FlashInfer's kernel).
// A flag store follows its data after a release fence: the flag's visibility takes flag_write_latency in all,
// of which the route's own latency is part of the flag transfer. The owner sees the last flag half a polling
// interval after it lands (models/cost_signals.h), but never before its kernel polls at all.
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "fanout.h"
#include "step_graph.h"

namespace dcpsim::sim::detail {
namespace {

struct Flag {
  NodeId node = 0;
  int span = 0;
};

// Pushes `bytes` to every other rank, (from + 1) % n first, each block followed by its flag, once `gate`
// completes. Returns each owner's flag (the sender's own entry is unused).
std::vector<Flag> push_all(FanOut& out, int from, int n, double bytes, NodeId gate, int rows_begin,
                           int rows_end, std::vector<NodeId>* data = nullptr) {
  FanOut::Send send;
  for (int k = 1; k < n; ++k) send.peers.push_back((from + k) % n);
  send.payload = bytes;
  // The links run at the peer-copy bandwidth; a kernel's stores move at the profile's store bandwidth.
  send.bytes = bytes * models::store_transfer_factor(out.profile());
  send.gate = [gate](int) { return gate; };
  send.flags = true;
  send.rows_begin = rows_begin;
  send.rows_end = rows_end;
  const FanOut::Sent sent = out.send(send);
  std::vector<Flag> flags(n);
  for (std::size_t i = 0; i < send.peers.size(); ++i)
    flags[send.peers[i]] = {sent.flag[i], sent.flag_span[i]};
  if (data != nullptr) *data = sent.data;
  return flags;
}

double block_bytes(const models::Scenario& s, int rows) {
  return rows * (double(s.heads) / s.dcp) *
         (s.head_dim * double(models::dtype_bytes(s.out_dtype)) + kLseBytes);
}

// The owner's wait: from `from` until the flags are seen (never before `from`). Returns the seen node.
NodeId wait_for_flags(StepGraph& step, int owner, const std::string& lane, NodeId from,
                      const std::vector<Flag>& flags, NodeId extra_arrival, int rows_begin, int rows_end) {
  ActivityGraph& g = step.graph;
  std::vector<NodeId> arrivals;
  for (const Flag& f : flags) arrivals.push_back(f.node);
  if (extra_arrival >= 0) arrivals.push_back(extra_arrival);
  const NodeId landed = g.join_of(arrivals);
  const NodeId seen = g.join_of({from, g.after_latency(landed, models::expected_poll_wait(step.profile))});
  const int wait = step.add_span(
      {owner, lane, traces::v1::EVENT_KIND_WAIT, "wait for flags", from, seen, 0.0, rows_begin, rows_end});
  for (const Flag& f : flags) step.flows.emplace_back(f.span, wait);
  return seen;
}

// Pushes of one merge kernel per rank: from `gate[r]`, rank r writes its block to every other owner, each
// followed by a flag. Returns [owner] -> the flags it waits for; per rank, when its own stores are out (the
// data transfers: a flag is a store issued after them, its landing is the peer's business) and when every
// transfer it started has drained (its kernel cannot end before).
struct KernelPushes {
  std::vector<std::vector<Flag>> flags_to;
  std::vector<NodeId> stored, drained;
};
KernelPushes push_from_kernels(StepGraph& step, const std::vector<NodeId>& gate, double block) {
  const int n = step.scenario.dcp;
  KernelPushes out{std::vector<std::vector<Flag>>(n), std::vector<NodeId>(n), std::vector<NodeId>(n)};
  for (int r = 0; r < n; ++r) {
    FanOut fan(step, r, kPhasePush);
    std::vector<NodeId> data;
    const std::vector<Flag> flags = push_all(fan, r, n, block, gate[r], 0, step.scenario.rows(), &data);
    for (int o = 0; o < n; ++o) {
      if (o != r) out.flags_to[o].push_back(flags[o]);
    }
    data.push_back(gate[r]);
    out.stored[r] = step.graph.join_of(data);
    std::vector<NodeId> touched = fan.transfers();
    touched.push_back(gate[r]);
    out.drained[r] = step.graph.join_of(touched);
  }
  return out;
}

}  // namespace

namespace {

// The one-kernel merges (direct, flashinfer-a2a): each rank's kernel starts, passes `gate_s`, stores its
// slices into every owner's window with a flag after each, waits for the peers' flags and combines.
struct OneKernelMerge {
  std::string_view kernel;      // the kernel's name on the rank's stream
  double gate_s = 0.0;          // from the kernel's start to its first store (the epoch handshake)
  double flag_barrier_s = 0.0;  // a grid barrier between the stores and the flags they publish
  double after_wait_s = 0.0;    // a grid barrier after the flags are seen, before the combine
};

void add_one_kernel_merge(StepGraph& step, std::vector<RankStream>& streams, const OneKernelMerge& k,
                          const std::function<double(int owner)>& combine_s) {
  const models::Scenario& s = step.scenario;
  ActivityGraph& g = step.graph;
  const int n = s.dcp;
  const int rows = s.rows();
  const models::MergeShape m = models::merge_shape(s);
  const double block = block_bytes(s, s.merge_rows());  // padding rows are stored and combined too

  std::vector<NodeId> start(n), gate(n);
  for (int r = 0; r < n; ++r) {
    start[r] = streams[r].begin(k.kernel);
    gate[r] = g.after_latency(start[r], k.gate_s);
  }
  const KernelPushes pushes = push_from_kernels(step, gate, block);
  for (int o = 0; o < n; ++o) {
    // A barrier before the flags are published delays what the owner sees by as much.
    std::vector<Flag> flags = pushes.flags_to[o];
    for (Flag& f : flags) f.node = g.after_latency(f.node, k.flag_barrier_s);
    // A block combines once its own stores are out and every peer's flag is seen.
    // (A join after the barrier: the push phase ends, and the wait begins, once the barrier is passed.)
    const NodeId pushed = k.flag_barrier_s > 0
                              ? g.join_of({g.after_latency(pushes.stored[o], k.flag_barrier_s)})
                              : pushes.stored[o];
    const NodeId seen =
        g.after_latency(wait_for_flags(step, o, "stream0", pushed, flags, -1, 0, rows), k.after_wait_s);
    const NodeId body = g.exec(step.platform.gpu(o), combine_s(o));
    g.after(seen, body);
    const NodeId end = g.join_of({body, pushes.drained[o]});  // its own flags out too
    streams[o].finish(end, traces::v1::EVENT_KIND_KERNEL, (n - 1) * block + models::direct_combine_bytes(m));
    RankNodes& rank = step.ranks[o];
    rank.phases.push_back({kPhasePush, start[o], pushed});
    rank.phases.push_back({kPhaseWait, pushed, seen});
    rank.phases.push_back({kPhaseCombine, body, body});
    rank.lse_ready.assign(rows, RowRef{seen, 0.0});
    rank.output_ready.assign(rows, RowRef{body, 0.0});
    rank.done = end;
  }
}

}  // namespace

namespace {

// The runner's first direct merge (StepInputs::direct_two_kernels): a push kernel per rank (the epoch
// handshake, its stores to every owner with a flag after each; it ends once they have drained, and not before
// its floor), then a combine kernel queued behind it that polls the peers' flags and combines.
void add_two_kernel_direct(StepGraph& step, std::vector<RankStream>& streams) {
  const models::Scenario& s = step.scenario;
  ActivityGraph& g = step.graph;
  const int n = s.dcp;
  const int rows = s.rows();
  const models::MergeShape m = models::merge_shape(s);
  const double block = block_bytes(s, s.merge_rows());
  std::vector<NodeId> start(n), gate(n), pushed(n);
  for (int r = 0; r < n; ++r) {
    start[r] = streams[r].begin("direct_write");
    gate[r] = g.after_latency(start[r], models::epoch_handshake_time(step.profile));
  }
  const KernelPushes pushes = push_from_kernels(step, gate, block);
  for (int r = 0; r < n; ++r) {
    pushed[r] = g.join_of({pushes.drained[r], g.after_latency(start[r], step.profile.kernel.floor.si())});
    streams[r].finish(pushed[r], traces::v1::EVENT_KIND_KERNEL, (n - 1) * block);
    step.ranks[r].phases.push_back({kPhasePush, start[r], pushed[r]});
  }
  for (int o = 0; o < n; ++o) {
    const NodeId begin = streams[o].begin("direct_combine");
    const NodeId seen = wait_for_flags(step, o, "stream0", begin, pushes.flags_to[o], -1, 0, rows);
    NodeId body;
    const bool measured = step.measured(o, "direct_combine").has_value();
    if (const std::optional<double> t = step.measured(o, "direct_combine")) {
      // Measured as one kernel, polling included: it ends that long after it began, or once the flags are in.
      step.figures.push_back({o, "direct_combine", models::FigureSource::kMeasured});
      body = g.join_of({seen, g.after_latency(begin, *t)});
    } else {
      body = g.exec(step.platform.gpu(o), step.price(o, models::MemoryKernel::kDirectCombine, m));
      g.after(seen, body);
    }
    streams[o].finish(body, traces::v1::EVENT_KIND_KERNEL, models::direct_combine_bytes(m));
    RankNodes& rank = step.ranks[o];
    rank.phases.push_back({kPhaseWait, begin, seen});
    rank.phases.push_back({kPhaseCombine, measured ? seen : body, body});
    rank.lse_ready.assign(rows, RowRef{seen, 0.0});
    rank.output_ready.assign(rows, RowRef{body, 0.0});
    rank.done = body;
  }
}

}  // namespace

void add_direct_merge(StepGraph& step, std::vector<RankStream>& streams, const std::vector<AttentionOut>&) {
  if (step.inputs != nullptr && step.inputs->direct_two_kernels) {
    add_two_kernel_direct(step, streams);
    return;
  }
  const models::MergeShape m = models::merge_shape(step.scenario);
  add_one_kernel_merge(step, streams, {"direct_merge", models::epoch_handshake_time(step.profile), 0.0, 0.0},
                       [&](int o) { return step.price(o, models::MemoryKernel::kDirectCombine, m); });
}

void add_flashinfer_merge(StepGraph& step, std::vector<RankStream>& streams) {
  const models::MergeShape m = models::merge_shape(step.scenario);
  // Block 0 picks the epoch behind a grid barrier; another before the flags are published and one after the
  // wait. No table holds FlashInfer's kernel: the merge is priced with the direct combine's numbers.
  const double barrier = models::grid_barrier_time(step.profile);
  add_one_kernel_merge(step, streams, {"flashinfer_merge", barrier, barrier, barrier}, [&](int o) {
    step.figures.push_back({o, "flashinfer_combine", models::FigureSource::kAnalytic});
    return models::direct_combine_time(step.profile, m);
  });
}

namespace {

// A rank's rows grouped by the moment their partial exists (same node and offset), in time order: rows done
// inside the attention kernel by offset, then rows finished by the split-KV combine kernel.
struct RowGroups {
  std::vector<RowRef> when;
  std::vector<std::vector<int>> rows;
  std::vector<int> group_of;  // per row
};

RowGroups group_rows(const AttentionOut& att) {
  // Rows by (done after the kernel, offset, node), ties in row order: a sort, not a map (a DCP72 step groups
  // 72 x B rows).
  using Key = std::tuple<bool, double, NodeId, int>;
  std::vector<Key> keys;
  keys.reserve(att.rows.size());
  for (int b = 0; b < static_cast<int>(att.rows.size()); ++b) {
    const RowRef& ref = att.rows[b];
    keys.emplace_back(ref.node != att.start, ref.offset_s, ref.node, b);
  }
  std::sort(keys.begin(), keys.end());
  RowGroups groups;
  groups.group_of.assign(att.rows.size(), 0);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& [after, offset, node, b] = keys[i];
    if (i == 0 ||
        std::tie(after, offset, node) !=
            std::tie(std::get<0>(keys[i - 1]), std::get<1>(keys[i - 1]), std::get<2>(keys[i - 1]))) {
      groups.when.push_back(att.rows[b]);
      groups.rows.emplace_back();
    }
    groups.group_of[b] = static_cast<int>(groups.rows.size()) - 1;
    groups.rows.back().push_back(b);
  }
  return groups;
}

// Rows merged together on the owner: those whose partials arrive in the same group on every rank.
std::vector<std::vector<int>> combine_groups(const std::vector<RowGroups>& groups,
                                             const std::vector<AttentionOut>& att, int rows) {
  std::map<std::vector<int>, std::vector<int>> by_signature;
  for (int b = 0; b < rows; ++b) {
    std::vector<int> signature;
    for (const RowGroups& g : groups) signature.push_back(g.group_of[b]);
    by_signature[signature].push_back(b);
  }
  // Merge order: by when the last partial of the group is expected (analytic, relative to attention start).
  std::vector<std::pair<double, std::vector<int>>> ordered;
  for (auto& [signature, members] : by_signature) {
    double expected = 0.0;
    for (std::size_t r = 0; r < att.size(); ++r) {
      const RowRef& ref = groups[r].when[signature[r]];
      const models::AttentionTiming& t = att[r].timing;
      expected = std::max(expected, ref.node == att[r].start ? ref.offset_s : t.kernel_end_s + t.combine_s);
    }
    ordered.emplace_back(expected, std::move(members));
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::vector<int>> out;
  for (auto& [expected, members] : ordered) out.push_back(std::move(members));
  return out;
}

// Sender side: each rank pushes each group of rows to every owner once the group's partials exist.
struct RowPushes {
  std::vector<RowGroups> groups;
  std::vector<std::vector<NodeId>> gate;             // [rank][group]: its rows' partials exist
  std::vector<std::vector<std::vector<Flag>>> flag;  // [rank][group][owner]
};

RowPushes push_rows(StepGraph& step, const std::vector<AttentionOut>& att) {
  const models::Scenario& s = step.scenario;
  ActivityGraph& g = step.graph;
  const int n = s.dcp;
  RowPushes out{{}, std::vector<std::vector<NodeId>>(n), std::vector<std::vector<std::vector<Flag>>>(n)};
  for (int r = 0; r < n; ++r) {
    out.groups.push_back(group_rows(att[r]));
    const RowGroups& rg = out.groups.back();
    FanOut fan(step, r, kPhasePush);
    for (std::size_t k = 0; k < rg.rows.size(); ++k) {
      const RowRef& when = rg.when[k];
      // The epoch flips as the kernel starts; the first rows cannot be pushed before that.
      const double offset = when.node == att[r].start
                                ? std::max(when.offset_s, models::epoch_handshake_time(step.profile))
                                : when.offset_s;
      out.gate[r].push_back(g.after_latency(when.node, offset));
      const int lo = rg.rows[k].front();
      const int hi = rg.rows[k].back() + 1;
      const double bytes = block_bytes(s, static_cast<int>(rg.rows[k].size()));
      out.flag[r].push_back(push_all(fan, r, n, bytes, out.gate[r][k], lo, hi));
    }
    const std::vector<NodeId>& touched = fan.transfers();
    const NodeId first = g.join();
    g.after(out.gate[r].front(), first);
    step.ranks[r].phases.push_back({kPhasePush, first, g.join_of(touched)});
  }
  return out;
}

// Owner side: a persistent kernel on a second stream merges each group of rows once every rank's partial of
// it has landed, in the expected order; the kernel's floor is paid once, as its prologue.
void combine_rows(StepGraph& step, RankStream& main_stream, const RowPushes& pushes,
                  const std::vector<std::vector<int>>& merged) {
  const models::HardwareProfile& p = step.profile;
  ActivityGraph& g = step.graph;
  const int o = main_stream.rank();
  const int n = step.scenario.dcp;
  RankStream combine(step, o, "stream1");
  combine.share_cpu_with(main_stream);
  const NodeId start = combine.begin("row_stream_combine");
  NodeId previous = g.exec(step.platform.gpu(o), p.kernel.floor.si());
  g.after(start, previous);
  RankNodes& rank = step.ranks[o];
  rank.lse_ready.assign(step.scenario.rows(), RowRef{});
  rank.output_ready.assign(step.scenario.rows(), RowRef{});
  NodeId first_body = -1;
  NodeId last_seen = previous;
  double bytes = 0.0;
  for (const std::vector<int>& members : merged) {
    std::vector<Flag> flags;
    for (int r = 0; r < n; ++r) {
      if (r != o) flags.push_back(pushes.flag[r][pushes.groups[r].group_of[members.front()]][o]);
    }
    const NodeId own = pushes.gate[o][pushes.groups[o].group_of[members.front()]];
    const NodeId idle = g.join();
    g.after(previous, idle);
    const NodeId seen =
        wait_for_flags(step, o, "stream1", idle, flags, own, members.front(), members.back() + 1);
    models::MergeShape m = models::merge_shape(step.scenario);
    m.rows = static_cast<int>(members.size());
    const NodeId body =
        g.exec(step.platform.gpu(o), models::direct_combine_time(p, m) -
                                         p.kernel.of(models::MemoryKernel::kDirectCombine).floor.si());
    g.after(seen, body);
    bytes += models::direct_combine_bytes(m);
    for (int b : members) {
      rank.lse_ready[b] = {seen, 0.0};
      rank.output_ready[b] = {body, 0.0};
    }
    if (first_body < 0) first_body = body;
    previous = body;
    last_seen = seen;
  }
  combine.finish(previous, traces::v1::EVENT_KIND_KERNEL, bytes);
  rank.phases.push_back({kPhaseWait, start, last_seen});
  rank.phases.push_back({kPhaseCombine, first_body, previous});
  rank.done = g.join_of({main_stream.last_end(), previous});
}

}  // namespace

void add_row_stream_merge(StepGraph& step, std::vector<RankStream>& streams,
                          const std::vector<AttentionOut>& att) {
  const RowPushes pushes = push_rows(step, att);
  const std::vector<std::vector<int>> merged = combine_groups(pushes.groups, att, step.scenario.rows());
  for (RankStream& stream : streams) combine_rows(step, stream, pushes, merged);
}

}  // namespace dcpsim::sim::detail
