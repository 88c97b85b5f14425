#pragma once
// A dependency graph of simulated activities, run on SimGrid.
//
// Nodes are joins (done when their predecessors are), latencies (a fixed time that uses no resource: launch
// latency, protocol overhead, a poll; SimGrid kernel timers), executions (a kernel's analytic duration on its
// GPU host: an s4u::Exec) and transfers (bytes between two hosts: an s4u::Comm, sharing link bandwidth with
// every concurrent transfer). A node starts when its last predecessor completes. SimGrid activities are
// created only when they start: SimGrid keeps host-to-host transfers in one list it scans on every
// completion, so creating them all up front would make a step quadratic in its transfer count.
#include <cstdint>
#include <string>
#include <vector>

#include <simgrid/forward.h>
#include <simgrid/s4u/Activity.hpp>  // ActivityPtr release must see Activity's own overload

#include "sim_engine.h"

namespace dcpsim::sim::detail {

using NodeId = int;

class ActivityGraph final : public CompletionListener {
 public:
  NodeId join();
  NodeId latency(double seconds);
  NodeId exec(simgrid::s4u::Host* host, double seconds);
  NodeId transfer(simgrid::s4u::Host* from, simgrid::s4u::Host* to, double bytes);
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
  std::int64_t simgrid_activities() const { return activities_; }
  // Labels a node for error messages.
  void label(NodeId n, std::string text) { labels_.emplace_back(n, std::move(text)); }

  void on_activity_done(std::intptr_t id) override;

 private:
  enum class Kind : std::uint8_t { kJoin, kLatency, kExec, kTransfer };
  struct Node {
    Kind kind = Kind::kJoin;
    int pending = 0;
    double amount = 0.0;  // seconds or bytes
    simgrid::s4u::Host* from = nullptr;
    simgrid::s4u::Host* to = nullptr;
    double start_s = -1.0;
    double end_s = -1.0;
    simgrid::s4u::ActivityPtr activity;  // held until it completes
  };

  NodeId add(Kind kind, double amount, simgrid::s4u::Host* from, simgrid::s4u::Host* to);
  void start_node(NodeId n);
  void complete(NodeId n);

  std::vector<Node> nodes_;
  std::vector<std::pair<NodeId, NodeId>> edges_;
  std::vector<int> succ_begin_;  // CSR successors, built by run()
  std::vector<NodeId> succ_;
  std::vector<NodeId> ready_;  // scratch stack for zero-time cascades
  std::vector<std::pair<NodeId, std::string>> labels_;
  double origin_ = 0.0;
  std::int64_t activities_ = 0;
  std::size_t completed_ = 0;
};

}  // namespace dcpsim::sim::detail
