#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/gemv.h"

namespace chorus::cuda {

int32_t gemv_choose_splits(int64_t total_rows, int32_t n_tiles, int32_t n_sms) {
  // Enough blocks for about four per multiprocessor (what fits beside each other with the
  // pipelines' shared memory), but at least 2 tiles per split so the f32 partials stay small
  // next to the weights.
  const int64_t row_blocks = (total_rows + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock;
  int32_t splits = 1;
  while (row_blocks * splits < 4 * n_sms && n_tiles / (splits * 2) >= 2 && splits < 16) splits *= 2;
  return splits;
}

#define CHORUS_TYPE_SWITCH(type, CALL)                                          \
  switch (type) {                                                              \
    case TensorType::F32: CALL(TensorType::F32); break;                        \
    case TensorType::F16: CALL(TensorType::F16); break;                        \
    case TensorType::BF16: CALL(TensorType::BF16); break;                      \
    case TensorType::Q8_0: CALL(TensorType::Q8_0); break;                      \
    case TensorType::Q4_0: CALL(TensorType::Q4_0); break;                      \
    case TensorType::Q4_1: CALL(TensorType::Q4_1); break;                      \
    case TensorType::Q5_0: CALL(TensorType::Q5_0); break;                      \
    case TensorType::Q5_1: CALL(TensorType::Q5_1); break;                      \
    case TensorType::Q4_K: CALL(TensorType::Q4_K); break;                      \
    case TensorType::Q5_K: CALL(TensorType::Q5_K); break;                      \
    case TensorType::Q6_K: CALL(TensorType::Q6_K); break;                      \
    default: throw CudaError("tensor type " + tensor_type_name(static_cast<uint32_t>(type)) + \
                             " has no CUDA kernel");                           \
  }

void prepare_gemv_kernels() {
  static const bool done = [] {
    for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
                         TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q4_K, TensorType::Q5_K,
                         TensorType::Q6_K}) {
#define CALL(T) detail::prepare_gemv_typed<T>()
      CHORUS_TYPE_SWITCH(t, CALL)
#undef CALL
    }
    return true;
  }();
  (void)done;
}

void launch_gemv(TensorType type, const GemvParams& p, cudaStream_t stream) {
  prepare_gemv_kernels();  // no-op after the first call; the backend makes that call at load
#define CALL(T) detail::launch_gemv_typed<T>(p, stream)
  CHORUS_TYPE_SWITCH(type, CALL)
#undef CALL
}

void launch_dequant_f16(TensorType type, const uint8_t* w, int64_t n_rows, int32_t n_tiles, int32_t record_bytes,
                        __half* out, cudaStream_t stream) {
#define CALL(T) detail::launch_dequant_typed<T>(w, n_rows, n_tiles, record_bytes, out, stream)
  CHORUS_TYPE_SWITCH(type, CALL)
#undef CALL
}

void launch_embed_rows(TensorType type, const uint8_t* table, int32_t n_tiles, int32_t record_bytes, int32_t n_cols,
                       const int32_t* tokens, int32_t n_tokens, float* out, int32_t out_stride,
                       cudaStream_t stream) {
#define CALL(T) \
  detail::launch_embed_typed<T>(table, n_tiles, record_bytes, n_cols, tokens, n_tokens, out, out_stride, stream)
  CHORUS_TYPE_SWITCH(type, CALL)
#undef CALL
}

}  // namespace chorus::cuda
