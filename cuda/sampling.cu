#include <cfloat>
#include <climits>

#include "cuda/cuda_check.h"
#include "cuda/sampling.h"

namespace chorus::cuda {
namespace {

constexpr int kThreads = 1024;

// Same bits as engine/sample/rng.h.
__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ float uniform01(uint64_t seed, uint64_t draw) {
  const uint64_t bits = splitmix64(seed ^ splitmix64(draw));
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

// Order-preserving map of a float to an unsigned key (larger float, larger key).
__device__ __forceinline__ uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

struct Shared {
  float cand_val[kSampleMaxCandidates];
  int32_t cand_id[kSampleMaxCandidates];
  float prob[kSampleMaxCandidates];
  int32_t counts[kThreads];
  int32_t counts_eq[kThreads];
  uint32_t hist[256];
  float red_val[32];
  int32_t red_id[32];
  uint32_t prefix, remaining;
};

__device__ void apply_penalties(const SampleParams& p, const DeviceSampling& sp, float* w) {
  const bool any = sp.repeat_penalty != 1.0f || sp.presence_penalty != 0.0f || sp.frequency_penalty != 0.0f;
  if (!any) return;
  const int32_t* hist = p.history + static_cast<int64_t>(blockIdx.x) * kSampleMaxHistory;
  const int n = min(sp.n_history, kSampleMaxHistory);
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const int tok = hist[i];
    bool first = true;
    int count = 0;
    for (int j = 0; j < n; ++j) {
      if (hist[j] == tok) {
        if (j < i) first = false;
        ++count;
      }
    }
    if (!first || tok < 0 || tok >= p.n_vocab) continue;
    float l = w[tok];
    if (sp.repeat_penalty != 1.0f) l = l > 0.0f ? l / sp.repeat_penalty : l * sp.repeat_penalty;
    w[tok] = l - (static_cast<float>(count) * sp.frequency_penalty + sp.presence_penalty);
  }
}

// Block-wide best (value, lowest index) of every thread's candidate, returned to every thread.
__device__ void reduce_argmax(float v, int id, Shared& s, float& best_v, int& best_i) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, id, o);
    if (ov > v || (ov == v && oi < id)) { v = ov; id = oi; }
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) { s.red_val[warp] = v; s.red_id[warp] = id; }
  __syncthreads();
  if (warp == 0) {
    v = s.red_val[lane];
    id = s.red_id[lane];
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, id, o);
      if (ov > v || (ov == v && oi < id)) { v = ov; id = oi; }
    }
    if (lane == 0) { s.red_val[0] = v; s.red_id[0] = id; }
  }
  __syncthreads();
  best_v = s.red_val[0];
  best_i = s.red_id[0];
  __syncthreads();
}

// Block argmax, ties to the lowest index. Returns (value, index) to every thread.
__device__ void block_argmax(const float* w, int n, Shared& s, float& best_v, int& best_i) {
  float v = -FLT_MAX;
  int id = INT_MAX;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    if (w[i] > v || id == INT_MAX) { v = w[i]; id = i; }
  }
  reduce_argmax(v, id, s, best_v, best_i);
}

__device__ float block_sum(float v, Shared& s) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) s.red_val[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = s.red_val[lane];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) s.red_val[0] = v;
  }
  __syncthreads();
  const float total = s.red_val[0];
  __syncthreads();
  return total;
}

// Finds the key of the c-th largest value by 8-bit radix passes; s.remaining ends as the
// number of elements equal to that key that belong to the top c.
__device__ void radix_select(const float* w, int n, uint32_t c, Shared& s) {
  uint32_t prefix = 0, mask = 0;
  if (threadIdx.x == 0) s.remaining = c;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += kThreads) s.hist[i] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += kThreads) {
      const uint32_t k = order_key(w[i]);
      if ((k & mask) == prefix) atomicAdd(&s.hist[(k >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      uint32_t cum = 0;
      for (int b = 255; b >= 0; --b) {
        if (cum + s.hist[b] >= s.remaining) {
          s.remaining -= cum;
          s.prefix = prefix | (static_cast<uint32_t>(b) << shift);
          break;
        }
        cum += s.hist[b];
      }
    }
    __syncthreads();
    prefix = s.prefix;
    mask |= 255u << shift;
  }
}

// Writes the top candidates (all keys above the selected key, then the lowest-index ties)
// into s.cand_* in index order.
__device__ void gather_candidates(const float* w, int n, uint32_t c, Shared& s) {
  const uint32_t kth = s.prefix, n_eq_take = s.remaining;
  const int seg = (n + kThreads - 1) / kThreads;
  const int i0 = threadIdx.x * seg, i1 = min(n, i0 + seg);
  int gt = 0, eq = 0;
  for (int i = i0; i < i1; ++i) {
    const uint32_t k = order_key(w[i]);
    gt += k > kth;
    eq += k == kth;
  }
  s.counts[threadIdx.x] = gt;
  s.counts_eq[threadIdx.x] = eq;
  __syncthreads();
  if (threadIdx.x == 0) {
    int a = 0, b = 0;
    for (int t = 0; t < kThreads; ++t) {
      const int ga = s.counts[t], eb = s.counts_eq[t];
      s.counts[t] = a;
      s.counts_eq[t] = b;
      a += ga;
      b += eb;
    }
  }
  __syncthreads();
  int pos_gt = s.counts[threadIdx.x], pos_eq = s.counts_eq[threadIdx.x];
  const int n_gt = static_cast<int>(c - n_eq_take);
  for (int i = i0; i < i1; ++i) {
    const uint32_t k = order_key(w[i]);
    if (k > kth) {
      s.cand_val[pos_gt] = w[i];
      s.cand_id[pos_gt++] = i;
    } else if (k == kth) {
      if (pos_eq < static_cast<int>(n_eq_take)) {
        s.cand_val[n_gt + pos_eq] = w[i];
        s.cand_id[n_gt + pos_eq] = i;
      }
      ++pos_eq;
    }
  }
  __syncthreads();
}

// Bitonic sort of the kSampleMaxCandidates slots: logit descending, then id ascending.
__device__ void sort_candidates(uint32_t c, Shared& s) {
  for (int i = threadIdx.x; i < kSampleMaxCandidates; i += kThreads) {
    if (i >= static_cast<int>(c)) { s.cand_val[i] = -FLT_MAX; s.cand_id[i] = INT_MAX; }
  }
  __syncthreads();
  for (int size = 2; size <= kSampleMaxCandidates; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      const int i = threadIdx.x, j = i ^ stride;
      if (i < kSampleMaxCandidates && j > i) {
        const bool up = (i & size) == 0;
        const float vi = s.cand_val[i], vj = s.cand_val[j];
        const int ii = s.cand_id[i], ij = s.cand_id[j];
        const bool i_first = vi > vj || (vi == vj && ii < ij);
        if (i_first != up) {
          s.cand_val[i] = vj; s.cand_val[j] = vi;
          s.cand_id[i] = ij; s.cand_id[j] = ii;
        }
      }
      __syncthreads();
    }
  }
}

// The best of the LM head's per-block argmaxes: the same token as a full scan (largest logit,
// ties to the lowest id; the reduction is exact, so its order does not matter).
__device__ int32_t argmax_from_blocks(const SampleParams& p, int row, Shared& s) {
  float v = -FLT_MAX;
  int id = INT_MAX;
  for (int b = threadIdx.x; b < p.n_argmax_blocks; b += kThreads) {
    const float bv = p.argmax_val[static_cast<int64_t>(b) * p.argmax_stride + row];
    const int bi = p.argmax_idx[static_cast<int64_t>(b) * p.argmax_stride + row];
    if (bv > v || (bv == v && bi < id)) { v = bv; id = bi; }
  }
  float best_v;
  int best_i;
  reduce_argmax(v, id, s, best_v, best_i);
  return best_i;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const SampleParams p) {
  __shared__ Shared s;
  const int row = blockIdx.x;
  const DeviceSampling sp = p.params[row];
  const bool penalties = sp.repeat_penalty != 1.0f || sp.presence_penalty != 0.0f || sp.frequency_penalty != 0.0f;
  if (sp.temperature <= 0.0f && !penalties && p.argmax_val != nullptr) {
    const int32_t id = argmax_from_blocks(p, row, s);
    if (threadIdx.x == 0) p.out_tokens[row] = id < p.n_vocab ? id : -1;  // INT_MAX: every logit NaN
    return;
  }
  const float* logits = p.logits + static_cast<int64_t>(row) * p.logits_stride;
  float* w = p.work + static_cast<int64_t>(row) * p.n_vocab;
  for (int i = threadIdx.x; i < p.n_vocab; i += kThreads) w[i] = logits[i];
  __syncthreads();
  apply_penalties(p, sp, w);
  __syncthreads();
  float max_v;
  int max_i;
  block_argmax(w, p.n_vocab, s, max_v, max_i);
  if (sp.temperature <= 0.0f) {
    if (threadIdx.x == 0) p.out_tokens[row] = isnan(max_v) ? -1 : max_i;
    return;
  }
  const bool use_top_k = sp.top_k > 0 && sp.top_k < p.n_vocab;
  const uint32_t c = static_cast<uint32_t>(min(use_top_k ? sp.top_k : p.n_vocab, kSampleMaxCandidates));
  // Normalizer over the whole vocabulary when top-k is off (matches the CPU sampler).
  float full_sum = 0.0f;
  if (!use_top_k) {
    float part = 0.0f;
    for (int i = threadIdx.x; i < p.n_vocab; i += kThreads) part += expf((w[i] - max_v) / sp.temperature);
    full_sum = block_sum(part, s);
  }
  radix_select(w, p.n_vocab, c, s);
  gather_candidates(w, p.n_vocab, c, s);
  sort_candidates(c, s);
  for (int i = threadIdx.x; i < static_cast<int>(c); i += kThreads) {
    s.prob[i] = expf((s.cand_val[i] - max_v) / sp.temperature);
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  double sum = 0.0;
  if (use_top_k) {
    for (uint32_t i = 0; i < c; ++i) sum += s.prob[i];
  } else {
    sum = full_sum;
  }
  uint32_t n = c;
  if (sp.min_p > 0.0f) {
    const double floor_p = sp.min_p * (s.prob[0] / sum);
    uint32_t keep = 1;
    while (keep < n && s.prob[keep] / sum >= floor_p) ++keep;
    n = keep;
  }
  if (sp.top_p < 1.0f) {
    double mass = 0.0;
    uint32_t keep = 0;
    while (keep < n) {
      mass += s.prob[keep++] / sum;
      if (mass >= sp.top_p) break;
    }
    n = keep > 0 ? keep : 1;
  }
  double total = 0.0;
  for (uint32_t i = 0; i < n; ++i) total += s.prob[i] / sum;
  const double u = static_cast<double>(uniform01(sp.seed, sp.draw_index)) * total;
  double acc = 0.0;
  int32_t chosen = s.cand_id[n - 1];
  for (uint32_t i = 0; i < n; ++i) {
    acc += s.prob[i] / sum;
    if (u < acc) { chosen = s.cand_id[i]; break; }
  }
  // NaN logits make the comparisons above false everywhere, so the chosen slot may be a filler.
  p.out_tokens[row] = chosen >= 0 && chosen < p.n_vocab && isfinite(s.prob[0]) ? chosen : -1;
}

}  // namespace

void launch_sample(const SampleParams& p, cudaStream_t stream) {
  sample_kernel<<<p.n_rows, kThreads, 0, stream>>>(p);
  CHORUS_CUDA_CHECK_LAUNCH();
}

}  // namespace chorus::cuda
