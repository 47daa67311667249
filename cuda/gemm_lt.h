#pragma once
// Prefill's tensor-core GEMM through cuBLASLt: out[T][N] (f32) = x[T][K] (f16) * W[N][K]^T
// (f16, dequantized from the quantized weights just before). One handle, one workspace and
// cached heuristics per shape; all of it owned here (RAII).
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
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
};

class GemmLt {
 public:
  GemmLt();
  ~GemmLt();
  GemmLt(const GemmLt&) = delete;
  GemmLt& operator=(const GemmLt&) = delete;

  void run(const GemmShape& shape, const __half* w, const __half* x, float* out, cudaStream_t stream);

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  Plan& plan_for(const GemmShape& shape);

  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer<uint8_t> workspace_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, Plan> plans_;
};

}  // namespace chorus::cuda
