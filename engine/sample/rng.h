#pragma once
// Counter-based random draws: the u-th draw of a request depends only on (seed, u), never on
// what else ran before or beside it, so sampled output is the same alone or batched, on every
// backend. splitmix64 is simple enough to reproduce bit-for-bit in a GPU kernel.
#include <cstdint>

namespace chorus {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 24 random bits (exactly representable as float).
inline float uniform01(uint64_t seed, uint64_t draw_index) {
  const uint64_t bits = splitmix64(seed ^ splitmix64(draw_index));
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

}  // namespace chorus
