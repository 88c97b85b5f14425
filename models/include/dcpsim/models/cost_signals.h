#pragma once
// Flags for the direct (one-shot) strategy: each rank writes its blocks into the owners' buffers over NVLink,
// then sets an epoch-stamped flag; the owner polls until it has seen N flags.
#include "dcpsim/models/profile.h"

namespace dcpsim::models {

// A flag store becoming visible at the peer.
double flag_write_latency(const HardwareProfile& p);
// Expected extra wait of a poller for a flag that lands at a uniformly random moment: half the interval.
double expected_poll_wait(const HardwareProfile& p);
// Per-step cost of flipping the double-buffer epoch (once per step, not per flag): inside a merge kernel,
// one grid-wide arrive and poll.
double epoch_handshake_time(const HardwareProfile& p);
// One grid-wide barrier inside a kernel (a cooperative grid sync: every block arrives at a counter and polls
// it). Priced as the epoch handshake, which is one such arrive and poll (FlashInfer's fused DCP merge flips
// its epoch with exactly this barrier).
double grid_barrier_time(const HardwareProfile& p);
// From the writer's last data store to the owner seeing the flag: flag_write_latency + expected_poll_wait.
double flag_signal_time(const HardwareProfile& p);
// What a kernel's stores into a peer's memory reach, one way (nvlink.store_bandwidth; without it the
// peer-copy nvlink.measured_bandwidth): the direct, row-stream and FlashInfer pushes.
double peer_store_bandwidth(const HardwareProfile& p);
// measured_bandwidth / peer_store_bandwidth: the simulator's links run at the peer-copy bandwidth, so a push
// of B bytes is a transfer of B × this.
double store_transfer_factor(const HardwareProfile& p);
// One push of `bytes` into a peer and its flag seen by the owner: hop latency + bytes / store bandwidth +
// flag_signal_time (the one-sided merge's exchange, alone on the links).
double one_sided_exchange_time(const HardwareProfile& p, double bytes);

}  // namespace dcpsim::models
