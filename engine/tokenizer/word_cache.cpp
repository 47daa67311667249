#include "engine/tokenizer/word_cache.h"

namespace chorus::tok {

WordCache::Shard& WordCache::shard(std::string_view word) const {
  const size_t h = StringHash{}(word);
  return shards_[(h >> 7) % kShards];  // low bits feed the shard's own table
}

bool WordCache::lookup(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxWordBytes) return false;
  Shard& s = shard(word);
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.map.find(word);
  if (it == s.map.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::insert(std::string_view word, const int32_t* ids, size_t n_ids) {
  if (word.size() > kMaxWordBytes) return;
  Shard& s = shard(word);
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.map.size() >= kMaxEntriesPerShard) s.map.clear();
  s.map.emplace(std::string(word), std::vector<int32_t>(ids, ids + n_ids));
}

}  // namespace chorus::tok
