// Batched GEMV instantiations: Q6_K Q8_0.
#include "cuda/gemv_launch.cuh"

namespace chorus::cuda {
CHORUS_INSTANTIATE_GEMV(TensorType::Q6_K)
CHORUS_INSTANTIATE_GEMV(TensorType::Q8_0)
}  // namespace chorus::cuda
