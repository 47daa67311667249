#include "engine/sched/kv_block_allocator.h"

#include <cassert>
#include <cstddef>

namespace chorus {

KvBlockAllocator::KvBlockAllocator(int32_t n_blocks, int32_t block_tokens)
    : block_tokens_(block_tokens), n_blocks_total_(n_blocks) {
  assert(n_blocks >= 0 && block_tokens > 0);
  free_.reserve(static_cast<size_t>(n_blocks));
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int32_t KvBlockAllocator::blocks_for_tokens(int64_t n_tokens) const {
  if (n_tokens <= 0) return 0;
  return static_cast<int32_t>((n_tokens + block_tokens_ - 1) / block_tokens_);
}

bool KvBlockAllocator::grow_to(std::vector<int32_t>& table, int64_t n_tokens) {
  const int32_t need = blocks_for_tokens(n_tokens) - static_cast<int32_t>(table.size());
  if (need <= 0) return true;
  if (need > n_blocks_free()) return false;
  for (int32_t i = 0; i < need; ++i) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void KvBlockAllocator::release(std::vector<int32_t>& table) {
  // Released in reverse so that a sequence re-admitted right away gets the same ids back,
  // which keeps the cache layout (and any debugging of it) stable.
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    assert(*it >= 0 && *it < n_blocks_total_);
    free_.push_back(*it);
  }
  assert(static_cast<int32_t>(free_.size()) <= n_blocks_total_);
  table.clear();
}

}  // namespace chorus
