#pragma once
// A bounded, thread-safe cache of BPE results per pre-tokenized word. Text repeats words
// heavily, so most words are looked up rather than merged. Sharded by hash, each shard with
// its own mutex, so concurrent encode() calls rarely wait on each other; a full shard is
// simply cleared (cheap, and keeps memory bounded on adversarial input).
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace chorus::tok {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 64;          // longer words are not cached
  static constexpr size_t kMaxEntriesPerShard = 8192;  // 16 shards -> at most ~131k words

  // Appends the cached ids of `word` to `out`; false when absent.
  bool lookup(std::string_view word, std::vector<int32_t>& out) const;
  void insert(std::string_view word, const int32_t* ids, size_t n_ids);

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map;
  };
  Shard& shard(std::string_view word) const;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace chorus::tok
