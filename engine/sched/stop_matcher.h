#pragma once
// Stop strings matched on the detokenized text as it streams. A stop string may arrive
// split over several tokens, so text that could still become the start of one is held
// back until it is resolved; the stop string itself is never delivered.
#include <string>
#include <string_view>
#include <vector>

namespace chorus {

class StopMatcher {
 public:
  StopMatcher() = default;
  explicit StopMatcher(std::vector<std::string> stop_strings);

  enum class State { Continue, Stopped };

  // Appends `text` and adds to `deliver` whatever is now certain not to be part of a stop
  // string. Stopped: a stop string completed; `deliver` got the text before it and
  // everything after is dropped.
  State push(std::string_view text, std::string& deliver);
  // End of the reply without a stop: releases the held-back text into `deliver`.
  void flush(std::string& deliver);

  bool empty() const { return stops_.empty(); }

 private:
  size_t held_suffix_length() const;

  std::vector<std::string> stops_;  // non-empty strings only
  std::string pending_;             // text not yet delivered
};

}  // namespace chorus
