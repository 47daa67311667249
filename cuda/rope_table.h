#pragma once
// The RoPE rotations of every position a backend can decode, computed once at load by
// rope_angle itself (rope.cuh), so a kernel that reads them rotates to the bits of one that
// computes them. The decode attention launch then has no double-precision pow / sincos chain
// per block: at 32 rows its last blocks passed pdl_wait 7.5 us after the first (v21 trace),
// entering beside the previous launch's blocks and computing their angles there.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/rope.cuh"

namespace chorus::cuda {

// Frequencies per position: rope_dim / 2.
__host__ __device__ inline int32_t rope_table_freqs(const RopeSpec& r) { return r.rope_dim / 2; }
// Entries (one float2 each) of a table of n_positions positions.
__host__ __device__ inline int64_t rope_table_entries(const RopeSpec& r, int32_t n_positions) {
  return int64_t{n_positions} * rope_table_freqs(r);
}

// table[pos * rope_table_freqs(r) + freq] = (cos, sin) of rope_angle(r, pos, freq) for pos in
// [0, n_positions). Asynchronous on `stream`.
void launch_rope_table(const RopeSpec& r, int32_t n_positions, float2* table, cudaStream_t stream);

#if defined(__CUDACC__)
// The rotation of frequency freq (>= 0) at pos (< the table's positions), as rope_angle gives it.
__device__ __forceinline__ RopeAngle rope_table_angle(const float2* table, const RopeSpec& r, int pos, int freq) {
  const float2 cs = table[static_cast<int64_t>(pos) * rope_table_freqs(r) + freq];
  RopeAngle t;
  t.c = cs.x;
  t.s = cs.y;
  t.on = true;
  return t;
}
#endif

}  // namespace chorus::cuda
