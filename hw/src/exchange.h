#pragma once
// The collectives of a step, called by each rank on its own stream. NcclExchange runs the real NCCL
// collectives (one communicator per rank); EmulatedExchange stands in for them when N logical ranks share one
// device: rank r pulls what it would receive from the other ranks' buffers with device copies and a reduction
// kernel.
#include <nccl.h>

#include <cstddef>
#include <vector>

#include "device_buffer.h"
#include "ops.h"
#include "rank_state.h"

namespace dcpsim::hw {

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual bool emulated() const = 0;
  // recv[n] = send of rank n; `bytes` per rank.
  virtual void all_gather(RankState& r, Buf send, Buf recv, std::size_t bytes) = 0;
  // recv = Σ_n block r of send_n; `count` elements per block.
  virtual void reduce_scatter(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) = 0;
  // recv = Σ_n send_n over `count` elements.
  virtual void all_reduce(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) = 0;
  // recv block n = block r of send_n; `bytes` per block.
  virtual void all_to_all(RankState& r, Buf send, Buf recv, std::size_t bytes) = 0;
};

class EmulatedExchange final : public Exchange {
 public:
  explicit EmulatedExchange(const Ranks& ranks) : ranks_(ranks) {}
  bool emulated() const override { return true; }
  void all_gather(RankState& r, Buf send, Buf recv, std::size_t bytes) override;
  void reduce_scatter(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) override;
  void all_reduce(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) override;
  void all_to_all(RankState& r, Buf send, Buf recv, std::size_t bytes) override;

 private:
  // The reduction kernel's table of N source pointers for (rank, buffer, offset), built once and kept (the
  // pointers must outlive a captured graph).
  const void* const* table(int rank, Buf send, std::size_t byte_offset);
  const Ranks& ranks_;
  std::vector<DeviceBuffer> tables_;
  std::vector<std::pair<std::size_t, const void* const*>> index_;
};

class NcclExchange final : public Exchange {
 public:
  // comms[r] belongs to rank r (threads), or the one communicator of this process (MPI); destroyed here.
  explicit NcclExchange(std::vector<ncclComm_t> comms) : comms_(std::move(comms)) {}
  ~NcclExchange() override;
  bool emulated() const override { return false; }
  // After a failed rank: abort the communicators so no peer stays blocked in a collective.
  void abort();
  void all_gather(RankState& r, Buf send, Buf recv, std::size_t bytes) override;
  void reduce_scatter(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) override;
  void all_reduce(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) override;
  void all_to_all(RankState& r, Buf send, Buf recv, std::size_t bytes) override;

 private:
  ncclComm_t comm(const RankState& r) const { return comms_.size() == 1 ? comms_[0] : comms_[r.rank]; }
  std::vector<ncclComm_t> comms_;
};

}  // namespace dcpsim::hw
