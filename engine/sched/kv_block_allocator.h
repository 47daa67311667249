#pragma once
// Fixed-size KV cache blocks handed out to sequences, so cache memory follows the actual
// length of each conversation instead of a worst-case reservation. The allocator only
// tracks ownership; the backend owns the storage the ids refer to.
#include <cstdint>
#include <vector>

namespace chorus {

class KvBlockAllocator {
 public:
  KvBlockAllocator() = default;
  KvBlockAllocator(int32_t n_blocks, int32_t block_tokens);

  int32_t block_tokens() const { return block_tokens_; }
  int32_t n_blocks_total() const { return n_blocks_total_; }
  int32_t n_blocks_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t n_blocks_used() const { return n_blocks_total_ - n_blocks_free(); }

  // Blocks needed to hold `n_tokens` token slots.
  int32_t blocks_for_tokens(int64_t n_tokens) const;

  // Grows `table` so that it holds at least `n_tokens` slots. Returns false and leaves the
  // table unchanged when not enough blocks are free.
  bool grow_to(std::vector<int32_t>& table, int64_t n_tokens);
  // Returns every block of `table` to the pool and empties it.
  void release(std::vector<int32_t>& table);

 private:
  int32_t block_tokens_ = 16;
  int32_t n_blocks_total_ = 0;
  std::vector<int32_t> free_;  // stack of free block ids; lowest ids are handed out first
};

}  // namespace chorus
