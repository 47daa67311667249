#include "engine/sched/stop_matcher.h"

#include <algorithm>

namespace chorus {

StopMatcher::StopMatcher(std::vector<std::string> stop_strings) {
  for (auto& s : stop_strings) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

StopMatcher::State StopMatcher::push(std::string_view text, std::string& deliver) {
  if (stops_.empty()) {
    deliver.append(text);
    return State::Continue;
  }
  pending_.append(text);
  // Earlier text was delivered only when no stop string could start in it, so any match
  // lies wholly inside pending_.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    deliver.append(pending_, 0, first);
    pending_.clear();
    return State::Stopped;
  }
  const size_t keep = held_suffix_length();
  deliver.append(pending_, 0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return State::Continue;
}

void StopMatcher::flush(std::string& deliver) {
  deliver.append(pending_);
  pending_.clear();
}

// Longest suffix of pending_ that is a proper prefix of some stop string.
size_t StopMatcher::held_suffix_length() const {
  size_t best = 0;
  const std::string_view p(pending_);
  for (const std::string& s : stops_) {
    const size_t max_len = std::min(p.size(), s.size() - 1);
    for (size_t len = max_len; len > best; --len) {
      if (p.substr(p.size() - len) == std::string_view(s).substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

}  // namespace chorus
