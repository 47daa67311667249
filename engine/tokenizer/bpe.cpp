#include "engine/tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "engine/tokenizer/byte_unicode.h"

namespace chorus::tok {
namespace {

constexpr int32_t kMergedAway = -2;

struct Symbol {
  int32_t id;    // token id, or kMergedAway once absorbed by its left neighbour
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
};

struct Candidate {
  int32_t rank;
  int32_t left, right;        // symbol indices
  int32_t left_id, right_id;  // ids when queued; a change means the candidate is stale
  int32_t result;
};

struct LaterFirst {  // min-heap on (rank, left)
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};

bool producible(TokenType t) { return t != TokenType::Control && t != TokenType::Unknown; }

}  // namespace

Result<BpeModel> BpeModel::build(const Vocab& vocab, WholeWordLookup whole_words) {
  BpeModel m;
  m.whole_words_ = whole_words;
  for (int b = 0; b < 256; ++b) {
    auto id = vocab.find(byte_to_unicode(static_cast<uint8_t>(b)));
    m.byte_token_[b] = id && producible(vocab.type(*id)) ? *id : -1;
  }
  const auto& merges = vocab.data().merges;
  m.merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& rule = merges[rank];
    const size_t sp = rule.find(' ', 1);
    if (sp == std::string::npos) continue;
    std::string_view left(rule.data(), sp), right(rule.data() + sp + 1, rule.size() - sp - 1);
    joined.assign(left).append(right);
    auto l = vocab.find(left), r = vocab.find(right), res = vocab.find(joined);
    if (!l || !r || !res || !producible(vocab.type(*res))) continue;
    m.merges_.emplace(pair_key(*l, *r), Merge{static_cast<int32_t>(rank), *res});
  }
  if (m.merges_.empty() && !merges.empty()) {
    return make_error("tokenizer.ggml.merges: none of the " + std::to_string(merges.size()) +
                      " merge rules refers to tokens of the vocabulary");
  }
  if (whole_words == WholeWordLookup::On) {
    for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
      if (vocab.type(id) != TokenType::Normal) continue;
      if (auto raw = unicode_to_bytes(vocab.text(id))) m.raw_to_id_.emplace(std::move(*raw), id);
    }
  }
  return m;
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (word.size() == 1) {
    const int32_t id = byte_token_[static_cast<uint8_t>(word[0])];
    if (id >= 0) out.push_back(id);
    return;
  }
  if (whole_words_ == WholeWordLookup::On) {
    auto it = raw_to_id_.find(word);
    if (it != raw_to_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (cache_->lookup(word, out)) return;
  const size_t first = out.size();
  merge_word(word, out);
  cache_->insert(word, out.data() + first, out.size() - first);
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap_storage;
  const auto n = static_cast<int32_t>(word.size());
  symbols.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {byte_token_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  heap_storage.clear();
  std::priority_queue<Candidate, std::vector<Candidate>, LaterFirst> heap(LaterFirst{},
                                                                          std::move(heap_storage));
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    if (const Merge* m = find_merge(symbols[l].id, symbols[r].id)) {
      heap.push({m->rank, l, r, symbols[l].id, symbols[r].id, m->result});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = symbols[c.left];
    if (l.id != c.left_id || l.next != c.right || symbols[c.right].id != c.right_id) continue;
    Symbol& r = symbols[c.right];
    l.id = c.result;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = c.left;
    r.id = kMergedAway;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    if (symbols[i].id >= 0) out.push_back(symbols[i].id);
  }
}

}  // namespace chorus::tok
