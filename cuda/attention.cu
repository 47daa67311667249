#include <cfloat>

#include "cuda/attention.h"
#include "cuda/attention_chunk.cuh"
#include "cuda/cuda_check.h"
#include "cuda/launch.cuh"

namespace chorus::cuda {
namespace {

template <int kG, int kP>
__global__ void __launch_bounds__(kAttnThreads) attention_chunk_kernel(const AttentionParams p) {
  __shared__ ChunkSmem<kG, kP> s;
  pdl_wait();
  pdl_trigger();
  const int chunk = blockIdx.x, kvh = blockIdx.y, row = blockIdx.z;
  const int len = p.seq_lens[row];
  if (chunk * kAttnChunkTokens >= len) return;
  const int group = p.n_heads / p.n_kv_heads, hd = p.head_dim;
  const int q_dim = p.n_heads * hd;
  for (int i = threadIdx.x; i < group * hd; i += kAttnThreads) {
    s.q_s[i / hd][i % hd] = p.q[static_cast<int64_t>(row) * q_dim + (kvh * group) * hd + i] * p.scale;
  }
  resolve_rows(p, s.row_off, chunk, kvh, row, min(kAttnChunkTokens, len - chunk * kAttnChunkTokens));
  __syncthreads();
  attend_chunk<kG, kP>(p, s, chunk, row, CacheRows{p.k_cache, p.v_cache, s.row_off}, global_sink(p, row, kvh, chunk));
}

__global__ void attention_combine_kernel(const AttentionParams p) {
  pdl_wait();
  pdl_trigger();
  const int head = blockIdx.x, row = blockIdx.y;
  const int n_chunks = (p.seq_lens[row] + kAttnChunkTokens - 1) / kAttnChunkTokens;
  const ChunkMerge st = merge_stats(p, row, head, n_chunks);
  for (int d = threadIdx.x; d < p.head_dim; d += blockDim.x) {
    p.out[static_cast<int64_t>(row) * p.out_stride + head * p.head_dim + d] =
        __float2half_rn(combine_chunks(p, row, head, d, n_chunks, st));
  }
}

}  // namespace

void launch_attention(const AttentionParams& p, cudaStream_t stream) {
  const AttentionVariant v = attention_variant(p, "attention");
  const dim3 grid(p.grid_chunks, p.n_kv_heads, p.n_rows);
  using Kernel = void (*)(AttentionParams);
  const Kernel kernels[4][3] = CHORUS_ATTENTION_VARIANTS(attention_chunk_kernel);
  launch_pdl(kernels[v.group_index][v.pairs_index], grid, dim3(kAttnThreads), 0, stream, p);
  launch_pdl(attention_combine_kernel, dim3(p.n_heads, p.n_rows), dim3(128), 0, stream, p);
}

}  // namespace chorus::cuda
