#pragma once
// Prefill's tensor-core GEMM through cuBLASLt: out[T][N] (f32) = x[T][K] (f16) * W[N][K]^T
// (f16, dequantized from the quantized weights just before). One handle, one workspace and
// one algorithm per weight shape; all of it owned here (RAII).
//
// Row invariance: a prompt row's output must not depend on how many other rows share the
// call (several sequences' chunks are packed into one prefill), so the algorithm of a weight
// shape is chosen once, at a fixed reference row count, among those without split-K or a
// reduction pass, and then used for every row count. A tiled GEMM without split-K computes
// each output element by the same K loop whatever the grid, so the bits of a row do not
// depend on T or on the row's place in the call (tested on the GPU, test_cuda_gemm_lt).
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "cuda/device_memory.h"

namespace chorus::cuda {

struct GemmShape {
  int64_t n_rows_w = 0;   // N
  int64_t k = 0;          // K (both strides equal K here, padded to a tile multiple)
  int64_t n_tokens = 0;   // T
  int64_t x_stride = 0;   // elements between rows of x
  int64_t out_stride = 0; // elements between rows of out
  auto key() const { return std::make_tuple(n_rows_w, k, n_tokens, x_stride, out_stride); }
  auto weight_key() const { return std::make_tuple(n_rows_w, k, x_stride, out_stride); }
};

class GemmLt {
 public:
  // Calls take up to `max_tokens` rows. `reference_tokens`: the row count at which each weight
  // shape's algorithm is chosen (0: max_tokens).
  explicit GemmLt(int64_t max_tokens, int64_t reference_tokens = 0);
  int64_t reference_tokens() const { return reference_tokens_; }
  ~GemmLt();
  GemmLt(const GemmLt&) = delete;
  GemmLt& operator=(const GemmLt&) = delete;

  void run(const GemmShape& shape, const __half* w, const __half* x, float* out, cudaStream_t stream);

 private:
  using DescPtr = std::unique_ptr<cublasLtMatmulDescOpaque_t, decltype(&cublasLtMatmulDescDestroy)>;
  using LayoutPtr = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, decltype(&cublasLtMatrixLayoutDestroy)>;
  // One shape's descriptors (owned) and the algorithm it runs.
  struct Plan {
    DescPtr op{nullptr, &cublasLtMatmulDescDestroy};
    LayoutPtr a{nullptr, &cublasLtMatrixLayoutDestroy}, b{nullptr, &cublasLtMatrixLayoutDestroy},
        c{nullptr, &cublasLtMatrixLayoutDestroy};
    cublasLtMatmulAlgo_t algo{};
    explicit Plan(const GemmShape& shape);  // descriptors only
  };
  Plan& plan_for(const GemmShape& shape);
  const cublasLtMatmulAlgo_t& algo_for(const GemmShape& shape);
  bool algo_fits(const Plan& p, const cublasLtMatmulAlgo_t& algo);  // cublasLtMatmulAlgoCheck

  cublasLtHandle_t handle_ = nullptr;
  int64_t max_tokens_ = 0, reference_tokens_ = 0;
  DeviceBuffer<uint8_t> workspace_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, Plan> plans_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, cublasLtMatmulAlgo_t> algos_;
};

}  // namespace chorus::cuda
