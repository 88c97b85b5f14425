#pragma once
// The packed all-to-all layout (SPEC "Packed A2A layout"): rank r sends to each destination n one block
// [B][H/N][D + P] in the output dtype holding its O for heads [n·H/N, (n+1)·H/N) followed by the LSE bits:
// P = 2 lanes for 16-bit outputs (fp32 LSE bit pattern, low 16 bits in lane D, high 16 bits in lane D+1), P =
// 1 for fp32 outputs (the fp32 LSE itself). kF64 outputs (reference only) use P = 1 with the fp64 LSE.
#include <cstdint>
#include <vector>

#include "dcpsim/models/tensor.h"
#include "dcpsim/models/types.h"

namespace dcpsim::models {

// Little-endian bytes laid out exactly as the GPU buffer: [N_dest][B][H/N][D + P] elements of `dtype`.
struct A2aBuffer {
  DType dtype = DType::kBF16;
  int blocks = 0;  // N_dest (send side) or N_src (receive side)
  int rows = 0;
  int heads_per_block = 0;  // H/N
  int dim = 0;
  std::vector<std::uint8_t> bytes;

  int lanes() const { return dim + lse_lanes(dtype); }
  std::int64_t element_index(int block, int row, int head, int lane) const {
    return ((static_cast<std::int64_t>(block) * rows + row) * heads_per_block + head) * lanes() + lane;
  }
  static int lse_lanes(DType dtype);  // P
};

// Packs rank's partial (O already in `dtype`; values are rounded to `dtype` if not) for `dcp` destinations.
// The LSE is stored as its fp32 bit pattern, so NaN payloads and infinities travel unchanged. Throws
// InputError when H is not divisible by dcp.
A2aBuffer pack_a2a(const Partial& partial, int dcp, DType dtype);

// The all-to-all itself, a pure permutation: receive[r] block n = send[n] block r.
std::vector<A2aBuffer> all_to_all(const std::vector<A2aBuffer>& send);

// What the receiver reads back from source block n: O [B][H/N][D] and L [B][H/N] as dense Partial.
Partial unpack_a2a(const A2aBuffer& received, int source);

// Element access as values (O lanes) and the LSE read back from its lanes.
double a2a_value(const A2aBuffer& buffer, int block, int row, int head, int lane);
double a2a_lse(const A2aBuffer& buffer, int block, int row, int head);

}  // namespace dcpsim::models
