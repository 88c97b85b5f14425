#pragma once
// Plain tensors for the reference: values in std::vector<double> plus an explicit layout. Layouts exist
// because a rank's attention output may be head-padded (row stride > H·D) and its LSE stored transposed.
#include <cstdint>
#include <vector>

namespace dcpsim::models {

// O of one rank: logical shape [rows][heads][dim], element (b,h,d) at b·row_stride + h·head_stride + d.
struct OutLayout {
  int rows = 0;
  int heads = 0;
  int dim = 0;
  std::int64_t row_stride = 0;   // >= heads · head_stride
  std::int64_t head_stride = 0;  // >= dim

  static OutLayout dense(int rows, int heads, int dim);
  // Head-padded storage: heads · dim values then `pad` unused ones per row.
  static OutLayout padded(int rows, int heads, int dim, std::int64_t pad);
  std::int64_t index(int row, int head, int d) const { return row * row_stride + head * head_stride + d; }
  std::int64_t storage_size() const;  // elements a buffer must hold
  // Throws InputError naming the bad extent or stride (negative sizes, overlapping rows or heads).
  void validate() const;
};

// LSE of one rank: logical shape [rows][heads]; [B][H] storage (row-major) or [H][B] storage (transposed).
struct LseLayout {
  int rows = 0;
  int heads = 0;
  std::int64_t row_stride = 0;
  std::int64_t head_stride = 0;

  static LseLayout dense(int rows, int heads);       // [B][H]: row_stride = H, head_stride = 1
  static LseLayout transposed(int rows, int heads);  // [H][B]: row_stride = 1, head_stride = B
  std::int64_t index(int row, int head) const { return row * row_stride + head * head_stride; }
  std::int64_t storage_size() const;
  void validate()
      const;  // exactly one of the strides is 1 and the other spans the other extent, else InputError
};

// One rank's locally normalised attention result: O_r and L_r. Empty shards carry LSE −inf (or +inf, the
// FlashAttention marker) and whatever the producer left in O (the merge never reads it).
struct Partial {
  OutLayout out_layout;
  std::vector<double> out;
  LseLayout lse_layout;
  std::vector<double> lse;

  double o(int row, int head, int d) const { return out[out_layout.index(row, head, d)]; }
  double l(int row, int head) const { return lse[lse_layout.index(row, head)]; }
  // Throws InputError when the layouts are invalid or a buffer is smaller than its layout needs.
  void validate() const;
};

// Same values, new layouts (for testing strided consumers against dense ones). Padding is filled with `fill`.
Partial relayout(const Partial& p, const OutLayout& out_layout, const LseLayout& lse_layout, double fill);

}  // namespace dcpsim::models
