#pragma once
// Device side of l2_prefetch.h: a launch's blocks share out its prefetch ranges.
#include <cstdint>

#include "cuda/l2_prefetch.h"

namespace chorus::cuda {

// Pieces of 16 KB, interleaved over the grid (piece q to block q % n_blocks, then lanes), so
// that every multiprocessor's copy engine issues a few rather than a few issuing all. One
// warp of each block calls it (lane = its lane); the prefetches complete on their own.
__device__ __forceinline__ void issue_l2_prefetch(const L2Prefetch& pf, uint32_t block, uint32_t n_blocks, uint32_t lane) {
  constexpr uint32_t kPieceBytes = 16384;
  for (int r = 0; r < pf.n_ranges; ++r) {
    const uint32_t bytes = pf.bytes[r];
    const uint32_t n_pieces = (bytes + kPieceBytes - 1) / kPieceBytes;
    for (uint32_t q = block + lane * n_blocks; q < n_pieces; q += 32 * n_blocks) {
      const uint32_t offset = q * kPieceBytes;
      const uint32_t n = min(kPieceBytes, bytes - offset);
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(pf.ptr[r] + offset), "r"(n) : "memory");
    }
  }
}

}  // namespace chorus::cuda
