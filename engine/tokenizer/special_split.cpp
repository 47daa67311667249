#include "engine/tokenizer/special_split.h"

#include <algorithm>

namespace chorus::tok {
namespace {

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

SpecialSplitter::SpecialSplitter(const Vocab& vocab) {
  for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
    const TokenType t = vocab.type(id);
    if (t != TokenType::Control && t != TokenType::UserDefined && t != TokenType::Unknown) continue;
    if (vocab.text(id).empty()) continue;
    const bool user = t == TokenType::UserDefined && !vocab.is_reserved(id);
    entries_.push_back({vocab.text(id), id, user, vocab.strips_whitespace_after(id)});
  }
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(entries_[i].text[0])].push_back(i);
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(), [&](uint32_t a, uint32_t b) {
      return entries_[a].text.size() > entries_[b].text.size();
    });
  }
}

const SpecialSplitter::Entry* SpecialSplitter::match_at(std::string_view rest,
                                                        SpecialParsing mode) const {
  for (uint32_t i : by_first_byte_[static_cast<uint8_t>(rest[0])]) {
    const Entry& e = entries_[i];
    if (mode == SpecialParsing::Off && !e.in_user_text) continue;
    if (rest.size() >= e.text.size() && rest.compare(0, e.text.size(), e.text) == 0) return &e;
  }
  return nullptr;
}

void SpecialSplitter::split(std::string_view text, SpecialParsing mode,
                            std::vector<Fragment>& out) const {
  size_t start = 0;  // first byte of the pending raw fragment
  size_t pos = 0;
  while (pos < text.size()) {
    if (by_first_byte_[static_cast<uint8_t>(text[pos])].empty()) {
      ++pos;
      continue;
    }
    const Entry* e = match_at(text.substr(pos), mode);
    if (!e) {
      ++pos;
      continue;
    }
    if (pos > start) out.push_back({text.substr(start, pos - start), -1});
    out.push_back({{}, e->id});
    pos += e->text.size();
    if (e->rstrip) {
      while (pos < text.size() && is_ascii_space(text[pos])) ++pos;
    }
    start = pos;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
}

}  // namespace chorus::tok
