#pragma once
// Rotary position embedding as ggml applies it, shared by the prefill QKV kernel
// (layer_ops.cu) and the fused decode attention (attention_decode.cu), so both rotate bit for
// bit alike. Angles are computed in double: pos * base^(-2j/rope_dim) reaches thousands of
// radians, where float angles would lose the low bits.
#include <cstdint>

namespace chorus::cuda {

enum class RopeKind : int32_t { Normal = 0, Neox = 1 };

struct RopeSpec {
  RopeKind kind = RopeKind::Normal;
  int32_t rope_dim = 0;  // leading dimensions of a head that rotate
  float base = 10000.0f;
};

#if defined(__CUDACC__)
// Pair slot j (0 .. head_dim/2) of a head: the two element indices it rotates and its frequency
// index, or freq = -1 for dimensions past rope_dim (left as they are). Normal: adjacent pairs;
// NeoX: halves of the rotated part.
__device__ __forceinline__ void rope_pair(const RopeSpec& r, int j, int& i0, int& i1, int& freq) {
  if (r.kind == RopeKind::Normal) {
    i0 = 2 * j;
    i1 = 2 * j + 1;
    freq = i0 < r.rope_dim ? j : -1;
  } else if (j < r.rope_dim / 2) {
    i0 = j;
    i1 = j + r.rope_dim / 2;
    freq = j;
  } else {
    i0 = r.rope_dim + 2 * (j - r.rope_dim / 2);
    i1 = i0 + 1;
    freq = -1;
  }
}

// The rotation of frequency index freq at position pos as (cos, sin) in float; freq < 0: none
// (on = false). Split from the rotation because it depends on the position only, so a kernel
// can compute it before waiting for the values it rotates (the double sincos and pow are a long
// dependent chain).
struct RopeAngle {
  float c = 1.0f, s = 0.0f;
  bool on = false;
};
__device__ __forceinline__ RopeAngle rope_angle(const RopeSpec& r, int pos, int freq) {
  RopeAngle t;
  if (freq < 0) return t;
  const double theta = static_cast<double>(pos) * pow(static_cast<double>(r.base), -2.0 * freq / r.rope_dim);
  double sn, cs;
  sincos(theta, &sn, &cs);
  t.c = static_cast<float>(cs);
  t.s = static_cast<float>(sn);
  t.on = true;
  return t;
}

// Explicit roundings: left to the compiler, a * c - b * s contracts into a fused multiply-add
// one way or the other depending on the code around it, and the prefill and decode kernels
// must rotate to the same bits (the decode build of session 9 moved a cosine in the 7th digit).
__device__ __forceinline__ void rope_apply(const RopeAngle& t, float& a, float& b) {
  if (!t.on) return;
  const float ra = __fmaf_rn(a, t.c, -__fmul_rn(b, t.s)), rb = __fmaf_rn(a, t.s, __fmul_rn(b, t.c));
  a = ra;
  b = rb;
}

__device__ __forceinline__ void rope_rotate(const RopeSpec& r, int pos, int freq, float& a, float& b) {
  rope_apply(rope_angle(r, pos, freq), a, b);
}
#endif

}  // namespace chorus::cuda
