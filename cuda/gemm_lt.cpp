#include "cuda/gemm_lt.h"

namespace chorus::cuda {
namespace {
constexpr size_t kWorkspaceBytes = 32u << 20;
}

GemmLt::GemmLt() : workspace_(kWorkspaceBytes) { CHORUS_CUBLAS_CHECK(cublasLtCreate(&handle_)); }

GemmLt::~GemmLt() {
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
  }
  if (handle_) cublasLtDestroy(handle_);
}

// Column-major view: C (N x T, ld out_stride) = op(A) B with A = W as K x N (ld K), transposed,
// and B = x as K x T (ld x_stride).
GemmLt::Plan& GemmLt::plan_for(const GemmShape& s) {
  auto it = plans_.find(s.key());
  if (it != plans_.end()) return it->second;
  Plan p;
  CHORUS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  CHORUS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
  CHORUS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
  CHORUS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16F, s.k, s.n_rows_w, s.k));
  CHORUS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16F, s.k, s.n_tokens, s.x_stride));
  CHORUS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, s.n_rows_w, s.n_tokens, s.out_stride));
  cublasLtMatmulPreference_t pref = nullptr;
  CHORUS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const size_t ws = kWorkspaceBytes;
  CHORUS_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t result{};
  int n_results = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, 1, &result, &n_results);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || n_results == 0) {
    throw CudaError("cuBLASLt found no algorithm for a " + std::to_string(s.n_tokens) + "x" +
                    std::to_string(s.n_rows_w) + "x" + std::to_string(s.k) + " f16 GEMM on " + describe_device());
  }
  p.algo = result.algo;
  return plans_.emplace(s.key(), p).first->second;
}

void GemmLt::run(const GemmShape& s, const __half* w, const __half* x, float* out, cudaStream_t stream) {
  Plan& p = plan_for(s);
  const float alpha = 1.0f, beta = 0.0f;
  CHORUS_CUBLAS_CHECK(cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x, p.b, &beta, out, p.c, out, p.c, &p.algo,
                                     workspace_.get(), kWorkspaceBytes, stream));
}

}  // namespace chorus::cuda
