#pragma once
// The one-kernel direct merge's protocol, as plain arithmetic shared by the kernel, the host and the CPU
// tests (no CUDA types; the kernel includes it too).
//
// Every owner rank n exposes one window (an NCCL symmetric window across GPUs, a plain device allocation in
// emulation) laid out as DirectLayout says: epoch flags [2][N_src] (u64), chunk flags [2][N_src][C] (u64),
// then O slots [2][N_src][B][H/N][D] in the output type, then LSE slots [2][N_src][B][H/N] (fp32), each
// region 256-byte aligned so 16-byte vector stores stay aligned. Writer r sends head h of its O [B][H][D] to
// owner owner_of(h) as that owner's head local_head(h), into slot r of the step's buffer (parity = epoch &
// 1), then raises a flag of that buffer with the epoch. Two granularities share the layout:
//   - per source ("grid" kernel): flag r once all of r's stores to every owner are done;
//   - per chunk ("chunk" kernel, the default): an owner's (row, local head) pairs of the valid rows, in row-
//     major order, are cut into chunks of kChunkPairs; writer r raises chunk flag (r, c) in owner n's window
//     once it has stored chunk c of n's pairs, and n combines chunk c as soon as every source's flag (s, c)
//     holds the epoch, so no block waits for the whole of another rank's stores.
// Owners wait for flag == epoch from every source, combine, and never read a buffer a writer may be filling:
// a writer reaches step e + 2 only after its own step e + 1 saw every flag the owner raises in step e + 1,
// which the owner does after it finished step e (one kernel per rank per step, in stream order).
#include <cstddef>
#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define DCPSIM_HOST_DEVICE __host__ __device__
#else
#define DCPSIM_HOST_DEVICE
#endif

namespace dcpsim::hw {

struct DirectLayout {
  int dcp = 1;         // N: sources (and owners)
  int rows = 0;        // B (rows of the step, padding rows included)
  int heads = 0;       // heads per owner, H/N
  int dim = 0;         // D
  int elem_bytes = 2;  // the output type's size

  static constexpr std::size_t kAlign = 256;
  static constexpr int kChunkPairs = 8;  // an owner's (row, local head) pairs per chunk flag
  DCPSIM_HOST_DEVICE static constexpr std::size_t align(std::size_t b) {
    return (b + kAlign - 1) / kAlign * kAlign;
  }
  DCPSIM_HOST_DEVICE static constexpr int parity(unsigned long long epoch) { return int(epoch & 1ull); }

  // (source, row, head) entries of one buffer.
  DCPSIM_HOST_DEVICE std::size_t entries() const { return std::size_t(dcp) * rows * heads; }
  DCPSIM_HOST_DEVICE std::size_t entry(int src, int row, int head) const {
    return (std::size_t(src) * rows + row) * heads + head;
  }
  // Chunks of an owner's pairs when `valid_rows` rows are sent (the window holds flags for every row).
  DCPSIM_HOST_DEVICE int chunks(int valid_rows) const {
    return (valid_rows * heads + kChunkPairs - 1) / kChunkPairs;
  }
  DCPSIM_HOST_DEVICE std::size_t source_flags_bytes() const { return align(2 * std::size_t(dcp) * 8); }
  DCPSIM_HOST_DEVICE std::size_t flags_bytes() const {
    return source_flags_bytes() + align(2 * std::size_t(dcp) * chunks(rows) * 8);
  }
  DCPSIM_HOST_DEVICE std::size_t o_buffer_bytes() const { return align(entries() * dim * elem_bytes); }
  DCPSIM_HOST_DEVICE std::size_t lse_buffer_bytes() const { return align(entries() * 4); }
  DCPSIM_HOST_DEVICE std::size_t o_region() const { return flags_bytes(); }
  DCPSIM_HOST_DEVICE std::size_t lse_region() const { return o_region() + 2 * o_buffer_bytes(); }
  DCPSIM_HOST_DEVICE std::size_t bytes() const { return lse_region() + 2 * lse_buffer_bytes(); }

  // Byte offsets inside an owner's window.
  DCPSIM_HOST_DEVICE std::size_t flag(int par, int src) const { return (std::size_t(par) * dcp + src) * 8; }
  DCPSIM_HOST_DEVICE std::size_t chunk_flag(int par, int src, int chunk) const {
    return source_flags_bytes() + ((std::size_t(par) * dcp + src) * chunks(rows) + chunk) * 8;
  }
  DCPSIM_HOST_DEVICE std::size_t o(int par, int src, int row, int head) const {
    return o_region() + par * o_buffer_bytes() + entry(src, row, head) * dim * elem_bytes;
  }
  DCPSIM_HOST_DEVICE std::size_t lse(int par, int src, int row, int head) const {
    return lse_region() + par * lse_buffer_bytes() + entry(src, row, head) * 4;
  }

  // Writer side: head h of H = N·(H/N) goes to owner h / (H/N) as its head h % (H/N).
  DCPSIM_HOST_DEVICE int owner_of(int h) const { return h / heads; }
  DCPSIM_HOST_DEVICE int local_head(int h) const { return h % heads; }
};

// FlashInfer's fused DCP merge (comm/dcp_lse_reduce.cuh, 0.7.2) over one symmetric window, with the offsets
// its own launcher uses (flashinfer/data/csrc/dcp_lse_reduce.cu): 16 bytes of epoch state, ready words
// [2][N] (u32), the payload from a 16-byte boundary: O slots [2][N_src][entries][D], then LSE slots
// [2][N_src][entries] (fp32). An entry is one (row, kept head) of the owner; the launcher treats every
// leading index of [.., N, D] as one entry (local_heads 1).
struct FlashInferDcpLayout {
  int dcp = 1;
  int entries = 0;  // B · H/N
  int dim = 0;
  int elem_bytes = 2;

  static constexpr std::size_t kMetadataBytes = 16;
  DCPSIM_HOST_DEVICE std::size_t signal_offset() const { return kMetadataBytes; }
  DCPSIM_HOST_DEVICE std::size_t payload_offset() const {
    return (kMetadataBytes + 2 * std::size_t(dcp) * 4 + 15) / 16 * 16;
  }
  DCPSIM_HOST_DEVICE std::size_t slot_out_bytes() const {
    return std::size_t(dcp) * entries * dim * elem_bytes;
  }
  DCPSIM_HOST_DEVICE std::size_t slot_lse_bytes() const { return std::size_t(dcp) * entries * 4; }
  DCPSIM_HOST_DEVICE std::size_t out_region() const { return payload_offset(); }
  DCPSIM_HOST_DEVICE std::size_t lse_region() const { return out_region() + 2 * slot_out_bytes(); }
  DCPSIM_HOST_DEVICE std::size_t bytes() const { return lse_region() + 2 * slot_lse_bytes(); }
};

// Whether the NCCL library found at run time may run the device-API code this binary inlined from NCCL's
// headers. dcpsim reads only the leading fields of `struct ncclWindow_vidmem` (lsaFlatBase, lsaRank,
// worldRank, stride4G) through ncclGetPeerPointer / ncclGetLsaPointer, and those are the same in NCCL 2.28.3
// (the PyTorch wheel) and 2.28.9 (CUDA 13's toolkit); a later minor release may reorder them. So: the
// headers and the library must both be 2.28.x, and the library at least 2.28.3. Codes are NCCL_VERSION_CODE
// values (major·10000 + minor·100 + patch). Returns "" when compatible, else a one-line reason.
inline std::string nccl_device_api_mismatch(int header_code, int runtime_code) {
  auto text = [](int v) {
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  };
  const bool header_ok = header_code / 100 == 228;
  const bool runtime_ok = runtime_code / 100 == 228 && runtime_code >= 22803;
  if (header_ok && runtime_ok) return "";
  return "NCCL windows need the device API of NCCL 2.28 (2.28.3 or later 2.28.x) at build and run time; this "
         "dcpsim was built against NCCL " +
         text(header_code) + " and runs with NCCL " + text(runtime_code);
}

}  // namespace dcpsim::hw
