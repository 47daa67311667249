// Two-type GEMV launches (gemv.h, launch_gemv_pair): Q4_K with Q6_K, the mix of a q4_k_m
// model's attention q|k|v in the layers whose v is Q6_K.
#include "cuda/gemv_launch.cuh"

namespace chorus::cuda::detail {

void prepare_gemv_pairs() { prepare_pair_typed<TensorType::Q4_K, TensorType::Q6_K>(); }

void launch_gemv_q4k_q6k(const GemvParams& p, cudaStream_t stream) {
  launch_pair_typed<TensorType::Q4_K, TensorType::Q6_K>(p, stream);
}

}  // namespace chorus::cuda::detail
