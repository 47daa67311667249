#include "engine/model/kv_cache_cpu.h"

namespace chorus {

CpuKvCache::CpuKvCache(int32_t n_layers, int32_t kv_dim, int32_t block_tokens, int32_t n_blocks)
    : kv_dim_(kv_dim), block_tokens_(block_tokens), n_blocks_(n_blocks),
      n_floats_(static_cast<int64_t>(n_layers) * n_blocks * block_tokens * kv_dim),
      // Default-initialised (not zeroed): untouched pages are never committed.
      k_(new float[static_cast<size_t>(n_floats_)]),
      v_(new float[static_cast<size_t>(n_floats_)]) {}

}  // namespace chorus
