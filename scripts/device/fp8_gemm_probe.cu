// Which cuBLASLt FP8 GEMM configurations run on this GPU: the heuristic's and cublasLtMatmul's status for
// per-tensor scales on or off, fast accumulation on or off, and a BF16 or FP8 output
// (scripts/device/fp8_gemm_probe.sh).
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
int main() {
  cublasLtHandle_t h;
  cublasLtCreate(&h);
  printf("cublasLt version %zu\n", cublasLtGetVersion());
  const int m = 16, n = 4096, k = 4096;
  void *A, *B, *C, *D, *ws;
  float* sc;
  cudaMalloc(&A, n * k);
  cudaMalloc(&B, 4096 * k);
  cudaMalloc(&C, 2 * 4096 * n);
  cudaMalloc(&D, 2 * 4096 * n);
  cudaMalloc(&ws, 32 << 20);
  cudaMalloc(&sc, 4096);
  float ones[1024];
  for (float& o : ones) o = 1;
  cudaMemcpy(sc, ones, sizeof ones, cudaMemcpyHostToDevice);
  cudaMemset(A, 0, n * k);
  cudaMemset(B, 0, 4096 * k);
  // stride: floats between the A, B and D scales (1: adjacent floats; 4: 16 bytes; 64: 256 bytes).
  for (int variant = 0; variant < 24; ++variant) {
    const bool scales = variant & 1, fast = variant & 2, dfp8 = variant & 4;
    const int stride = variant < 8 ? 1 : variant < 16 ? 4 : 64;
    if (!scales && variant >= 8) continue;
    cublasLtMatmulDesc_t d;
    cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    const float* sa = sc;
    const float* sb = sc + stride;
    const float* sd = sc + 2 * stride;
    if (scales) {
      cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
      cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
      if (dfp8) cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &sd, sizeof sd);
    }
    int8_t fa = 1;
    if (fast) cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof fa);
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, n, k);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, m, k);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, m, n);
    cublasLtMatrixLayoutCreate(&ld, dfp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF, n, m, n);
    cublasLtMatmulPreference_t p;
    cublasLtMatmulPreferenceCreate(&p);
    size_t wsb = 32 << 20;
    cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
    cublasLtMatmulHeuristicResult_t r[8];
    int found = 0;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(h, d, la, lb, lc, ld, p, 8, r, &found);
    float alpha = 1, beta = 0;
    int st_first = -1, ok = -1;
    for (int i = 0; i < found; ++i) {
      cublasStatus_t s =
          cublasLtMatmul(h, d, &alpha, A, la, B, lb, &beta, C, lc, D, ld, &r[i].algo, ws, wsb, 0);
      if (i == 0) st_first = s;
      if (s == CUBLAS_STATUS_SUCCESS) {
        ok = i;
        break;
      }
    }
    cudaError_t e = cudaDeviceSynchronize();
    printf(
        "scales=%d stride=%d fast_accum=%d D=%s: heuristic %d found %d, first matmul %d, first ok candidate "
        "%d, cuda %s\n",
        scales, stride, fast, dfp8 ? "fp8" : "bf16", hs, found, st_first, ok, cudaGetErrorString(e));
  }
  return 0;
}
