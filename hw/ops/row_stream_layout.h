#pragma once
// The row-streaming merge's memory layout (docs/SPEC.md "row-stream"): each owner's receive window, the
// per-row flags and the producers' per-row counters, and the host-side sizing of the emulated step. Plain
// C++ with no CUDA types, shared by the kernels (attention's push epilogue, the post-kernel push, the
// owner's combine), the runner and the CPU tests.
//
// Owner n keeps, per buffer parity (epoch & 1):
//   O      [N_src][rows][J][D]  output element type (J = H/N heads per owner)
//   LSE    [N_src][rows][J]     fp32, the attention's base
//   flags  [N_src][rows]        u64, the epoch of the step whose row `row` of rank `src` has landed
// and each producer rank keeps counters [rows][N_owner] (u64, never reset): a block that has stored k heads
// of (row, owner) adds k; the add that reaches epoch·J raises the flag (every step adds exactly J per pair).
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#if defined(__CUDACC__)
#define DCPSIM_HD __host__ __device__
#else
#define DCPSIM_HD
#endif

namespace dcpsim::hw::row_stream {

struct Shape {
  int dcp = 1;
  int rows = 0;             // rows of the window (the step's B', padding rows included)
  int heads_per_owner = 0;  // J = H / N
  int dim = 0;              // D
};

DCPSIM_HD inline int owner_of(int head, int heads_per_owner) {
  return head / heads_per_owner;
}

// Of heads [h0, h1), how many belong to owner n.
DCPSIM_HD inline int heads_for_owner(int h0, int h1, int owner, int heads_per_owner) {
  const int lo = h0 > owner * heads_per_owner ? h0 : owner * heads_per_owner;
  const int hi = h1 < (owner + 1) * heads_per_owner ? h1 : (owner + 1) * heads_per_owner;
  return hi > lo ? hi - lo : 0;
}

// Index of (src, row, j) in an owner's LSE window; times D, the first element of its O slice.
DCPSIM_HD inline std::int64_t slot(const Shape& s, int src, int row, int j) {
  return (std::int64_t(src) * s.rows + row) * s.heads_per_owner + j;
}
DCPSIM_HD inline std::int64_t o_offset(const Shape& s, int src, int row, int j) {
  return slot(s, src, row, j) * s.dim;
}
DCPSIM_HD inline std::int64_t flag_index(const Shape& s, int src, int row) {
  return std::int64_t(src) * s.rows + row;
}
DCPSIM_HD inline std::int64_t counter_index(const Shape& s, int row, int owner) {
  return std::int64_t(row) * s.dcp + owner;
}
// The counter value at which the pair (row, owner) is complete in step `epoch` (epochs count from 1).
DCPSIM_HD inline unsigned long long publish_count(unsigned long long epoch, int heads_per_owner) {
  return epoch * static_cast<unsigned long long>(heads_per_owner);
}

// The combine's optional probe (`hw run --row-probe`): per item, %globaltimer when its warp had claimed it,
// saw the row's flags, held its LSEs, held its weights, held its first partials, and had stored its output;
// then who merged it: (tail grid << 63) | (early tail << 62) | (SM << 32) | warp of the grid. The register
// combine loads each source's LSEs and partials as the source lands (one round when the row is complete):
// its "LSEs" and "weights" both mark the weights formed (the LSEs' arrival), and its "first partials" the
// first head merged and stored (the partials' arrival).
enum ProbeSlot : int {
  kProbeClaimed,
  kProbeFlags,
  kProbeLse,
  kProbeWeights,
  kProbePartials,
  kProbeStored,
  kProbeWho,
  kProbeSlots
};

// Elements of one parity of a window, and of a producer's counters.
DCPSIM_HD inline std::int64_t o_elems(const Shape& s) {
  return std::int64_t(s.dcp) * s.rows * s.heads_per_owner * s.dim;
}
DCPSIM_HD inline std::int64_t lse_elems(const Shape& s) {
  return std::int64_t(s.dcp) * s.rows * s.heads_per_owner;
}
DCPSIM_HD inline std::int64_t flag_elems(const Shape& s) {
  return std::int64_t(s.dcp) * s.rows;
}
DCPSIM_HD inline std::int64_t counter_elems(const Shape& s) {
  return std::int64_t(s.rows) * s.dcp;
}

// The owner's combine works on items of up to heads_per_item(J, D) heads of one row, rows in order, so the
// rows that land last are shared by several blocks: about 1024 output elements per item.
inline int heads_per_item(int heads_per_owner, int dim) {
  return std::clamp(1024 / std::max(dim, 1), 1, std::max(heads_per_owner, 1));
}
inline int items_per_row(int heads_per_owner, int dim) {
  const int h = heads_per_item(heads_per_owner, dim);
  return (heads_per_owner + h - 1) / h;
}

// Blocks of one owner's combine, for `work` blocks' worth of items. The streaming grid spins beside the
// producers and holds whole multiprocessors, so the streaming grids of every rank sharing a device together
// take at most 1/16 of it (at least one block each: emulation refuses more ranks than half the device's
// multiprocessors, so the producers always keep the rest). The tail grid starts once the producers are done,
// beside the streaming grids, and takes what they leave (a block holds a multiprocessor's shared memory, so
// more would wait for a streaming grid to exit).
inline int combine_blocks(int multiprocessors, int ranks_on_device, std::int64_t work, bool tail) {
  const int ranks = std::max(ranks_on_device, 1);
  const int streaming = std::max(1, multiprocessors / (16 * ranks));
  const int cap = tail ? std::max(1, (multiprocessors - ranks * streaming) / ranks) : streaming;
  return static_cast<int>(std::clamp<std::int64_t>(work, 1, cap));
}

// Emulation: rows per attention launch, so that one launch of every rank together fills about half the
// device (`rows_per_wave` rows fill it once for one rank); the ranks' launches are interleaved round by round
// and the logical ranks progress together, as N devices would.
inline int rows_per_chunk(int rows_per_wave, int dcp) {
  return std::max(1, rows_per_wave / (2 * std::max(dcp, 1)));
}

// [begin, end) row ranges of `chunk` rows covering [0, rows).
inline std::vector<std::pair<int, int>> row_chunks(int rows, int chunk) {
  std::vector<std::pair<int, int>> out;
  chunk = std::max(chunk, 1);
  for (int b = 0; b < rows; b += chunk) out.emplace_back(b, std::min(rows, b + chunk));
  return out;
}

}  // namespace dcpsim::hw::row_stream
