#include "cuda/gemm_lt.h"

#include <algorithm>
#include <array>

namespace chorus::cuda {
namespace {
constexpr size_t kWorkspaceBytes = 32u << 20;
constexpr int kCandidates = 16;  // heuristic results examined per weight shape

uint32_t algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  uint32_t v = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return 0;
  return v;
}

// Split-K (and its reduction pass) sums an element's K range in pieces whose number the
// library may pick per grid; without it the K loop is the same for every row count.
bool row_invariant(const cublasLtMatmulAlgo_t& algo) {
  return algo_attr(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) <= 1 &&
         algo_attr(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) == CUBLASLT_REDUCTION_SCHEME_NONE;
}

// The same tile configuration with split-K turned off, for shapes where every ranked
// candidate splits K: on an H200 (cuBLASLt 13.1) all 8 candidates for 128 x 4096 x 14336
// did, so a 128-row reference had no algorithm at all. False where the library refuses the
// attributes; the caller still checks the result against every row count it must take.
bool without_split_k(cublasLtMatmulAlgo_t& algo) {
  const uint32_t one = 1, none = CUBLASLT_REDUCTION_SCHEME_NONE;
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, sizeof(one)) ==
             CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &none, sizeof(none)) ==
             CUBLAS_STATUS_SUCCESS &&
         row_invariant(algo);
}
}  // namespace

GemmLt::GemmLt(int64_t max_tokens, int64_t reference_tokens)
    : max_tokens_(std::max<int64_t>(1, max_tokens)),
      reference_tokens_(reference_tokens > 0 ? std::min(reference_tokens, max_tokens_) : max_tokens_),
      workspace_(kWorkspaceBytes) {
  CHORUS_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

GemmLt::~GemmLt() {
  plans_.clear();  // before the handle
  if (handle_) cublasLtDestroy(handle_);
}

// Column-major view: C (N x T, ld out_stride) = op(A) B with A = W as K x N (ld K), transposed,
// and B = x as K x T (ld x_stride).
GemmLt::Plan::Plan(const GemmShape& s) {
  const auto layout = [](LayoutPtr& out, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
    cublasLtMatrixLayout_t raw = nullptr;
    CHORUS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows),
                                                   static_cast<uint64_t>(cols), ld));
    out.reset(raw);
  };
  cublasLtMatmulDesc_t raw_op = nullptr;
  CHORUS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&raw_op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  op.reset(raw_op);
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  CHORUS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op.get(), CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
  CHORUS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op.get(), CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
  layout(a, CUDA_R_16F, s.k, s.n_rows_w, s.k);
  layout(b, CUDA_R_16F, s.k, s.n_tokens, s.x_stride);
  layout(c, CUDA_R_32F, s.n_rows_w, s.n_tokens, s.out_stride);
}

bool GemmLt::algo_fits(const Plan& p, const cublasLtMatmulAlgo_t& algo) {
  cublasLtMatmulHeuristicResult_t r{};
  return cublasLtMatmulAlgoCheck(handle_, p.op.get(), p.a.get(), p.b.get(), p.c.get(), p.c.get(), &algo, &r) ==
             CUBLAS_STATUS_SUCCESS &&
         r.workspaceSize <= kWorkspaceBytes;
}

// The weight shape's algorithm: the best-ranked heuristic result at the reference row count
// that has no split-K and takes the row counts of the GEMM route (probed).
const cublasLtMatmulAlgo_t& GemmLt::algo_for(const GemmShape& s) {
  auto it = algos_.find(s.weight_key());
  if (it != algos_.end()) return it->second;
  const auto with_tokens = [&](int64_t n_tokens) {
    GemmShape t = s;
    t.n_tokens = n_tokens;
    return t;
  };
  const Plan ref(with_tokens(reference_tokens_));
  // The GEMM route takes chunks of more than 32 rows: odd counts across that range.
  const Plan probes[] = {Plan(with_tokens(std::min<int64_t>(33, max_tokens_))),
                         Plan(with_tokens(std::min<int64_t>(127, max_tokens_))),
                         Plan(with_tokens(std::max<int64_t>(1, max_tokens_ - 1)))};
  using PrefHandle = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&cublasLtMatmulPreferenceDestroy)>;
  cublasLtMatmulPreference_t raw_pref = nullptr;
  CHORUS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
  const PrefHandle pref(raw_pref, &cublasLtMatmulPreferenceDestroy);
  const size_t ws = kWorkspaceBytes;
  CHORUS_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  std::array<cublasLtMatmulHeuristicResult_t, kCandidates> results{};
  int n_results = 0;
  if (cublasLtMatmulAlgoGetHeuristic(handle_, ref.op.get(), ref.a.get(), ref.b.get(), ref.c.get(), ref.c.get(),
                                     pref.get(), kCandidates, results.data(), &n_results) != CUBLAS_STATUS_SUCCESS) {
    n_results = 0;
  }
  const auto takes_every_count = [&](const cublasLtMatmulAlgo_t& a) {
    bool fits = algo_fits(ref, a);
    for (const Plan& p : probes) fits = fits && algo_fits(p, a);
    return fits;
  };
  // The best-ranked candidate that is split-K-free as offered; failing that, the best-ranked
  // one that still runs every row count with its split-K turned off.
  for (int i = 0; i < n_results; ++i) {
    const cublasLtMatmulAlgo_t& a = results[static_cast<size_t>(i)].algo;
    if (row_invariant(a) && takes_every_count(a)) return algos_.emplace(s.weight_key(), a).first->second;
  }
  for (int i = 0; i < n_results; ++i) {
    cublasLtMatmulAlgo_t a = results[static_cast<size_t>(i)].algo;
    if (!row_invariant(a) && without_split_k(a) && takes_every_count(a)) {
      return algos_.emplace(s.weight_key(), a).first->second;
    }
  }
  throw CudaError("cuBLASLt offered no split-K-free algorithm for a " + std::to_string(reference_tokens_) + "x" +
                  std::to_string(s.n_rows_w) + "x" + std::to_string(s.k) + " f16 GEMM that also takes fewer rows, on " +
                  describe_device() + " (" + std::to_string(n_results) + " candidates)");
}

GemmLt::Plan& GemmLt::plan_for(const GemmShape& s) {
  auto it = plans_.find(s.key());
  if (it != plans_.end()) return it->second;
  if (s.n_tokens > max_tokens_) {
    throw CudaError("GEMM of " + std::to_string(s.n_tokens) + " rows; this backend's prefill takes at most " +
                    std::to_string(max_tokens_));
  }
  const cublasLtMatmulAlgo_t& algo = algo_for(s);
  Plan p(s);
  if (!algo_fits(p, algo)) {
    throw CudaError("cuBLASLt's algorithm for " + std::to_string(s.n_rows_w) + "x" + std::to_string(s.k) +
                    " weights does not take " + std::to_string(s.n_tokens) + " rows on " + describe_device());
  }
  p.algo = algo;
  return plans_.emplace(s.key(), std::move(p)).first->second;
}

void GemmLt::run(const GemmShape& s, const __half* w, const __half* x, float* out, cudaStream_t stream) {
  Plan& p = plan_for(s);
  const float alpha = 1.0f, beta = 0.0f;
  CHORUS_CUBLAS_CHECK(cublasLtMatmul(handle_, p.op.get(), &alpha, w, p.a.get(), x, p.b.get(), &beta, out, p.c.get(),
                                     out, p.c.get(), &p.algo, workspace_.get(), kWorkspaceBytes, stream));
}

}  // namespace chorus::cuda
