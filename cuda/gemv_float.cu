// Batched GEMV instantiations: F32 F16 BF16.
#include "cuda/gemv_launch.cuh"

namespace chorus::cuda {
CHORUS_INSTANTIATE_GEMV(TensorType::F32)
CHORUS_INSTANTIATE_GEMV(TensorType::F16)
CHORUS_INSTANTIATE_GEMV(TensorType::BF16)
}  // namespace chorus::cuda
