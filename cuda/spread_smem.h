#pragma once
// How much dynamic shared memory spreads a launch's blocks over the multiprocessors
// (CudaTuning::gemv_spread): the block scheduler places as many blocks of a launch on a
// multiprocessor as fit, so a launch of fewer blocks than slots can run two a multiprocessor
// while others idle. Asking for more shared memory lowers how many fit. Host logic only (the
// occupancy comes in as a function), so it is tested without a device (test_spread_smem).
#include <cstddef>
#include <cstdint>

namespace chorus::cuda {

// The most blocks a multiprocessor should hold for `total_blocks` spread over `n_sms`:
// ceil(total_blocks / n_sms), at least 1.
inline int spread_cap(int64_t total_blocks, int n_sms) {
  if (n_sms <= 0 || total_blocks <= n_sms) return 1;
  return static_cast<int>((total_blocks + n_sms - 1) / n_sms);
}

// The fewest bytes in [smem_bytes, max_bytes], to within 128, at which `blocks_at(bytes)`
// (blocks a multiprocessor holds; never rises as the bytes grow) is at most `cap`:
// smem_bytes itself where it already is, max_bytes where even that holds more. Bytes stay
// multiples of 16 where smem_bytes and max_bytes are.
template <typename BlocksAt>
size_t least_smem_for_cap(BlocksAt&& blocks_at, size_t smem_bytes, size_t max_bytes, int cap) {
  if (smem_bytes >= max_bytes || blocks_at(smem_bytes) <= cap) return smem_bytes;
  size_t lo = smem_bytes, hi = max_bytes;  // blocks_at(lo) > cap; hi: the answer if any is
  while (hi - lo > 128) {
    const size_t mid = lo + (hi - lo) / 2 / 16 * 16;
    (blocks_at(mid) <= cap ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace chorus::cuda
