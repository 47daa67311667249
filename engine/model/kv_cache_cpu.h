#pragma once
// Paged F32 KV cache for the CPU backend. Position p of a sequence lives in block
// block_table[p / block_tokens], slot p % block_tokens. Storage is reserved up front but
// left untouched, so the operating system commits pages only as sequences fill them.
#include <cstdint>
#include <memory>
#include <span>

namespace chorus {

class CpuKvCache {
 public:
  CpuKvCache(int32_t n_layers, int32_t kv_dim, int32_t block_tokens, int32_t n_blocks);

  int32_t block_tokens() const { return block_tokens_; }
  int32_t n_blocks() const { return n_blocks_; }
  int64_t size_bytes() const { return 2 * n_floats_ * static_cast<int64_t>(sizeof(float)); }

  // [kv_dim] slot of position `pos` in layer `layer` of the sequence with this block table.
  float* k_at(int32_t layer, std::span<const int32_t> block_table, int32_t pos) {
    return k_.get() + offset(layer, block_table, pos);
  }
  float* v_at(int32_t layer, std::span<const int32_t> block_table, int32_t pos) {
    return v_.get() + offset(layer, block_table, pos);
  }

 private:
  int64_t offset(int32_t layer, std::span<const int32_t> block_table, int32_t pos) const {
    const int32_t block = block_table[static_cast<size_t>(pos / block_tokens_)];
    const int64_t slot = (static_cast<int64_t>(layer) * n_blocks_ + block) * block_tokens_ + pos % block_tokens_;
    return slot * kv_dim_;
  }

  int32_t kv_dim_, block_tokens_, n_blocks_;
  int64_t n_floats_;
  std::unique_ptr<float[]> k_, v_;  // [n_layers][n_blocks][block_tokens][kv_dim]
};

}  // namespace chorus
