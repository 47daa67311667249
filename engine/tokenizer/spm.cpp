#include "engine/tokenizer/spm.h"

#include <cstdio>
#include <queue>

#include "engine/tokenizer/utf8.h"

namespace chorus::tok {
namespace {

struct Symbol {
  uint32_t offset;  // into the escaped text
  uint32_t n_bytes; // 0 once merged into its left neighbour
  int32_t prev, next;
};

struct Candidate {
  float score;
  int32_t left, right;
  uint32_t n_bytes;  // combined length when queued; a change means the candidate is stale
  int32_t id;
};

struct WorseFirst {  // max-heap on score, then leftmost
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  }
};

bool mergeable(TokenType t) {
  return t == TokenType::Normal || t == TokenType::UserDefined || t == TokenType::Unused ||
         t == TokenType::Undefined;
}

size_t char_len(std::string_view rest) {
  const Utf8Seq s = utf8_decode(rest);
  return s.status == Utf8Status::Valid ? s.n_bytes : 1;
}

}  // namespace

std::string spm_escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') out += kSpmSpace;
    else out += c;
  }
  return out;
}

Result<SpmModel> SpmModel::build(const Vocab& vocab) {
  SpmModel m;
  m.byte_token_.fill(-1);
  m.unk_id_ = vocab.data().unk_id;
  m.pieces_.reserve(static_cast<size_t>(vocab.n_tokens()));
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    if (auto id = vocab.find(name)) m.byte_token_[b] = *id;
  }
  for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
    if (!mergeable(vocab.type(id)) || vocab.text(id).empty()) continue;
    m.pieces_.emplace(vocab.text(id), Piece{id, vocab.score(id)});
  }
  if (m.pieces_.empty()) return make_error("SentencePiece vocabulary has no normal tokens");
  return m;
}

const SpmModel::Piece* SpmModel::find_piece(std::string_view text) const {
  auto it = pieces_.find(text);
  return it == pieces_.end() ? nullptr : &it->second;
}

void SpmModel::emit_symbol(std::string_view text, std::vector<int32_t>& out) const {
  if (const Piece* p = find_piece(text)) {
    out.push_back(p->id);
    return;
  }
  for (char c : text) {
    const int32_t id = byte_token_[static_cast<uint8_t>(c)];
    if (id >= 0) out.push_back(id);
    else if (unk_id_ >= 0 && (out.empty() || out.back() != unk_id_)) out.push_back(unk_id_);
  }
}

void SpmModel::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto n = static_cast<uint32_t>(char_len(text.substr(pos)));
    const auto idx = static_cast<int32_t>(symbols.size());
    symbols.push_back({static_cast<uint32_t>(pos), n, idx - 1, -1});
    if (idx > 0) symbols[idx - 1].next = idx;
    pos += n;
  }
  // The initial pairs are heapified at once (O(n)); later ones are pushed as merges happen.
  std::vector<Candidate> initial;
  initial.reserve(symbols.size());
  auto candidate = [&](int32_t l, int32_t r, std::vector<Candidate>& dst) {
    const uint32_t n = symbols[l].n_bytes + symbols[r].n_bytes;
    if (const Piece* p = find_piece(text.substr(symbols[l].offset, n))) {
      dst.push_back({p->score, l, r, n, p->id});
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) candidate(i, i + 1, initial);
  std::priority_queue<Candidate, std::vector<Candidate>, WorseFirst> heap(WorseFirst{}, std::move(initial));
  std::vector<Candidate> one;
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    one.clear();
    candidate(l, r, one);
    if (!one.empty()) heap.push(one[0]);
  };
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = symbols[c.left];
    Symbol& r = symbols[c.right];
    if (l.n_bytes == 0 || r.n_bytes == 0 || l.next != c.right || l.n_bytes + r.n_bytes != c.n_bytes) {
      continue;
    }
    l.n_bytes += r.n_bytes;
    r.n_bytes = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    emit_symbol(text.substr(symbols[i].offset, symbols[i].n_bytes), out);
  }
}

}  // namespace chorus::tok
