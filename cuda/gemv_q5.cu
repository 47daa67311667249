// Batched GEMV instantiations: Q5_0 Q5_1 Q5_K.
#include "cuda/gemv_launch.cuh"

namespace chorus::cuda {
CHORUS_INSTANTIATE_GEMV(TensorType::Q5_0)
CHORUS_INSTANTIATE_GEMV(TensorType::Q5_1)
CHORUS_INSTANTIATE_GEMV(TensorType::Q5_K)
}  // namespace chorus::cuda
