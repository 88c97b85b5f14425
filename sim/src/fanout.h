#pragma once
// One rank sending a block to each of many peers: the all-to-all of the a2a strategy and the pushes of the
// direct and row-stream strategies.
//
// Both grains keep the same schedule: a rank has at most W = SimOptions::peers_in_flight peers outstanding,
// taken in the order given.
//   pair    one SimGrid transfer per peer, GPU to GPU; the k-th (counting every send()) waits for the
//           (k − W)-th. The sender's uplink and each receiver's downlink are shared max-min with every
//           concurrent flow.
//   bundle  the peers are cut into windows of W (counting every send()); the peers of one send() in one
//           window become one SimGrid transfer per destination domain, from the GPU to that domain's
//           NVSwitch (platform.h), carrying all their bytes; it waits for the transfers that carried the
//           peers W places earlier. A bundle's flag is a latency (fanout.cc says why).
// When every rank enters its all-pairs phase at the same moment with the same bytes, each downlink carries
// what each uplink does and the two grains give the same times (to within the flags' bytes; tests/sim check
// it). With ranks out of step a bundle does not see contention at the receivers' ports. Bundles create W
// times fewer SimGrid transfers: SimGrid 3.32's cost per completed transfer grows with the transfers in
// flight, so the pair grain costs O(N^3) at N ranks and the bundle grain O(N^2 / W) (docs/PERFORMANCE.md).
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "step_graph.h"

namespace dcpsim::sim::detail {

class FanOut {
 public:
  // Sends from rank `from`; `what` names the transfers in the trace (a phase name).
  FanOut(StepGraph& step, int from, std::string_view what, int step_index = 0);
  const models::HardwareProfile& profile() const;

  struct Sent {
    std::vector<NodeId> data;    // per peer: the transfer that carries its block
    std::vector<NodeId> flag;    // per peer: the transfer that carries its flag (with flags)
    std::vector<int> flag_span;  // per peer: that flag's span index in StepGraph::spans (with flags)
  };
  struct Send {
    std::vector<int> peers;
    double bytes = 0.0;    // per peer, on the wire
    double payload = 0.0;  // per peer, as reported (bytes before protocol efficiency)
    // The node after which a transfer to `peer` may start; asked once per SimGrid transfer, so in bundle mode
    // for the first peer of each destination domain: it must be the same for every peer of a domain.
    std::function<NodeId(int peer)> gate;
    bool flags = false;  // follow each block with an epoch flag (models/cost_signals.h)
    int rows_begin = 0;  // rows the flags announce (trace spans)
    int rows_end = 0;
  };
  Sent send(const Send& send);

  // Every transfer this rank started: its sending kernel ends when they have drained.
  const std::vector<NodeId>& transfers() const { return transfers_; }

 private:
  // `to` >= 0: a GPU; -1 - d: domain d's NVSwitch.
  NodeId transfer(int to, double bytes, double payload, bool inter, int peers);
  NodeId flag(NodeId data, int to, double bytes, bool inter);

  StepGraph& step_;
  int from_;
  std::string_view what_;
  int step_index_;
  bool bundle_;
  std::vector<NodeId> carried_;  // per peer sent to, in issue order: the transfer that carried its block
  std::vector<NodeId> transfers_;
  // Scratch space reused by send() (a DCP72 step sends thousands of windows).
  std::vector<std::pair<int, std::vector<std::size_t>>> scratch_domains_;
  std::vector<NodeId> scratch_before_;
  std::vector<std::size_t> scratch_one_;
};

}  // namespace dcpsim::sim::detail
