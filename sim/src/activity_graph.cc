#include "activity_graph.h"

#include <cmath>

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
  nodes_.push_back(std::move(node));
  return static_cast<NodeId>(nodes_.size() - 1);
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
NodeId ActivityGraph::transfer(sg4::Host* from, sg4::Host* to, double bytes) {
  return add(Kind::kTransfer, bytes, from, to);
}

void ActivityGraph::after(NodeId before, NodeId node) {
  edges_.emplace_back(before, node);
  ++nodes_[node].pending;
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

void ActivityGraph::start_node(NodeId n) {
  Node& node = nodes_[n];
  const double now = SimEngine::now();
  node.start_s = now - origin_;
  const bool instant = node.kind == Kind::kJoin || (node.kind != Kind::kTransfer && node.amount <= 0);
  if (instant) {
    ready_.push_back(n);
    return;
  }
  const auto data = reinterpret_cast<void*>(static_cast<std::intptr_t>(n));
  switch (node.kind) {
    case Kind::kLatency:
      simgrid::kernel::timer::Timer::set(now + node.amount, [this, n] { on_activity_done(n); });
      break;
    case Kind::kExec: {
      sg4::ExecPtr exec = sg4::Exec::init();
      exec->set_flops_amount(node.amount * kHostSpeed);
      exec->set_host(node.from);
      exec->set_data(data);
      exec->start();
      node.activity = exec;
      ++activities_;
      break;
    }
    case Kind::kTransfer: {
      sg4::CommPtr comm = sg4::Comm::sendto_init(node.from, node.to);
      comm->set_payload_size(static_cast<std::uint64_t>(std::llround(node.amount)));
      comm->set_data(data);
      comm->start();
      node.activity = comm;
      ++activities_;
      break;
    }
    case Kind::kJoin:
      break;
  }
}

void ActivityGraph::on_activity_done(std::intptr_t id) {
  complete(static_cast<NodeId>(id));
  // Joins and zero-time nodes released by this completion finish at the same instant.
  while (!ready_.empty()) {
    const NodeId n = ready_.back();
    ready_.pop_back();
    complete(n);
  }
}

void ActivityGraph::complete(NodeId n) {
  Node& node = nodes_[n];
  node.end_s = SimEngine::now() - origin_;
  ++completed_;
  for (int i = succ_begin_[n]; i < succ_begin_[n + 1]; ++i) {
    const NodeId s = succ_[i];
    if (--nodes_[s].pending == 0) start_node(s);
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
  completed_ = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(nodes_.size()); ++n) {
    if (nodes_[n].pending == 0) start_node(n);
  }
  while (!ready_.empty()) {
    const NodeId n = ready_.back();
    ready_.pop_back();
    complete(n);
  }
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
                       " activities unfinished (" + what + "): some rank did not finish the step");
  }
}

}  // namespace dcpsim::sim::detail
