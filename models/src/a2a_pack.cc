// Packed all-to-all buffers as little-endian bytes: a GPU buffer copied to the host compares byte by byte.
#include "dcpsim/models/a2a_pack.h"

#include <algorithm>
#include <bit>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/models/dtype.h"

namespace dcpsim::models {
namespace {

void put(std::vector<std::uint8_t>& bytes, std::int64_t offset, std::uint64_t bits, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) bytes[offset + i] = static_cast<std::uint8_t>(bits >> (8 * i));
}

std::uint64_t get(const std::vector<std::uint8_t>& bytes, std::int64_t offset, std::size_t size) {
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < size; ++i) bits |= static_cast<std::uint64_t>(bytes[offset + i]) << (8 * i);
  return bits;
}

// The stored bit pattern of a value in `dtype` (round-to-nearest-even; NaN payloads kept).
std::uint64_t encode(DType dtype, double x) {
  switch (dtype) {
    case DType::kBF16:
      return bf16_bits(x);
    case DType::kF16:
      return fp16_bits(x);
    case DType::kF32:
      return fp32_bits(static_cast<float>(round_to(DType::kF32, x)));
    case DType::kF64:
      return std::bit_cast<std::uint64_t>(x);
    case DType::kFP8E4M3:  // never an output type (Scenario::validate)
      break;
  }
  return 0;
}

double decode(DType dtype, std::uint64_t bits) {
  switch (dtype) {
    case DType::kBF16:
      return bf16_value(static_cast<std::uint16_t>(bits));
    case DType::kF16:
      return fp16_value(static_cast<std::uint16_t>(bits));
    case DType::kF32:
      return fp32_value(static_cast<std::uint32_t>(bits));
    case DType::kF64:
      return std::bit_cast<double>(bits);
    case DType::kFP8E4M3:  // never an output type (Scenario::validate)
      break;
  }
  return 0.0;
}

std::uint64_t lse_bits(DType dtype, double lse) {
  if (dtype == DType::kF64) return std::bit_cast<std::uint64_t>(lse);
  return fp32_bits(static_cast<float>(round_to(DType::kF32, lse)));
}

void check_block(const A2aBuffer& b, int block) {
  if (block < 0 || block >= b.blocks) {
    throw InputError("A2A block " + std::to_string(block) + " is outside [0, " + std::to_string(b.blocks) +
                     ")");
  }
}

}  // namespace

int A2aBuffer::lse_lanes(DType dtype) {
  return dtype_bytes(dtype) == 2 ? 2 : 1;
}

A2aBuffer pack_a2a(const Partial& partial, int dcp, DType dtype) {
  partial.validate();
  const OutLayout& l = partial.out_layout;
  if (dcp < 1) throw InputError("dcp = " + std::to_string(dcp) + " is not allowed (must be >= 1)");
  if (l.heads % dcp != 0) {
    throw InputError("heads = " + std::to_string(l.heads) + " is not divisible by dcp = " +
                     std::to_string(dcp) + ", which the packed A2A layout needs");
  }
  A2aBuffer buf{dtype, dcp, l.rows, l.heads / dcp, l.dim, {}};
  const std::size_t size = dtype_bytes(dtype);
  buf.bytes.assign(static_cast<std::size_t>(buf.element_index(dcp, 0, 0, 0)) * size, 0);
  for (int n = 0; n < dcp; ++n) {
    for (int b = 0; b < l.rows; ++b) {
      for (int hl = 0; hl < buf.heads_per_block; ++hl) {
        const int h = n * buf.heads_per_block + hl;
        const std::int64_t lane0 = buf.element_index(n, b, hl, 0);
        const double* o = partial.out.data() + l.index(b, h, 0);
        for (int d = 0; d < l.dim; ++d) put(buf.bytes, (lane0 + d) * size, encode(dtype, o[d]), size);
        const std::uint64_t bits = lse_bits(dtype, partial.l(b, h));
        if (size == 2) {  // fp32 LSE split across two 16-bit lanes, low half first
          put(buf.bytes, buf.element_index(n, b, hl, l.dim) * size, bits & 0xffff, 2);
          put(buf.bytes, buf.element_index(n, b, hl, l.dim + 1) * size, bits >> 16, 2);
        } else {
          put(buf.bytes, buf.element_index(n, b, hl, l.dim) * size, bits, size);
        }
      }
    }
  }
  return buf;
}

std::vector<A2aBuffer> all_to_all(const std::vector<A2aBuffer>& send) {
  const int n = static_cast<int>(send.size());
  for (int r = 0; r < n; ++r) {
    const A2aBuffer& s = send[r];
    if (s.blocks != n || s.dtype != send[0].dtype || s.rows != send[0].rows ||
        s.heads_per_block != send[0].heads_per_block || s.dim != send[0].dim) {
      throw InputError("all-to-all: rank " + std::to_string(r) +
                       "'s send buffer does not match rank 0's shape or has " + std::to_string(s.blocks) +
                       " blocks for " + std::to_string(n) + " ranks");
    }
  }
  std::vector<A2aBuffer> received(send.begin(), send.end());
  if (n == 0) return received;
  const std::size_t block_bytes = send[0].bytes.size() / static_cast<std::size_t>(n);
  for (int r = 0; r < n; ++r) {
    for (int src = 0; src < n; ++src) {
      std::copy_n(send[src].bytes.begin() + r * block_bytes, block_bytes,
                  received[r].bytes.begin() + src * block_bytes);
    }
  }
  return received;
}

namespace {

double value_at(const A2aBuffer& buffer, std::int64_t element) {
  const std::size_t size = dtype_bytes(buffer.dtype);
  return decode(buffer.dtype, get(buffer.bytes, element * static_cast<std::int64_t>(size), size));
}

// The LSE stored from lane D of the (block, row, head) whose lane 0 is `element`.
double lse_at(const A2aBuffer& buffer, std::int64_t element) {
  const std::size_t size = dtype_bytes(buffer.dtype);
  const std::int64_t at = (element + buffer.dim) * static_cast<std::int64_t>(size);
  if (buffer.dtype == DType::kF64) return std::bit_cast<double>(get(buffer.bytes, at, size));
  const std::uint64_t bits =
      size == 2 ? get(buffer.bytes, at, 2) | (get(buffer.bytes, at + 2, 2) << 16) : get(buffer.bytes, at, 4);
  return static_cast<double>(fp32_value(static_cast<std::uint32_t>(bits)));
}

}  // namespace

double a2a_value(const A2aBuffer& buffer, int block, int row, int head, int lane) {
  check_block(buffer, block);
  return value_at(buffer, buffer.element_index(block, row, head, lane));
}

double a2a_lse(const A2aBuffer& buffer, int block, int row, int head) {
  check_block(buffer, block);
  return lse_at(buffer, buffer.element_index(block, row, head, 0));
}

Partial unpack_a2a(const A2aBuffer& received, int source) {
  check_block(received, source);
  Partial p{OutLayout::dense(received.rows, received.heads_per_block, received.dim),
            {},
            LseLayout::dense(received.rows, received.heads_per_block),
            {}};
  p.out.resize(static_cast<std::size_t>(p.out_layout.storage_size()));
  p.lse.resize(static_cast<std::size_t>(p.lse_layout.storage_size()));
  for (int b = 0; b < received.rows; ++b) {
    for (int h = 0; h < received.heads_per_block; ++h) {
      const std::int64_t lane0 = received.element_index(source, b, h, 0);
      for (int d = 0; d < received.dim; ++d)
        p.out[p.out_layout.index(b, h, d)] = value_at(received, lane0 + d);
      p.lse[p.lse_layout.index(b, h)] = lse_at(received, lane0);
    }
  }
  return p;
}

}  // namespace dcpsim::models
