#include "cuda/l2_prefetch.h"

#include <algorithm>
#include <cstddef>

namespace chorus::cuda {

namespace {
constexpr int64_t kMaxRangeBytes = int64_t{1} << 30;  // fits the instruction's 32-bit size
}  // namespace

std::vector<L2Prefetch> plan_l2_prefetch(const std::vector<std::vector<WeightSpan>>& launches, int64_t window_bytes) {
  std::vector<L2Prefetch> plan(launches.size());
  if (window_bytes <= 0) return plan;
  // The step's weights as one stream: span j covers [begin[j], begin[j] + bytes) of it.
  std::vector<WeightSpan> spans;
  std::vector<int64_t> begin, consumed_end(launches.size());
  int64_t total = 0;
  for (size_t i = 0; i < launches.size(); ++i) {
    for (const WeightSpan& s : launches[i]) {
      if (s.bytes <= 0) continue;
      spans.push_back(s);
      begin.push_back(total);
      total += s.bytes;
    }
    consumed_end[i] = total;
  }
  int64_t frontier = 0;  // the stream before this has been asked for (or read)
  for (size_t i = 0; i < launches.size(); ++i) {
    int64_t from = std::max(frontier, consumed_end[i]);
    const int64_t to = std::min(total, consumed_end[i] + window_bytes);
    L2Prefetch& pf = plan[i];
    size_t j = 0;
    while (from < to && pf.n_ranges < L2Prefetch::kMaxRanges) {
      while (j < spans.size() && begin[j] + spans[j].bytes <= from) ++j;
      if (j == spans.size()) break;
      const int64_t span_end = begin[j] + spans[j].bytes;
      // from is a span's start or an earlier cut: a 16-byte multiple into span j.
      const int64_t n = std::min<int64_t>(std::min(span_end, to) - from, kMaxRangeBytes) / 16 * 16;
      if (n == 0) {
        if (span_end - from < 16 && span_end <= to) {  // a tail shorter than 16 bytes: left out
          from = span_end;
          continue;
        }
        break;  // the window ends within 16 bytes
      }
      pf.ptr[pf.n_ranges] = spans[j].ptr + (from - begin[j]);
      pf.bytes[pf.n_ranges] = static_cast<uint32_t>(n);
      ++pf.n_ranges;
      from += n;
      if (span_end - from > 0 && span_end - from < 16) from = span_end;
    }
    frontier = std::max(frontier, from);
  }
  return plan;
}

}  // namespace chorus::cuda
