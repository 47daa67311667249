#include "cuda/tensor_map.h"

#include <cuda_runtime.h>

#include <mutex>

namespace chorus::cuda {
namespace {

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn encode_tiled() {
  static EncodeTiledFn fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess) {
      fn = reinterpret_cast<EncodeTiledFn>(p);
    }
  });
  return fn;
}

}  // namespace

bool encode_gemv_x_map(CUtensorMap& map, const __half* x, int64_t x_stride, int32_t k_elems, int32_t n_seqs,
                       int32_t box_rows) {
  const EncodeTiledFn fn = encode_tiled();
  if (fn == nullptr || k_elems % 64 != 0 || x_stride % 8 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 ||
      box_rows < 1 || box_rows > 256 || n_seqs < 1) {
    return false;
  }
  // Dimensions innermost first: 64 halves (128 bytes, the swizzle span), parts, rows.
  const cuuint64_t dims[3] = {64, static_cast<cuuint64_t>(k_elems / 64), static_cast<cuuint64_t>(n_seqs)};
  const cuuint64_t strides_bytes[2] = {128, static_cast<cuuint64_t>(x_stride) * 2};  // of dims 1 and 2
  const cuuint32_t box[3] = {64, 4, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  return fn(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, const_cast<__half*>(x), dims, strides_bytes, box, elem_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace chorus::cuda
