// Causal attention for a prefill chunk: the rows are consecutive positions first_pos,
// first_pos+1, ... of one sequence. A block takes a tile of 32 query rows of one head and
// walks the keys in tiles of 64 (K and V converted to f32 in shared memory once per tile,
// then reused by all 32 rows), with an online softmax in f32. Compared with running the
// decode kernel once per prompt token this reads each K/V tile once per 32 rows instead of
// once per row.
#include <cfloat>

#include "cuda/attention.h"
#include "cuda/cuda_check.h"

namespace chorus::cuda {
namespace {

constexpr int kQRows = 32;    // query rows per block: 16 row pairs (ty) x ...
constexpr int kKeys = 64;     // ... 16 lanes (tx) x 4 keys each
constexpr int kThreads = 256;
constexpr int kMaxDimGroups = kAttnMaxHeadDim / 64;  // float4 groups of the head a thread owns in P.V

struct PrefillSmem {
  static size_t bytes(int hd) { return sizeof(float) * (kQRows * hd + kKeys * (hd + 4) + kQRows * (kKeys + 1)); }
};

__global__ void __launch_bounds__(kThreads) attention_prefill_kernel(const AttentionParams p, int32_t first_pos) {
  extern __shared__ __align__(16) float sm[];
  const int hd = p.head_dim, kv_stride = hd + 4;
  float* q_s = sm;                          // [32][hd], pre-scaled
  float* kv_s = q_s + kQRows * hd;          // [64][hd + 4]: K, then V of the current tile
  float* p_s = kv_s + kKeys * kv_stride;    // [32][65]: probabilities of the tile

  const int qt = blockIdx.x, head = blockIdx.y;
  const int group = p.n_heads / p.n_kv_heads, kvh = head / group;
  const int tid = threadIdx.x, ty = tid >> 4, tx = tid & 15;
  const int row0 = qt * kQRows;
  const int rows_here = min(kQRows, p.n_rows - row0);
  const int q_dim = p.n_heads * hd;
  const int32_t* table = p.block_tables;  // every row of a prefill chunk has the same table

  for (int i = tid; i < kQRows * hd; i += kThreads) {
    const int r = min(i / hd, rows_here - 1), d = i % hd;  // rows past the chunk repeat the last (not written)
    q_s[i] = p.q[static_cast<int64_t>(row0 + r) * q_dim + head * hd + d] * p.scale;
  }

  int qpos[2];
  float m[2], l[2], acc[2][kMaxDimGroups][4];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    qpos[r] = first_pos + row0 + min(2 * ty + r, rows_here - 1);
    m[r] = -FLT_MAX;
    l[r] = 0.0f;
#pragma unroll
    for (int e = 0; e < kMaxDimGroups; ++e) acc[r][e][0] = acc[r][e][1] = acc[r][e][2] = acc[r][e][3] = 0.0f;
  }
  const int n_keys = first_pos + row0 + rows_here;  // keys the last row of the tile attends

  auto load_tile = [&](const __half* cache, int k0) {
    const int quads = hd / 4;
    for (int i = tid; i < kKeys * quads; i += kThreads) {
      const int j = i / quads, d = (i % quads) * 4, kpos = k0 + j;
      float4 f = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (kpos < n_keys) {
        const int64_t off =
            ((static_cast<int64_t>(table[kpos / p.block_tokens]) * p.n_kv_heads + kvh) * p.block_tokens +
             kpos % p.block_tokens) * hd + d;
        const uint2 u = *reinterpret_cast<const uint2*>(cache + off);
        __half2 a, b;
        memcpy(&a, &u.x, 4);
        memcpy(&b, &u.y, 4);
        const float2 fa = __half22float2(a), fb = __half22float2(b);
        f = make_float4(fa.x, fa.y, fb.x, fb.y);
      }
      *reinterpret_cast<float4*>(kv_s + j * kv_stride + d) = f;
    }
  };

  for (int k0 = 0; k0 < n_keys; k0 += kKeys) {
    __syncthreads();  // previous tile's V and P are consumed
    load_tile(p.k_cache, k0);
    __syncthreads();
    // Scores of rows 2ty, 2ty+1 against keys tx + 16c.
    float s[2][4] = {};
    for (int d = 0; d < hd; d += 4) {
      const float4 q0 = *reinterpret_cast<const float4*>(q_s + (2 * ty) * hd + d);
      const float4 q1 = *reinterpret_cast<const float4*>(q_s + (2 * ty + 1) * hd + d);
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const float4 k = *reinterpret_cast<const float4*>(kv_s + (tx + 16 * c) * kv_stride + d);
        s[0][c] += q0.x * k.x + q0.y * k.y + q0.z * k.z + q0.w * k.w;
        s[1][c] += q1.x * k.x + q1.y * k.y + q1.z * k.z + q1.w * k.w;
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tile_max = -FLT_MAX;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        if (k0 + tx + 16 * c > qpos[r]) s[r][c] = -FLT_MAX;  // causal mask
        tile_max = fmaxf(tile_max, s[r][c]);
      }
#pragma unroll
      for (int o = 8; o > 0; o >>= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, o));
      const float m_new = fmaxf(m[r], tile_max);  // key k0 <= qpos always: finite
      const float correction = expf(m[r] - m_new);
      float sum = 0.0f;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const float e = s[r][c] == -FLT_MAX ? 0.0f : expf(s[r][c] - m_new);
        p_s[(2 * ty + r) * (kKeys + 1) + tx + 16 * c] = e;
        sum += e;
      }
#pragma unroll
      for (int o = 8; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      l[r] = l[r] * correction + sum;
      m[r] = m_new;
#pragma unroll
      for (int e = 0; e < kMaxDimGroups; ++e) {
        acc[r][e][0] *= correction; acc[r][e][1] *= correction; acc[r][e][2] *= correction; acc[r][e][3] *= correction;
      }
    }
    __syncthreads();  // K consumed, P written
    load_tile(p.v_cache, k0);
    __syncthreads();
    const int n_j = min(kKeys, n_keys - k0);
    for (int j = 0; j < n_j; ++j) {
      const float p0 = p_s[(2 * ty) * (kKeys + 1) + j], p1 = p_s[(2 * ty + 1) * (kKeys + 1) + j];
#pragma unroll
      for (int e = 0; e < kMaxDimGroups; ++e) {
        const int d = 4 * tx + 64 * e;
        if (d < hd) {
          const float4 v = *reinterpret_cast<const float4*>(kv_s + j * kv_stride + d);
          acc[0][e][0] += p0 * v.x; acc[0][e][1] += p0 * v.y; acc[0][e][2] += p0 * v.z; acc[0][e][3] += p0 * v.w;
          acc[1][e][0] += p1 * v.x; acc[1][e][1] += p1 * v.y; acc[1][e][2] += p1 * v.z; acc[1][e][3] += p1 * v.w;
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = 2 * ty + r;
    if (row >= rows_here) continue;
    const float inv_l = 1.0f / l[r];
    __half* out = p.out + static_cast<int64_t>(row0 + row) * p.out_stride + head * hd;
#pragma unroll
    for (int e = 0; e < kMaxDimGroups; ++e) {
      const int d = 4 * tx + 64 * e;
      if (d < hd) {
        out[d] = __float2half_rn(acc[r][e][0] * inv_l);
        out[d + 1] = __float2half_rn(acc[r][e][1] * inv_l);
        out[d + 2] = __float2half_rn(acc[r][e][2] * inv_l);
        out[d + 3] = __float2half_rn(acc[r][e][3] * inv_l);
      }
    }
  }
}

}  // namespace

bool attention_prefill_supported(int32_t head_dim) {
  return head_dim % 4 == 0 && head_dim <= kAttnMaxHeadDim;
}

void launch_attention_prefill(const AttentionParams& p, int32_t first_pos, cudaStream_t stream) {
  const size_t smem = PrefillSmem::bytes(p.head_dim);
  // Prefill is never captured into a graph, so setting the attribute here is safe.
  CHORUS_CUDA_CHECK(cudaFuncSetAttribute(attention_prefill_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem)));
  const dim3 grid((p.n_rows + kQRows - 1) / kQRows, p.n_heads);
  attention_prefill_kernel<<<grid, kThreads, smem, stream>>>(p, first_pos);
  CHORUS_CUDA_CHECK_LAUNCH();
}

}  // namespace chorus::cuda
