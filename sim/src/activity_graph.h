#pragma once
// A dependency graph of simulated activities, run on SimGrid.
//
// Nodes are joins (done when their predecessors are), latencies (a fixed time that uses no resource: launch
// latency, protocol overhead, a poll; SimGrid kernel timers), executions (a kernel's analytic duration on its
// GPU host: an s4u::Exec) and transfers (bytes between two hosts: an s4u::Comm, sharing link bandwidth with
// every concurrent transfer) and pipe transfers. A node starts when its last predecessor completes. SimGrid
// activities are created only when they start: SimGrid keeps host-to-host transfers in one list it scans on
// every completion, so creating them all up front would make a step quadratic in its transfer count.
//
// Pipes: a pipe is one GPU's uplink of one kind (its NVLink port or its NIC, platform.h), of bandwidth B;
// every route leaving through it has the same latency L, and ends at a receiving GPU's downlink of the same
// bandwidth or at a FATPIPE switch port. A pipe transfer is timed here instead of by SimGrid, the way
// SimGrid's CM02 model times it (sim_engine.cc's configuration): the latency first, using no bandwidth, then
// its bytes (rounded to whole bytes, as SimGrid's payload is) at B / k while k transfers of the pipe are past
// their latency; it ends at the date computed when the pipe last changed. That is exact as long as the
// uplink is the only link the transfers contend for: no SimGrid transfer leaves the sender while its pipes
// carry one, and a receiving GPU's downlink carries transfers from one sender's pipe only (then it never
// binds: k' ≤ k transfers at B / k each). The graph checks this as it runs (pipes_exact()); the simulator
// re-runs a step without pipes when it did not hold. Ring steps (fixed neighbours) and bundled pushes (into a
// switch port) qualify and cost two timer events each instead of a SimGrid communication; tests/sim/
// pipes_test.cc holds them against SimGrid (docs/PERFORMANCE.md).
#include <cstdint>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include <simgrid/forward.h>
#include <simgrid/s4u/Activity.hpp>  // ActivityPtr release must see Activity's own overload

#include "sim_engine.h"

namespace dcpsim::sim::detail {

using NodeId = int;

class ActivityGraph final : public CompletionListener {
 public:
  ActivityGraph() = default;
  ActivityGraph(const ActivityGraph&) = delete;
  ActivityGraph& operator=(const ActivityGraph&) = delete;
  ~ActivityGraph() override;

  // Room for about `nodes` nodes and `edges` dependencies (saves the regrowth of a large step's graph).
  void reserve(std::size_t nodes, std::size_t edges);

  NodeId join();
  NodeId latency(double seconds);
  NodeId exec(simgrid::s4u::Host* host, double seconds);
  // `from_gpu`/`to_gpu`: the GPU whose uplink/downlink the route uses, -1 for none (an NVSwitch end).
  NodeId transfer(simgrid::s4u::Host* from, simgrid::s4u::Host* to, double bytes, int from_gpu, int to_gpu);
  // The uplink of `from_gpu` over NVLink (across = false) or its NIC (created on first use; bandwidth in
  // bytes/s, latency of its routes in s).
  int pipe(int from_gpu, bool across, double bandwidth, double latency);
  // A transfer over `pipe` to GPU `to_gpu`'s downlink, or to a switch port (to_gpu = -1), starting `delay_s`
  // after its predecessors (the same as a latency node before it, without the node).
  NodeId pipe_transfer(int pipe, double bytes, int to_gpu, double delay_s = 0.0);
  // `node` starts only after `before` completes.
  void after(NodeId before, NodeId node);
  // A join that completes when every node of `nodes` has.
  NodeId join_of(const std::vector<NodeId>& nodes);
  // `node` starts after a latency of `seconds` following `before` (no extra node when seconds is 0).
  NodeId after_latency(NodeId before, double seconds);

  // Runs every node to completion from a fresh clock origin. Throws RuntimeError naming a node that never
  // completed (a dependency cycle or a stuck transfer): a deadlocked SimGrid simulation returns normally.
  void run(SimEngine& engine);

  // Times relative to the run's origin.
  double start(NodeId n) const { return nodes_[n].start_s; }
  double end(NodeId n) const { return nodes_[n].end_s; }
  std::size_t size() const { return nodes_.size(); }
  std::size_t edges() const { return edges_.size(); }
  std::int64_t simgrid_activities() const { return activities_; }
  std::int64_t pipe_transfers() const { return pipe_transfers_; }
  // False when, during the run, a pipe's links were shared with a transfer it does not model: its times may
  // then differ from SimGrid's.
  bool pipes_exact() const { return pipes_exact_; }
  // Labels a node for error messages.
  void label(NodeId n, std::string text) { labels_.emplace_back(n, std::move(text)); }

  void on_activity_done(std::intptr_t id) override;

 private:
  enum class Kind : std::uint8_t { kJoin, kLatency, kExec, kTransfer, kPipe };
  struct Node {
    Kind kind = Kind::kJoin;
    double amount = 0.0;  // seconds or bytes
    simgrid::s4u::Host* from = nullptr;
    simgrid::s4u::Host* to = nullptr;
    int from_gpu = -1;     // transfers: the GPUs whose links they use; pipe transfers: from_gpu is the pipe
    int to_gpu = -1;       // (and to_gpu the receiving GPU, -1 for a switch port)
    double delay_s = 0.0;  // pipe transfers: from the predecessors to the start
    double bound_s = 0.0;  // executions in flight: the earliest date SimGrid could end them
    double start_s = -1.0;
    double end_s = -1.0;
  };

  struct Flow {
    NodeId node = 0;
    double remaining = 0.0;  // bytes
    double due_s = 0.0;      // absolute date it ends at the current rate
  };
  struct Pipe {
    int from_gpu = 0;
    bool across = false;
    double bandwidth = 0.0;
    double latency = 0.0;
    std::vector<Flow> flowing;  // past their latency
    double updated_s = 0.0;     // absolute date `remaining` refers to
    std::uint32_t generation = 0;
  };
  // Per GPU: transfers in flight leaving it (out) and arriving at it (in), SimGrid's and pipes'.
  struct LinkUse {
    int simgrid_out = 0;
    int simgrid_in = 0;
    int pipe_out = 0;
    int pipe_in = 0;
    int pipe_from = -1;  // the sender of the pipe transfers arriving, while pipe_in > 0
  };

  // Fixed-time events (latencies, pipe delays and ends) wait in one queue of the graph's own; SimGrid holds a
  // kernel timer at the earliest, so a step costs SimGrid one timer per distinct date rather than per event.
  enum class EventKind : std::uint8_t { kLatencyDone, kPipeDelayDone, kPipeLatencyDone, kPipeDue };
  struct Event {
    double date = 0.0;
    int index = 0;  // a node, or a pipe (kPipeDue)
    std::uint32_t generation = 0;
    EventKind kind = EventKind::kLatencyDone;
    // Events of one date may run in any order: each only completes or advances nodes at that date.
    bool operator>(const Event& o) const { return date > o.date; }
  };
  void schedule(double date, EventKind kind, int index, std::uint32_t generation = 0);
  void arm(double date);
  void on_timer();
  bool simgrid_quiet_before(double date) const;
  void handle(const Event& e);

  NodeId add(Kind kind, double amount, simgrid::s4u::Host* from, simgrid::s4u::Host* to);
  void start_node(NodeId n);
  void start_simgrid(NodeId n);
  void complete(NodeId n);
  void drain_ready();
  LinkUse& use(int gpu);
  void transfer_started(const Node& node);
  void transfer_done(const Node& node);
  void pipe_start(NodeId n);
  void pipe_flowing(NodeId n);
  void pipe_advance(Pipe& p, double now);
  void pipe_schedule(int pipe);
  void pipe_event(int pipe, std::uint32_t generation);

  std::vector<Node> nodes_;
  std::vector<int> pending_;                     // per node: predecessors not yet complete
  std::vector<simgrid::s4u::ActivityPtr> held_;  // the SimGrid activities started, held until the graph goes
  std::vector<std::pair<NodeId, NodeId>> edges_;
  std::vector<int> succ_begin_;  // CSR successors, built by run()
  std::vector<NodeId> succ_;
  std::vector<NodeId> ready_;  // scratch stack for zero-time cascades
  std::vector<std::pair<NodeId, std::string>> labels_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  // The graph's clock (absolute, SimGrid's scale). It runs ahead of SimGrid's inside on_timer() while
  // SimGrid has nothing that could happen first; activities SimGrid must run wait in deferred_ until its
  // clock catches up.
  double now_ = 0.0;
  double simgrid_now_ = 0.0;  // SimGrid's clock when it last called the graph
  std::vector<NodeId> deferred_;
  simgrid::kernel::timer::Timer* timer_ = nullptr;  // the one timer set, at timer_date_
  double timer_date_ = 0.0;
  bool in_timer_ = false;
  std::multiset<double> exec_bounds_;  // bound_s of the executions in flight
  int comms_in_flight_ = 0;
  static constexpr double kBoundMargin = 1e-9;  // s; SimGrid's timing precision here is 1e-11 s
  std::vector<Pipe> pipes_;
  std::vector<int> pipe_index_;  // [2 × from_gpu + across] -> pipe, -1 until made
  std::vector<LinkUse> link_use_;
  double origin_ = 0.0;
  std::int64_t activities_ = 0;
  std::int64_t pipe_transfers_ = 0;
  bool pipes_exact_ = true;
  std::size_t completed_ = 0;
};

}  // namespace dcpsim::sim::detail
