#pragma once
// The new token's part of a decode attention block (attention.h, DecodeAttentionParams): its
// query heads rotated into shared memory, its K (rotated) and V into the cache and the staged
// rows; and the staging of a row's cached K/V rows. Shared by the chunk blocks
// (attention_decode.cu) and the whole-row blocks (attention_row.cu), which must agree to the bit.
#include <cuda_fp16.h>

#include "cuda/attention.h"
#include "cuda/attention_chunk.cuh"
#include "cuda/bulk_copy.cuh"
#include "cuda/rope.cuh"
#include "cuda/rope_table.h"

namespace chorus::cuda {

// The new token's part of a block's work, done by the block's first kAttnThreads threads: its
// query heads (rotated, pre-scaled) into q_s and, for the block holding the row's last chunk,
// its K (rotated) and V into the cache and (stage()) the staged rows.
// The RoPE angles depend on the position only, so angles() runs before pdl_wait (read from the
// backend's table, or computed: the double pow and sincos are a long dependent chain); after
// the wait, load() issues every load of q, k and v before store() writes any of them, so the
// new values cost one round trip, not one per loop.
// The rotations are rope_rotate's split in two (rope.cuh spells out their roundings), so the
// prefill QKV kernel writes the same K halves (test_cuda_attention).
template <int kG, int kP>
struct NewToken {
  static constexpr int kQIters = (kG * 32 * kP + kAttnThreads - 1) / kAttnThreads;  // q pairs per thread
  static constexpr int kVIters = (64 * kP + kAttnThreads - 1) / kAttnThreads;       // v elements per thread
  RopeAngle q_rot[kQIters], k_rot;
  float qa[kQIters], qb[kQIters], ka = 0.0f, kb = 0.0f, v[kVIters];
  __half k_h[2], v_h[kVIters];  // the new K pair and V elements as written to the cache

  // Query pair n of this thread (false past the group's pairs): its head within the group, the
  // two elements it rotates and its frequency index.
  __device__ static bool q_pair(const DecodeAttentionParams& d, int n, int& head, int& i0, int& i1, int& freq) {
    const int hd2 = d.attn.head_dim / 2, i = threadIdx.x + n * kAttnThreads;
    if (i >= d.attn.n_heads / d.attn.n_kv_heads * hd2) return false;
    head = i / hd2;
    rope_pair(d.rope, i % hd2, i0, i1, freq);
    return true;
  }
  // The new K's pair of this thread (false for threads past head_dim / 2).
  __device__ static bool k_pair(const DecodeAttentionParams& d, int& i0, int& i1, int& freq) {
    if (static_cast<int>(threadIdx.x) >= d.attn.head_dim / 2) return false;
    rope_pair(d.rope, threadIdx.x, i0, i1, freq);
    return true;
  }

  // The rotation of frequency freq at pos: from the backend's table (rope_table.h) where it
  // covers pos, else computed; the same bits either way.
  __device__ static RopeAngle angle(const DecodeAttentionParams& d, int pos, int freq) {
    return freq >= 0 && pos < d.rope_cs_positions ? rope_table_angle(d.rope_cs, d.rope, pos, freq)
                                                   : rope_angle(d.rope, pos, freq);
  }

  __device__ void angles(const DecodeAttentionParams& d, int pos, bool writes_kv) {
    int head, i0, i1, freq;
#pragma unroll
    for (int n = 0; n < kQIters; ++n) {
      if (!q_pair(d, n, head, i0, i1, freq)) break;
      q_rot[n] = angle(d, pos, freq);
    }
    if (writes_kv && k_pair(d, i0, i1, freq)) k_rot = angle(d, pos, freq);
  }

  __device__ void load(const DecodeAttentionParams& d, const float* qkv, int kvh, bool writes_kv) {
    const AttentionParams& p = d.attn;
    const int hd = p.head_dim, group = p.n_heads / p.n_kv_heads;
    int head, i0, i1, freq;
#pragma unroll
    for (int n = 0; n < kQIters; ++n) {
      if (!q_pair(d, n, head, i0, i1, freq)) break;
      const float* q = qkv + (kvh * group + head) * hd;
      qa[n] = q[i0];
      qb[n] = q[i1];
    }
    if (!writes_kv) return;
    const int q_dim = p.n_heads * hd, kv_dim = p.n_kv_heads * hd;
    if (k_pair(d, i0, i1, freq)) {
      const float* k = qkv + q_dim + kvh * hd;
      ka = k[i0];
      kb = k[i1];
    }
    const float* vsrc = qkv + q_dim + kv_dim + kvh * hd;
#pragma unroll
    for (int n = 0; n < kVIters; ++n) {
      const int i = threadIdx.x + n * kAttnThreads;
      if (i < hd) v[n] = vsrc[i];
    }
  }

  // q_s: the group's rotated, pre-scaled queries; kv_off: the new token's row in the cache.
  __device__ void store(const DecodeAttentionParams& d, float (&q_s)[kG][kAttnMaxHeadDim], int64_t kv_off,
                        bool writes_kv) {
    const AttentionParams& p = d.attn;
    const int hd = p.head_dim;
    int head, i0, i1, freq;
#pragma unroll
    for (int n = 0; n < kQIters; ++n) {
      if (!q_pair(d, n, head, i0, i1, freq)) break;
      float a = qa[n], b = qb[n];
      rope_apply(q_rot[n], a, b);
      q_s[head][i0] = a * p.scale;
      q_s[head][i1] = b * p.scale;
    }
    if (!writes_kv) return;
    if (k_pair(d, i0, i1, freq)) {
      float a = ka, b = kb;
      rope_apply(k_rot, a, b);
      k_h[0] = __float2half_rn(a);
      k_h[1] = __float2half_rn(b);
      p.k_cache[kv_off + i0] = k_h[0];
      p.k_cache[kv_off + i1] = k_h[1];
    }
#pragma unroll
    for (int n = 0; n < kVIters; ++n) {
      const int i = threadIdx.x + n * kAttnThreads;
      if (i < hd) p.v_cache[kv_off + i] = v_h[n] = __float2half_rn(v[n]);
    }
  }

  // The same K and V halves into the new token's staged rows k_s / v_s (after store()); kK /
  // kV false leave that row out (attention_row.cu stages V after the scores).
  template <bool kK = true, bool kV = true>
  __device__ void stage(const DecodeAttentionParams& d, __half* k_s, __half* v_s) const {
    int i0, i1, freq;
    if (kK && k_pair(d, i0, i1, freq)) {
      k_s[i0] = k_h[0];
      k_s[i1] = k_h[1];
    }
#pragma unroll
    for (int n = 0; n < kVIters; ++n) {
      const int i = threadIdx.x + n * kAttnThreads;
      if (kV && i < d.attn.head_dim) v_s[i] = v_h[n];
    }
  }
};

// Copies the cached K and V rows at row_off[0, n_pos) except row `skip` (the new token's, not
// written yet) into k_s / v_s (rows staged_row_pitch apart), asynchronously, every thread of
// the block taking a share: 16-byte pieces when head_dim is a multiple of 8 (the cache rows
// are then 16-byte aligned), else 4-byte ones. kK / kV false leave those rows out.
template <bool kK = true, bool kV = true>
__device__ __forceinline__ void stage_cached_kv(const AttentionParams& p, const int64_t* row_off, int n_pos, int skip,
                                                __half* k_s, __half* v_s) {
  const int hd = p.head_dim, pitch = staged_row_pitch(hd);
  const int piece = hd % 8 == 0 ? 8 : 2;  // halves per copy
  const int per_row = hd / piece;
  for (int v = threadIdx.x; v < n_pos * per_row; v += blockDim.x) {
    const int i = v / per_row, e = (v % per_row) * piece;
    if (i == skip) continue;
    const int64_t src = row_off[i] + e;
    if (piece == 8) {
      if (kK) cp_async16(k_s + i * pitch + e, p.k_cache + src, 16);
      if (kV) cp_async16(v_s + i * pitch + e, p.v_cache + src, 16);
    } else {
      if (kK) cp_async4(k_s + i * pitch + e, p.k_cache + src);
      if (kV) cp_async4(v_s + i * pitch + e, p.v_cache + src);
    }
  }
  cp_async_commit();
}

}  // namespace chorus::cuda
