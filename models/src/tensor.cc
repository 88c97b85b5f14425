// Layout checks: a strided buffer is accepted only when no two logical elements share storage.
#include "dcpsim/models/tensor.h"

#include <string>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

}  // namespace

OutLayout OutLayout::dense(int rows, int heads, int dim) {
  return padded(rows, heads, dim, 0);
}

OutLayout OutLayout::padded(int rows, int heads, int dim, std::int64_t pad) {
  return OutLayout{rows, heads, dim, static_cast<std::int64_t>(heads) * dim + pad, dim};
}

std::int64_t OutLayout::storage_size() const {
  if (rows == 0 || heads == 0 || dim == 0) return 0;
  return index(rows - 1, heads - 1, dim - 1) + 1;
}

void OutLayout::validate() const {
  if (rows < 0) throw InputError("output layout: rows = " + str(rows) + " is negative");
  if (heads < 1) throw InputError("output layout: heads = " + str(heads) + " (must be >= 1)");
  if (dim < 1) throw InputError("output layout: head dim = " + str(dim) + " (must be >= 1)");
  if (head_stride < dim) {
    throw InputError("output layout: head stride " + str(head_stride) + " is smaller than the head dim " +
                     str(dim) + " (heads would overlap)");
  }
  if (row_stride < heads * head_stride) {
    throw InputError("output layout: row stride " + str(row_stride) +
                     " is smaller than heads x head stride = " + str(heads * head_stride) +
                     " (rows would overlap)");
  }
}

LseLayout LseLayout::dense(int rows, int heads) {
  return LseLayout{rows, heads, heads, 1};
}
LseLayout LseLayout::transposed(int rows, int heads) {
  return LseLayout{rows, heads, 1, rows};
}

std::int64_t LseLayout::storage_size() const {
  if (rows == 0 || heads == 0) return 0;
  return index(rows - 1, heads - 1) + 1;
}

void LseLayout::validate() const {
  if (rows < 0) throw InputError("LSE layout: rows = " + str(rows) + " is negative");
  if (heads < 1) throw InputError("LSE layout: heads = " + str(heads) + " (must be >= 1)");
  const bool row_major = head_stride == 1 && row_stride >= heads;
  const bool head_major = row_stride == 1 && head_stride >= rows;
  if (!row_major && !head_major) {
    throw InputError("LSE layout: strides (row " + str(row_stride) + ", head " + str(head_stride) +
                     ") are neither [B][H] (head stride 1, row stride >= " + str(heads) +
                     ") nor [H][B] (row stride 1, head stride >= " + str(rows) + ")");
  }
}

void Partial::validate() const {
  out_layout.validate();
  lse_layout.validate();
  if (out_layout.rows != lse_layout.rows || out_layout.heads != lse_layout.heads) {
    throw InputError("partial: output is [" + str(out_layout.rows) + " rows][" + str(out_layout.heads) +
                     " heads] but LSE is [" + str(lse_layout.rows) + "][" + str(lse_layout.heads) + "]");
  }
  if (static_cast<std::int64_t>(out.size()) < out_layout.storage_size()) {
    throw InputError("partial: output buffer holds " + str(static_cast<std::int64_t>(out.size())) +
                     " values but its layout needs " + str(out_layout.storage_size()));
  }
  if (static_cast<std::int64_t>(lse.size()) < lse_layout.storage_size()) {
    throw InputError("partial: LSE buffer holds " + str(static_cast<std::int64_t>(lse.size())) +
                     " values but its layout needs " + str(lse_layout.storage_size()));
  }
}

Partial relayout(const Partial& p, const OutLayout& out_layout, const LseLayout& lse_layout, double fill) {
  p.validate();
  Partial r{out_layout, {}, lse_layout, {}};
  r.out.assign(static_cast<std::size_t>(out_layout.storage_size()), fill);
  r.lse.assign(static_cast<std::size_t>(lse_layout.storage_size()), fill);
  r.validate();
  if (out_layout.rows != p.out_layout.rows || out_layout.heads != p.out_layout.heads ||
      out_layout.dim != p.out_layout.dim) {
    throw InputError("relayout: the new layout changes the logical shape");
  }
  for (int b = 0; b < out_layout.rows; ++b) {
    for (int h = 0; h < out_layout.heads; ++h) {
      r.lse[r.lse_layout.index(b, h)] = p.l(b, h);
      for (int d = 0; d < out_layout.dim; ++d) r.out[r.out_layout.index(b, h, d)] = p.o(b, h, d);
    }
  }
  return r;
}

}  // namespace dcpsim::models
