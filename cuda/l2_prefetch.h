#pragma once
// Weights streamed into L2 ahead of the launch that reads them. At few rows a decode step is a
// chain of short launches, each with its own latency floor (launch, prologue, first bytes,
// split reduction), and between them the memory bus idles: attention reads almost no weights,
// and a small GEMV requests all its bytes at once and then waits. Each launch therefore asks
// the L2 to fetch the next weights of the step (cp.async.bulk.prefetch.L2, issued before it
// waits for its predecessor, costing its threads nothing), keeping a fixed window of bytes in
// flight ahead of the launches that read them; those read their weights with an evict-first
// hint, so that a long matrix streaming through does not push out what was fetched for the
// next one. The plan is fixed at load: the step's weights are read in the same order every step.
#include <cstdint>
#include <vector>

namespace chorus::cuda {

// What one launch prefetches: up to kMaxRanges byte ranges, each 16-byte aligned and a
// multiple of 16 bytes long (the instruction's rule). The launch's blocks share the ranges out.
struct L2Prefetch {
  static constexpr int kMaxRanges = 6;
  const uint8_t* ptr[kMaxRanges] = {};
  uint32_t bytes[kMaxRanges] = {};
  int32_t n_ranges = 0;
};

// Weight bytes one launch reads, in the order it reads them.
struct WeightSpan {
  const uint8_t* ptr = nullptr;
  int64_t bytes = 0;
};

// launches[i]: the spans launch i reads (none for a launch that reads no weights, such as
// attention). Returns one L2Prefetch per launch: launch i fetches what lies ahead of its own
// spans, up to window_bytes past their end, minus what earlier launches already asked for.
// Bytes are never prefetched twice and never past the last span; window_bytes <= 0 plans
// nothing. Ranges are cut at 16-byte multiples; a launch that would need more than
// kMaxRanges ranges stops at the last one (the next launch continues from there).
std::vector<L2Prefetch> plan_l2_prefetch(const std::vector<std::vector<WeightSpan>>& launches, int64_t window_bytes);

}  // namespace chorus::cuda
