#include "exchange.h"

#include "cuda_check.h"

namespace dcpsim::hw {
namespace {

ncclDataType_t nccl_type(ops::Elem e) {
  switch (e) {
    case ops::Elem::kF32:
      return ncclFloat32;
    case ops::Elem::kBF16:
      return ncclBfloat16;
    case ops::Elem::kF16:
      return ncclFloat16;
  }
  return ncclFloat32;
}

std::uint8_t* bytes_of(const RankState& r, Buf b) {
  return static_cast<std::uint8_t*>(r.buf(b));
}

}  // namespace

void EmulatedExchange::all_gather(RankState& r, Buf send, Buf recv, std::size_t bytes) {
  for (std::size_t n = 0; n < ranks_.size(); ++n)
    DCPSIM_CUDA(cudaMemcpyAsync(bytes_of(r, recv) + n * bytes, bytes_of(*ranks_[n], send), bytes,
                                cudaMemcpyDeviceToDevice, r.stream));
}

void EmulatedExchange::all_to_all(RankState& r, Buf send, Buf recv, std::size_t bytes) {
  for (std::size_t n = 0; n < ranks_.size(); ++n)
    DCPSIM_CUDA(cudaMemcpyAsync(bytes_of(r, recv) + n * bytes, bytes_of(*ranks_[n], send) + r.rank * bytes,
                                bytes, cudaMemcpyDeviceToDevice, r.stream));
}

const void* const* EmulatedExchange::table(int rank, Buf send, std::size_t byte_offset) {
  const std::size_t key =
      (static_cast<std::size_t>(rank) * 16 + static_cast<std::size_t>(send)) ^ (byte_offset << 20);
  for (const auto& [k, t] : index_)
    if (k == key) return t;
  std::vector<const void*> ptrs;
  for (const auto& rk : ranks_) ptrs.push_back(bytes_of(*rk, send) + byte_offset);
  tables_.push_back(upload(ptrs));
  index_.emplace_back(key, tables_.back().as<const void* const>());
  return index_.back().second;
}

void EmulatedExchange::reduce_scatter(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) {
  ops::ReduceArgs a;
  a.inputs = static_cast<int>(ranks_.size());
  a.ptrs = table(r.rank, send, r.rank * count * ops::elem_bytes(e));
  a.count = static_cast<std::int64_t>(count);
  a.elem = e;
  a.out = r.buf(recv);
  ops::launch_reduce_sum(a, r.stream);
}

void EmulatedExchange::all_reduce(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) {
  ops::ReduceArgs a;
  a.inputs = static_cast<int>(ranks_.size());
  a.ptrs = table(r.rank, send, 0);
  a.count = static_cast<std::int64_t>(count);
  a.elem = e;
  a.out = r.buf(recv);
  ops::launch_reduce_sum(a, r.stream);
}

NcclExchange::~NcclExchange() {
  for (auto c : comms_) ncclCommDestroy(c);
}

void NcclExchange::abort() {
  for (auto c : comms_) ncclCommAbort(c);
  comms_.clear();
}

void NcclExchange::all_gather(RankState& r, Buf send, Buf recv, std::size_t bytes) {
  DCPSIM_NCCL(ncclAllGather(r.buf(send), r.buf(recv), bytes, ncclUint8, comm(r), r.stream));
}

void NcclExchange::reduce_scatter(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) {
  DCPSIM_NCCL(ncclReduceScatter(r.buf(send), r.buf(recv), count, nccl_type(e), ncclSum, comm(r), r.stream));
}

void NcclExchange::all_reduce(RankState& r, Buf send, Buf recv, std::size_t count, ops::Elem e) {
  DCPSIM_NCCL(ncclAllReduce(r.buf(send), r.buf(recv), count, nccl_type(e), ncclSum, comm(r), r.stream));
}

void NcclExchange::all_to_all(RankState& r, Buf send, Buf recv, std::size_t bytes) {
  int n_ranks = 0;
  DCPSIM_NCCL(ncclCommCount(comm(r), &n_ranks));
  DCPSIM_NCCL(ncclGroupStart());
  for (int n = 0; n < n_ranks; ++n) {
    DCPSIM_NCCL(ncclSend(bytes_of(r, send) + n * bytes, bytes, ncclUint8, n, comm(r), r.stream));
    DCPSIM_NCCL(ncclRecv(bytes_of(r, recv) + n * bytes, bytes, ncclUint8, n, comm(r), r.stream));
  }
  DCPSIM_NCCL(ncclGroupEnd());
}

}  // namespace dcpsim::hw
