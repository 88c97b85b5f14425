// The GEMM sweep (gemm_sweep.h): cuBLASLt loaded at run time, BF16 and per-tensor-scaled FP8 GEMMs timed
// over an m × n × k grid, written as `gemm` kernel tables.
#include "dcpsim/hw/gemm_sweep.h"
#include "dcpsim/dates.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/hw/device.h"

#if defined(DCPSIM_WITH_CUDA)
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include "cuda_check.h"
#include "gemm_fill.h"
#endif

namespace dcpsim::hw {

int gemm_sweep_points(const GemmSweepConfig& c) {
  for (const std::string& d : c.dtypes) {
    if (d != "bf16" && d != "fp8") throw InputError("gemm sweep: dtype '" + d + "' (allowed: bf16, fp8)");
  }
  for (const auto* axis : {&c.m, &c.n, &c.k}) {
    if (axis->empty()) throw InputError("gemm sweep: an empty m, n or k list");
    for (const int v : *axis)
      if (v < 1 || v > 65536)
        throw InputError("gemm sweep: size " + std::to_string(v) + " not in [1, 65536]");
  }
  if (c.reps < 1 || c.warmup < 0) throw InputError("gemm sweep: --reps >= 1 and --warmup >= 0 needed");
  if (c.dtypes.empty()) throw InputError("gemm sweep: no dtype");
  return static_cast<int>(c.dtypes.size() * c.m.size() * c.n.size() * c.k.size());
}

#if !defined(DCPSIM_WITH_CUDA)

models::KernelTables run_gemm_sweep(const GemmSweepConfig& c,
                                    const std::function<void(const GemmSweepProgress&)>&) {
  (void)gemm_sweep_points(c);
  throw RuntimeError(kBuiltWithoutCuda);
}

#else

namespace {

// The cuBLASLt entry points the sweep calls, from the library loaded at run time.
struct CublasLt {
  void* lib = nullptr;
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtGetVersion) version = nullptr;

  template <typename F>
  void bind(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    if (f == nullptr) throw RuntimeError(std::string("cuBLASLt: no symbol ") + name);
  }
  void load() {
    std::vector<std::string> names;
    if (const char* e = std::getenv("DCPSIM_CUBLASLT")) names.emplace_back(e);
    for (const char* n : {"libcublasLt.so.13", "libcublasLt.so.12", "/usr/local/cuda/lib64/libcublasLt.so.13",
                          "/usr/local/cuda/lib64/libcublasLt.so.12", "libcublasLt.so"})
      names.emplace_back(n);
    for (const std::string& n : names)
      if ((lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (lib == nullptr)
      throw RuntimeError("gemm sweep: cannot load libcublasLt (set DCPSIM_CUBLASLT or LD_LIBRARY_PATH)");
    bind(create, "cublasLtCreate");
    bind(destroy, "cublasLtDestroy");
    bind(desc_create, "cublasLtMatmulDescCreate");
    bind(desc_destroy, "cublasLtMatmulDescDestroy");
    bind(desc_set, "cublasLtMatmulDescSetAttribute");
    bind(layout_create, "cublasLtMatrixLayoutCreate");
    bind(layout_destroy, "cublasLtMatrixLayoutDestroy");
    bind(pref_create, "cublasLtMatmulPreferenceCreate");
    bind(pref_destroy, "cublasLtMatmulPreferenceDestroy");
    bind(pref_set, "cublasLtMatmulPreferenceSetAttribute");
    bind(heuristic, "cublasLtMatmulAlgoGetHeuristic");
    bind(matmul, "cublasLtMatmul");
    bind(version, "cublasLtGetVersion");
  }
};

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw RuntimeError(std::string("cuBLASLt: ") + what + " failed (status " +
                       std::to_string(static_cast<int>(s)) + ")");
}

constexpr std::size_t kWorkspaceBytes = 32u << 20;
constexpr std::size_t kScaleSlotFloats = 64;  // 256 bytes: cudaMalloc's alignment

// Device buffers of one (n, k, dtype): `copies` weight matrices, the activations for the largest m, the
// output, the workspace and the two per-tensor scales.
struct Buffers {
  std::vector<void*> weights;
  void *act = nullptr, *out = nullptr, *workspace = nullptr;
  float* scales = nullptr;
  ~Buffers() {
    for (void* w : weights) cudaFree(w);
    cudaFree(act), cudaFree(out), cudaFree(workspace), cudaFree(scales);
  }
};

// One point: `reps` calls on rotating weight copies, captured in one graph, between two events; seconds per
// call.
double time_point(const CublasLt& lt, cublasLtHandle_t handle, Buffers& b, bool fp8, int m, int n, int k,
                  int warmup, int reps, cudaStream_t stream) {
  const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  cublasLtMatmulDesc_t desc = nullptr;
  check(lt.desc_create(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
  check(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
  if (fp8) {
    // Each scale in its own 256-byte slot: with B's scale 4 bytes after A's (one float apart) every
    // candidate algorithm answered NOT_SUPPORTED on an H100 (cuBLASLt 13.1,
    // scripts/device/fp8_gemm_probe.cu).
    const float* sa = b.scales;
    const float* sb = b.scales + kScaleSlotFloats;
    check(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa), "A_SCALE");
    check(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb), "B_SCALE");
  }
  // Column-major: A = W as k × n (op T: n × k), B = activations k × m, D = n × m (row-major [m][n]).
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  check(lt.layout_create(&la, in, k, n, k), "layout A");
  check(lt.layout_create(&lb, in, k, m, k), "layout B");
  check(lt.layout_create(&ld, CUDA_R_16BF, n, m, n), "layout D");
  cublasLtMatmulPreference_t pref = nullptr;
  check(lt.pref_create(&pref), "PreferenceCreate");
  const std::size_t ws = kWorkspaceBytes;
  check(lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "workspace");
  // The heuristic's candidates in its order; the first that runs is the one timed (cuBLASLt may rank first an
  // algorithm that then answers NOT_SUPPORTED for these pointers or sizes).
  constexpr int kCandidates = 8;
  cublasLtMatmulHeuristicResult_t results[kCandidates]{};
  int found = 0;
  check(lt.heuristic(handle, desc, la, lb, ld, ld, pref, kCandidates, results, &found), "AlgoGetHeuristic");
  if (found < 1) throw RuntimeError("cuBLASLt: no algorithm for this GEMM");
  const float alpha = 1.0f, beta = 0.0f;
  std::size_t copy = 0;
  const cublasLtMatmulAlgo_t* algo = nullptr;
  const auto run = [&](const cublasLtMatmulAlgo_t* a) {
    return lt.matmul(handle, desc, &alpha, b.weights[copy], la, b.act, lb, &beta, b.out, ld, b.out, ld, a,
                     b.workspace, kWorkspaceBytes, stream);
  };
  cublasStatus_t first = CUBLAS_STATUS_SUCCESS;
  for (int i = 0; i < found && algo == nullptr; ++i) {
    const cublasStatus_t st = run(&results[i].algo);
    if (st == CUBLAS_STATUS_SUCCESS)
      algo = &results[i].algo;
    else if (i == 0)
      first = st;
  }
  if (algo == nullptr) check(first, "Matmul (every candidate algorithm)");
  const auto call = [&] {
    check(run(algo), "Matmul");
    copy = (copy + 1) % b.weights.size();
  };
  for (int i = 0; i < warmup; ++i) call();
  // The reps calls captured in one CUDA graph, as a decode step runs them: timed back to back on the stream,
  // a small GEMM measured ~9 us per call on an H100 (the host's cublasLtMatmul issue rate, not the GPU's
  // time).
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  DCPSIM_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < reps; ++i) call();
  DCPSIM_CUDA(cudaStreamEndCapture(stream, &graph));
  DCPSIM_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  DCPSIM_CUDA(cudaGraphLaunch(exec, stream));  // warm: the graph's first launch uploads it
  cudaEvent_t start, stop;
  DCPSIM_CUDA(cudaEventCreate(&start));
  DCPSIM_CUDA(cudaEventCreate(&stop));
  DCPSIM_CUDA(cudaEventRecord(start, stream));
  DCPSIM_CUDA(cudaGraphLaunch(exec, stream));
  DCPSIM_CUDA(cudaEventRecord(stop, stream));
  DCPSIM_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  DCPSIM_CUDA(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start), cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec), cudaGraphDestroy(graph);
  lt.pref_destroy(pref), lt.layout_destroy(la), lt.layout_destroy(lb), lt.layout_destroy(ld);
  lt.desc_destroy(desc);
  return ms * 1e-3 / reps;
}

}  // namespace

models::KernelTables run_gemm_sweep(const GemmSweepConfig& c,
                                    const std::function<void(const GemmSweepProgress&)>& progress) {
  const int total = gemm_sweep_points(c);
  if (device_count() <= c.device) throw RuntimeError("no CUDA device " + std::to_string(c.device) + " here");
  const DeviceInfo info = device_info(c.device);
  if (std::find(c.dtypes.begin(), c.dtypes.end(), "fp8") != c.dtypes.end() && info.cc_major < 9)
    throw RuntimeError("gemm sweep: FP8 GEMMs need Hopper or later (" + info.name + " is sm_" +
                       std::to_string(info.cc_major) + std::to_string(info.cc_minor) + ")");
  DCPSIM_CUDA(cudaSetDevice(c.device));
  CublasLt lt;
  lt.load();
  cublasLtHandle_t handle = nullptr;
  check(lt.create(&handle), "Create");
  cudaStream_t stream = nullptr;
  DCPSIM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  models::KernelTables out;
  const SoftwareVersions v = software_versions();
  out.provenance.device = info.name;
  out.provenance.driver = "CUDA " + v.cuda_driver;
  out.provenance.cuda = v.cuda_runtime + ", cuBLASLt " + std::to_string(lt.version());
  out.provenance.clocks = "as found (application clocks not locked); CUDA events around " +
                          std::to_string(c.reps) + " calls per point captured in one CUDA graph";
  out.provenance.date = c.date.empty() ? today_utc() : c.date;
  out.provenance.command = c.command.empty() ? "dcpsim hw sweep --kernels gemm" : c.command;
  const int max_m = *std::max_element(c.m.begin(), c.m.end());
  int done = 0, skipped = 0;
  for (const std::string& dtype : c.dtypes) {
    const bool fp8 = dtype == "fp8";
    const std::size_t elem = fp8 ? 1 : 2;
    models::KernelTable table;
    table.kernel = models::TableKernel::kGemm;
    table.key = dtype;
    for (const int n : c.n) {
      for (const int k : c.k) {
        Buffers b;
        const std::size_t bytes = std::size_t(n) * k * elem;
        const std::size_t copies =
            std::clamp<std::size_t>(2 * std::size_t(info.l2_bytes) / bytes + 1, 2, 1024);
        for (std::size_t i = 0; i < copies; ++i) {
          b.weights.push_back(nullptr);
          DCPSIM_CUDA(cudaMalloc(&b.weights.back(), bytes));
          (fp8 ? ops::launch_fill_fp8 : ops::launch_fill_bf16)(b.weights.back(), std::int64_t(n) * k, 1.0f,
                                                               i + 1, stream);
        }
        DCPSIM_CUDA(cudaMalloc(&b.act, std::size_t(max_m) * k * elem));
        (fp8 ? ops::launch_fill_fp8 : ops::launch_fill_bf16)(b.act, std::int64_t(max_m) * k, 1.0f, 99,
                                                             stream);
        DCPSIM_CUDA(cudaMalloc(&b.out, std::size_t(max_m) * n * 2));
        DCPSIM_CUDA(cudaMalloc(&b.workspace, kWorkspaceBytes));
        DCPSIM_CUDA(cudaMalloc(&b.scales, 2 * kScaleSlotFloats * sizeof(float)));
        const float one = 1.0f;
        for (std::size_t slot = 0; slot < 2; ++slot)
          DCPSIM_CUDA(
              cudaMemcpy(b.scales + slot * kScaleSlotFloats, &one, sizeof one, cudaMemcpyHostToDevice));
        DCPSIM_CUDA(cudaStreamSynchronize(stream));
        for (const int m : c.m) {
          // cuBLASLt's FP8 kernels need the activation rows in multiples of 16 (status NOT_SUPPORTED
          // otherwise, e.g. at M = 1); serving engines pad small FP8 batches the same way.
          const int m_run = fp8 ? (m + 15) / 16 * 16 : m;
          double s = 0;
          try {
            s = time_point(lt, handle, b, fp8, m_run, n, k, c.warmup, c.reps, stream);
          } catch (const RuntimeError& e) {
            // One shape cuBLASLt cannot run is not the sweep's end: the point is left out, and said.
            std::cerr << "warning: gemm " << dtype << " " << m << "x" << n << "x" << k
                      << " left out: " << e.what() << "\n";
            ++skipped;
            progress({++done, total, dtype + " (left out)"});
            continue;
          }
          models::TablePoint p;
          p.at = {double(m), double(n), double(k)};
          p.median_ns = p.min_ns = p.max_ns = s * 1e9;  // the mean over the graph's reps calls
          p.samples = c.reps;
          table.points.push_back(p);
          progress({++done, total,
                    dtype + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k)});
        }
      }
    }
    if (table.points.empty()) continue;  // every point left out (said above)
    table.finalize("gemm sweep");
    out.tables.push_back(std::move(table));
  }
  cudaStreamDestroy(stream);
  lt.destroy(handle);
  if (out.tables.empty())
    throw RuntimeError("gemm sweep: cuBLASLt ran none of the " + std::to_string(total) + " points");
  if (skipped > 0)
    out.provenance.clocks +=
        "; " + std::to_string(skipped) + " points left out (cuBLASLt could not run them)";
  if (std::find(c.dtypes.begin(), c.dtypes.end(), "fp8") != c.dtypes.end())
    out.provenance.clocks += "; fp8 rows padded to a multiple of 16 (cuBLASLt's FP8 requirement)";
  return out;
}

#endif  // DCPSIM_WITH_CUDA

}  // namespace dcpsim::hw
