#include "activity_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>

#include "dcpsim/error.h"

namespace dcpsim::sim::detail {
namespace {
namespace sg4 = simgrid::s4u;
}  // namespace

NodeId ActivityGraph::add(Kind kind, double amount, sg4::Host* from, sg4::Host* to) {
  Node node;
  node.kind = kind;
  node.amount = amount;
  node.from = from;
  node.to = to;
  nodes_.push_back(node);
  pending_.push_back(0);
  return static_cast<NodeId>(nodes_.size() - 1);
}

void ActivityGraph::reserve(std::size_t nodes, std::size_t edges) {
  nodes_.reserve(nodes);
  pending_.reserve(nodes);
  edges_.reserve(edges);
}

NodeId ActivityGraph::join() {
  return add(Kind::kJoin, 0.0, nullptr, nullptr);
}
NodeId ActivityGraph::latency(double seconds) {
  return add(Kind::kLatency, seconds, nullptr, nullptr);
}
NodeId ActivityGraph::exec(sg4::Host* host, double seconds) {
  return add(Kind::kExec, seconds, host, nullptr);
}
NodeId ActivityGraph::transfer(sg4::Host* from, sg4::Host* to, double bytes, int from_gpu, int to_gpu) {
  const NodeId n = add(Kind::kTransfer, bytes, from, to);
  nodes_[n].from_gpu = from_gpu;
  nodes_[n].to_gpu = to_gpu;
  return n;
}

int ActivityGraph::pipe(int from_gpu, bool across, double bandwidth, double latency) {
  const std::size_t key = 2 * static_cast<std::size_t>(from_gpu) + (across ? 1 : 0);
  if (pipe_index_.size() <= key) pipe_index_.resize(key + 1, -1);
  if (pipe_index_[key] >= 0) return pipe_index_[key];
  Pipe p;
  p.from_gpu = from_gpu;
  p.across = across;
  p.bandwidth = bandwidth;
  p.latency = latency;
  pipes_.push_back(std::move(p));
  pipe_index_[key] = static_cast<int>(pipes_.size() - 1);
  return pipe_index_[key];
}

NodeId ActivityGraph::pipe_transfer(int pipe, double bytes, int to_gpu, double delay_s) {
  // Whole bytes, as SimGrid's payload (start_node's kTransfer).
  const NodeId n = add(Kind::kPipe, static_cast<double>(std::llround(bytes)), nullptr, nullptr);
  nodes_[n].from_gpu = pipe;
  nodes_[n].to_gpu = to_gpu;
  nodes_[n].delay_s = std::max(0.0, delay_s);
  return n;
}

void ActivityGraph::after(NodeId before, NodeId node) {
  edges_.emplace_back(before, node);
  ++pending_[node];
}

NodeId ActivityGraph::join_of(const std::vector<NodeId>& nodes) {
  const NodeId j = join();
  for (NodeId n : nodes) after(n, j);
  return j;
}

NodeId ActivityGraph::after_latency(NodeId before, double seconds) {
  if (seconds <= 0) return before;
  const NodeId n = latency(seconds);
  after(before, n);
  return n;
}

ActivityGraph::~ActivityGraph() {
  if (timer_ != nullptr) timer_->remove();  // a run that threw may leave one set
}

void ActivityGraph::start_node(NodeId n) {
  Node& node = nodes_[n];
  const double now = now_;
  node.start_s = now - origin_;
  const bool instant = node.kind == Kind::kJoin || (node.kind != Kind::kTransfer && node.amount <= 0);
  if (instant) {
    ready_.push_back(n);
    return;
  }
  if ((node.kind == Kind::kExec || node.kind == Kind::kTransfer) && now > simgrid_now_) {
    // Reached while running ahead of SimGrid's clock (on_timer): SimGrid starts it when its clock gets here.
    if (node.kind == Kind::kTransfer) transfer_started(node);  // at this date, as any pipe started beside it
    deferred_.push_back(n);
    return;
  }
  start_simgrid(n);
  if (node.kind == Kind::kTransfer) transfer_started(node);
  if (node.kind == Kind::kLatency) schedule(now + node.amount, EventKind::kLatencyDone, n);
  if (node.kind == Kind::kPipe) {
    if (node.delay_s > 0) {
      schedule(now + node.delay_s, EventKind::kPipeDelayDone, n);
    } else {
      pipe_start(n);
    }
  }
}

// A SimGrid activity for an execution or transfer node, started at SimGrid's current date (= now_).
void ActivityGraph::start_simgrid(NodeId n) {
  Node& node = nodes_[n];
  const auto data = reinterpret_cast<void*>(static_cast<std::intptr_t>(n));
  switch (node.kind) {
    case Kind::kExec: {
      // On a host of its own it ends `amount` seconds from now; sharing the host it ends later, never
      // sooner (less SimGrid's timing precision, well under the margin).
      node.bound_s = now_ + node.amount - kBoundMargin;
      exec_bounds_.insert(node.bound_s);
      sg4::ExecPtr exec = sg4::Exec::init();
      exec->set_flops_amount(node.amount * kHostSpeed);
      exec->set_host(node.from);
      exec->set_data(data);
      exec->start();
      held_.push_back(exec);
      ++activities_;
      break;
    }
    case Kind::kTransfer: {
      ++comms_in_flight_;
      sg4::CommPtr comm = sg4::Comm::sendto_init(node.from, node.to);
      comm->set_payload_size(static_cast<std::uint64_t>(std::llround(node.amount)));
      comm->set_data(data);
      comm->start();
      held_.push_back(comm);
      ++activities_;
      break;
    }
    default:
      break;
  }
}

ActivityGraph::LinkUse& ActivityGraph::use(int gpu) {
  if (static_cast<int>(link_use_.size()) <= gpu) link_use_.resize(gpu + 1);
  return link_use_[gpu];
}

// A pipe is exact while its uplink is all its transfers contend for: no SimGrid transfer leaves its GPU, and
// a GPU receiving from a pipe receives from that sender's pipes only, never from SimGrid.
void ActivityGraph::transfer_started(const Node& node) {
  if (node.kind == Kind::kPipe) {
    const int from = pipes_[node.from_gpu].from_gpu;
    use(std::max(from, node.to_gpu));  // sized before taking references
    LinkUse& out = link_use_[from];
    if (out.simgrid_out > 0) pipes_exact_ = false;
    ++out.pipe_out;
    if (node.to_gpu >= 0) {
      LinkUse& in = link_use_[node.to_gpu];
      if (in.simgrid_in > 0 || (in.pipe_in > 0 && in.pipe_from != from)) pipes_exact_ = false;
      ++in.pipe_in;
      in.pipe_from = from;
    }
    return;
  }
  if (node.from_gpu >= 0) {
    LinkUse& out = use(node.from_gpu);
    if (out.pipe_out > 0) pipes_exact_ = false;
    ++out.simgrid_out;
  }
  if (node.to_gpu >= 0) {
    LinkUse& in = use(node.to_gpu);
    if (in.pipe_in > 0) pipes_exact_ = false;
    ++in.simgrid_in;
  }
}

void ActivityGraph::transfer_done(const Node& node) {
  if (node.kind == Kind::kPipe) {
    --link_use_[pipes_[node.from_gpu].from_gpu].pipe_out;
    if (node.to_gpu >= 0) --link_use_[node.to_gpu].pipe_in;
    return;
  }
  if (node.from_gpu >= 0) --link_use_[node.from_gpu].simgrid_out;
  if (node.to_gpu >= 0) --link_use_[node.to_gpu].simgrid_in;
}

void ActivityGraph::pipe_start(NodeId n) {
  const Node& node = nodes_[n];
  transfer_started(node);
  ++pipe_transfers_;
  const double latency = pipes_[node.from_gpu].latency;
  if (latency > 0) {
    schedule(now_ + latency, EventKind::kPipeLatencyDone, n);
  } else {
    pipe_flowing(n);
  }
}

// The transfer's latency is over: from now on it shares the pipe's bandwidth.
void ActivityGraph::pipe_flowing(NodeId n) {
  const int id = nodes_[n].from_gpu;
  Pipe& p = pipes_[id];
  const double now = now_;
  pipe_advance(p, now);
  if (nodes_[n].amount <= 0) {
    ready_.push_back(n);  // no bytes: done once its latency is
    return;
  }
  p.flowing.push_back({n, nodes_[n].amount, 0.0});
  pipe_schedule(id);
}

void ActivityGraph::pipe_advance(Pipe& p, double now) {
  if (!p.flowing.empty() && now > p.updated_s) {
    const double moved = (now - p.updated_s) * (p.bandwidth / static_cast<double>(p.flowing.size()));
    for (Flow& f : p.flowing) f.remaining = std::max(0.0, f.remaining - moved);
  }
  p.updated_s = now;
}

// Each flowing transfer's end at the pipe's current share; a timer at the earliest. A later change to the
// pipe makes the timer stale (its generation no longer matches).
void ActivityGraph::pipe_schedule(int id) {
  Pipe& p = pipes_[id];
  ++p.generation;
  if (p.flowing.empty()) return;
  const double rate = p.bandwidth / static_cast<double>(p.flowing.size());
  double first = std::numeric_limits<double>::infinity();
  for (Flow& f : p.flowing) {
    f.due_s = p.updated_s + f.remaining / rate;
    first = std::min(first, f.due_s);
  }
  schedule(first, EventKind::kPipeDue, id, p.generation);
}

void ActivityGraph::schedule(double date, EventKind kind, int index, std::uint32_t generation) {
  events_.push(Event{date, index, generation, kind});
  if (!in_timer_ && (timer_ == nullptr || date < timer_date_)) arm(date);
}

// The one SimGrid timer, moved to `date`.
void ActivityGraph::arm(double date) {
  if (timer_ != nullptr) {
    if (timer_date_ == date) return;
    timer_->remove();
  }
  timer_date_ = date;
  timer_ = simgrid::kernel::timer::Timer::set(date, [this] { on_timer(); });
}

// True when nothing SimGrid runs can end before `date`: no transfer of its in flight, and every execution
// in flight ends after it.
bool ActivityGraph::simgrid_quiet_before(double date) const {
  return comms_in_flight_ == 0 && (exec_bounds_.empty() || date < *exec_bounds_.begin());
}

// Runs every event due by now, and on through later dates while SimGrid has nothing that could happen first
// (a ring of pipe transfers then costs SimGrid no timer per step); then sets the timer for what is next: the
// activities that wait for SimGrid's clock, or the next event.
void ActivityGraph::on_timer() {
  timer_ = nullptr;  // SimGrid deletes the timer that fired
  in_timer_ = true;
  now_ = simgrid_now_ = SimEngine::now();
  std::vector<NodeId> waiting;
  waiting.swap(deferred_);
  for (NodeId n : waiting) start_simgrid(n);
  drain_ready();
  for (;;) {
    while (!events_.empty() && events_.top().date <= now_) {
      const Event e = events_.top();
      events_.pop();
      handle(e);
      drain_ready();
    }
    if (!deferred_.empty() || events_.empty() || !simgrid_quiet_before(events_.top().date)) break;
    now_ = events_.top().date;
  }
  in_timer_ = false;
  if (!deferred_.empty()) {
    arm(now_);
  } else if (!events_.empty()) {
    arm(events_.top().date);
  }
}

void ActivityGraph::handle(const Event& e) {
  switch (e.kind) {
    case EventKind::kLatencyDone:
      complete(e.index);
      break;
    case EventKind::kPipeDelayDone:
      nodes_[e.index].start_s = now_ - origin_;
      pipe_start(e.index);
      break;
    case EventKind::kPipeLatencyDone:
      pipe_flowing(e.index);
      break;
    case EventKind::kPipeDue:
      pipe_event(e.index, e.generation);
      break;
  }
}

void ActivityGraph::pipe_event(int id, std::uint32_t generation) {
  Pipe& p = pipes_[id];
  if (generation != p.generation) return;
  const double now = now_;
  pipe_advance(p, now);
  // The transfers due by now end (as SimGrid ends an action when its date comes), in the order they started.
  std::vector<NodeId> done;
  auto keep = p.flowing.begin();
  for (auto it = p.flowing.begin(); it != p.flowing.end(); ++it) {
    if (it->due_s <= now) {
      done.push_back(it->node);
    } else {
      *keep++ = *it;
    }
  }
  p.flowing.erase(keep, p.flowing.end());
  pipe_schedule(id);
  for (NodeId n : done) ready_.push_back(n);
}

void ActivityGraph::on_activity_done(std::intptr_t id) {
  now_ = simgrid_now_ = SimEngine::now();
  complete(static_cast<NodeId>(id));
  drain_ready();
}

// Joins and zero-time nodes released by a completion finish at the same instant.
void ActivityGraph::drain_ready() {
  while (!ready_.empty()) {
    const NodeId n = ready_.back();
    ready_.pop_back();
    complete(n);
  }
}

void ActivityGraph::complete(NodeId n) {
  Node& node = nodes_[n];
  node.end_s = now_ - origin_;
  ++completed_;
  if (node.kind == Kind::kTransfer || node.kind == Kind::kPipe) transfer_done(node);
  if (node.kind == Kind::kTransfer) --comms_in_flight_;
  if (node.kind == Kind::kExec && node.amount > 0) exec_bounds_.erase(exec_bounds_.find(node.bound_s));
  for (int i = succ_begin_[n]; i < succ_begin_[n + 1]; ++i) {
    const NodeId s = succ_[i];
    if (--pending_[s] == 0) start_node(s);
  }
}

void ActivityGraph::run(SimEngine& engine) {
  // Successor lists in compressed form (counting sort of the edges by source).
  succ_begin_.assign(nodes_.size() + 1, 0);
  for (const auto& [from, to] : edges_) ++succ_begin_[from + 1];
  for (std::size_t i = 1; i < succ_begin_.size(); ++i) succ_begin_[i] += succ_begin_[i - 1];
  succ_.assign(edges_.size(), 0);
  std::vector<int> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (const auto& [from, to] : edges_) succ_[fill[from]++] = to;

  origin_ = engine.begin_epoch();
  now_ = simgrid_now_ = origin_;
  completed_ = 0;
  for (Pipe& p : pipes_) p.updated_s = origin_;
  for (NodeId n = 0; n < static_cast<NodeId>(nodes_.size()); ++n) {
    if (pending_[n] == 0) start_node(n);
  }
  drain_ready();
  engine.run(*this);

  if (completed_ != nodes_.size()) {
    // Name the earliest unfinished labelled activity (a kernel), else the first unfinished one.
    std::string what;
    for (const auto& [id, text] : labels_) {
      if (nodes_[id].end_s < 0) {
        what = text;
        break;
      }
    }
    for (NodeId n = 0; what.empty() && n < static_cast<NodeId>(nodes_.size()); ++n) {
      if (nodes_[n].end_s < 0) what = "activity #" + std::to_string(n);
    }
    throw RuntimeError("the simulation ended with " + std::to_string(nodes_.size() - completed_) +
                       " activities unfinished (" + what + "): some rank did not finish the step" +
                       simgrid_said());
  }
}

}  // namespace dcpsim::sim::detail
