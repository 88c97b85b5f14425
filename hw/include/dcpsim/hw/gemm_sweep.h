#pragma once
// The GEMM sweep (`dcpsim hw sweep --kernels gemm`): the dense GEMMs of a decode step around attention
// (models/step_ops.h) timed on the GPU through cuBLASLt, BF16 and FP8 (e4m3 with per-tensor scales; Hopper
// and later), over a full m × n × k grid, written as `gemm` kernel tables (keys "bf16", "fp8") that a profile
// carries ahead of the published ones. out[m][n] = in[m][k] · W[k][n]: the weights W are [n][k] (a Linear
// layer's), the activations [m][k], the output bf16 [m][n]. Each point is `reps` calls captured in one CUDA
// graph and timed between two CUDA events, each call on another copy of the weights (up to 1024 copies, to
// exceed twice the L2, as a step's layers stream theirs from HBM), the total over reps: the pace of a CUDA
// graph's chained GEMMs, with no host issue or event overhead per call (plain stream launches measured the
// host's issue rate instead: ~9 us per small GEMM on an H100). FP8 rows are padded to a multiple of 16.
// cuBLASLt is loaded at run time (libcublasLt.so.13 or .12, from the loader's path, /usr/local/cuda/lib64 or
// $DCPSIM_CUBLASLT), so the carried binary needs no extra library to start.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dcpsim/models/kernel_table.h"

namespace dcpsim::hw {

struct GemmSweepConfig {
  std::vector<std::string> dtypes = {"bf16", "fp8"};
  std::vector<int> m = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  std::vector<int> n = {256, 512, 1024, 2048, 3072, 4096, 7168, 8192, 16384};
  std::vector<int> k = {256, 512, 1024, 2048, 3072, 4096, 7168, 8192, 16384};
  int warmup = 3;
  int reps = 20;
  int device = 0;
  std::string date;     // provenance date (YYYY-MM-DD); empty: today
  std::string command;  // the command line, for the provenance
};

struct GemmSweepProgress {
  int done = 0, total = 0;
  std::string point;
};

// Checks the grid (dtypes "bf16"/"fp8", every size in [1, 65536], reps >= 1): InputError otherwise.
int gemm_sweep_points(const GemmSweepConfig& c);
// Runs the sweep; RuntimeError without CUDA, without cuBLASLt, or for FP8 on a GPU before Hopper.
models::KernelTables run_gemm_sweep(const GemmSweepConfig& c,
                                    const std::function<void(const GemmSweepProgress&)>& progress);

}  // namespace dcpsim::hw
