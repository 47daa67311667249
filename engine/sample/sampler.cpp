#include "engine/sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "engine/sample/rng.h"

namespace chorus {

int32_t argmax(std::span<const float> values) {
  int32_t best = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] > values[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  }
  return best;
}

void apply_penalties(std::span<float> logits, const SamplingParams& p, std::span<const int32_t> history) {
  if (!p.has_penalties() || history.empty() || p.penalty_last_n == 0) return;
  const size_t n = p.penalty_last_n < 0 ? history.size()
                                        : std::min(history.size(), static_cast<size_t>(p.penalty_last_n));
  std::unordered_map<int32_t, int32_t> counts;
  for (size_t i = history.size() - n; i < history.size(); ++i) ++counts[history[i]];
  for (const auto& [tok, count] : counts) {
    if (tok < 0 || static_cast<size_t>(tok) >= logits.size()) continue;
    float& l = logits[static_cast<size_t>(tok)];
    if (p.repeat_penalty != 1.0f) l = l > 0.0f ? l / p.repeat_penalty : l * p.repeat_penalty;
    l -= static_cast<float>(count) * p.frequency_penalty + p.presence_penalty;
  }
}

int32_t sample_token(std::span<float> logits, const SamplingParams& p, std::span<const int32_t> history,
                     uint64_t draw_index) {
  apply_penalties(logits, p, history);
  if (p.is_greedy()) return argmax(logits);

  // Candidates sorted by logit (descending, ties by id) so that the cut-offs and the draw
  // are deterministic.
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  size_t n = ids.size();
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < n) {
    n = static_cast<size_t>(p.top_k);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), by_logit);
  } else {
    std::sort(ids.begin(), ids.end(), by_logit);
  }
  std::vector<float> probs(n);
  const float max_l = logits[static_cast<size_t>(ids[0])];
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    probs[i] = std::exp((logits[static_cast<size_t>(ids[i])] - max_l) / p.temperature);
    sum += probs[i];
  }
  for (float& pr : probs) pr = static_cast<float>(pr / sum);
  // min-p: drop tokens below min_p times the best probability.
  if (p.min_p > 0.0f) {
    const float floor_p = p.min_p * probs[0];
    size_t keep = 1;
    while (keep < n && probs[keep] >= floor_p) ++keep;
    n = keep;
  }
  // top-p: smallest prefix whose mass reaches top_p.
  if (p.top_p < 1.0f) {
    double mass = 0.0;
    size_t keep = 0;
    while (keep < n) {
      mass += probs[keep++];
      if (mass >= p.top_p) break;
    }
    n = std::max<size_t>(1, keep);
  }
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += probs[i];
  const double u = static_cast<double>(uniform01(p.seed, draw_index)) * total;
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    acc += probs[i];
    if (u < acc) return ids[i];
  }
  return ids[n - 1];
}

}  // namespace chorus
