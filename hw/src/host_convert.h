#pragma once
// Host-side conversion between the reference's doubles and the bytes of device tensors (bf16/fp16/fp32),
// using the reference's own rounding (models/dtype.h) so both sides agree bit for bit.
#include <cstdint>
#include <cstring>
#include <vector>

#include "dcpsim/models/dtype.h"
#include "ops.h"

namespace dcpsim::hw {

inline std::vector<std::uint8_t> to_device_bytes(ops::Elem e, const std::vector<double>& v) {
  std::vector<std::uint8_t> out(v.size() * ops::elem_bytes(e));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (e == ops::Elem::kF32) {
      const float f = static_cast<float>(v[i]);
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const std::uint16_t bits = e == ops::Elem::kBF16 ? models::bf16_bits(v[i]) : models::fp16_bits(v[i]);
      std::memcpy(out.data() + 2 * i, &bits, 2);
    }
  }
  return out;
}

inline double device_value(ops::Elem e, const std::uint8_t* p) {
  if (e == ops::Elem::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
  return e == ops::Elem::kBF16 ? models::bf16_value(bits) : models::fp16_value(bits);
}

inline std::vector<double> from_device_bytes(ops::Elem e, const std::vector<std::uint8_t>& bytes) {
  const std::size_t n = bytes.size() / ops::elem_bytes(e);
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = device_value(e, bytes.data() + i * ops::elem_bytes(e));
  return out;
}

inline std::vector<float> to_floats(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}
inline std::vector<double> to_doubles(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

}  // namespace dcpsim::hw
