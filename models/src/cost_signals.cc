// Flag signalling for the direct strategy.
#include "dcpsim/models/cost_signals.h"

namespace dcpsim::models {

double flag_write_latency(const HardwareProfile& p) {
  return p.signal.flag_write_latency.si();
}

// The flag lands at a uniformly random point of the poller's interval, so on average half an interval passes
// before the next read sees it.
double expected_poll_wait(const HardwareProfile& p) {
  return 0.5 * p.signal.poll_interval.si();
}

double epoch_handshake_time(const HardwareProfile& p) {
  return p.signal.epoch_handshake.si();
}

double grid_barrier_time(const HardwareProfile& p) {
  return epoch_handshake_time(p);
}

double flag_signal_time(const HardwareProfile& p) {
  return flag_write_latency(p) + expected_poll_wait(p);
}

double peer_store_bandwidth(const HardwareProfile& p) {
  return p.nvlink.store_bandwidth ? p.nvlink.store_bandwidth->si() : p.nvlink.measured_bandwidth.si();
}

double store_transfer_factor(const HardwareProfile& p) {
  return p.nvlink.measured_bandwidth.si() / peer_store_bandwidth(p);
}

double one_sided_exchange_time(const HardwareProfile& p, double bytes) {
  return p.nvlink.hop_latency.si() + bytes / peer_store_bandwidth(p) + flag_signal_time(p);
}

}  // namespace dcpsim::models
