// Batched GEMV instantiations: Q4_0 Q4_1 Q4_K.
#include "cuda/gemv_launch.cuh"

namespace chorus::cuda {
CHORUS_INSTANTIATE_GEMV(TensorType::Q4_0)
CHORUS_INSTANTIATE_GEMV(TensorType::Q4_1)
CHORUS_INSTANTIATE_GEMV(TensorType::Q4_K)
}  // namespace chorus::cuda
