#include "cuda/rope_table.h"

#include "cuda/cuda_check.h"

namespace chorus::cuda {
namespace {

__global__ void rope_table_kernel(RopeSpec r, int32_t n_positions, float2* table) {
  const int32_t n_freqs = rope_table_freqs(r);
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rope_table_entries(r, n_positions)) return;
  const RopeAngle t = rope_angle(r, static_cast<int>(i / n_freqs), static_cast<int>(i % n_freqs));
  table[i] = make_float2(t.c, t.s);
}

}  // namespace

void launch_rope_table(const RopeSpec& r, int32_t n_positions, float2* table, cudaStream_t stream) {
  const int64_t n = rope_table_entries(r, n_positions);
  if (n <= 0) return;
  constexpr int kThreads = 256;
  rope_table_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(r, n_positions,
                                                                                                  table);
  CHORUS_CUDA_CHECK_LAUNCH();
}

}  // namespace chorus::cuda
