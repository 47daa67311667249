#include "cuda/weight_repack.h"

#include <cassert>
#include <cstring>

#include "engine/quant/blocks.h"

namespace chorus::cuda {
namespace {

using namespace chorus::quant;

// Blocks of 32 elements: copies quants and per-block halves into the grouped record.
// `nb_valid` blocks of this tile exist in the source row (the rest stay zero).
template <typename Block>
void pack_small(const Block* b, int nb_valid, uint8_t* rec) {
  for (int i = 0; i < nb_valid; ++i) {
    if constexpr (std::is_same_v<Block, BlockQ8_0>) {
      std::memcpy(rec + 32 * i, b[i].qs, 32);
      std::memcpy(rec + 256 + 2 * i, &b[i].d, 2);
    } else {
      std::memcpy(rec + 16 * i, b[i].qs, 16);
      if constexpr (std::is_same_v<Block, BlockQ4_0>) {
        std::memcpy(rec + 128 + 2 * i, &b[i].d, 2);
      } else if constexpr (std::is_same_v<Block, BlockQ4_1>) {
        std::memcpy(rec + 128 + 2 * i, &b[i].d, 2);
        std::memcpy(rec + 144 + 2 * i, &b[i].m, 2);
      } else if constexpr (std::is_same_v<Block, BlockQ5_0>) {
        std::memcpy(rec + 128 + 4 * i, b[i].qh, 4);
        std::memcpy(rec + 160 + 2 * i, &b[i].d, 2);
      } else {
        static_assert(std::is_same_v<Block, BlockQ5_1>);
        std::memcpy(rec + 128 + 4 * i, b[i].qh, 4);
        std::memcpy(rec + 160 + 2 * i, &b[i].d, 2);
        std::memcpy(rec + 176 + 2 * i, &b[i].m, 2);
      }
    }
  }
}

template <typename Block>
void repack_small_row(const uint8_t* row, int64_t n_cols, int64_t n_tiles, int rec_bytes, uint8_t* dst) {
  const Block* blocks = reinterpret_cast<const Block*>(row);
  const int64_t n_blocks = n_cols / kQK;
  for (int64_t t = 0; t < n_tiles; ++t) {
    const int64_t first = t * 8;
    const int nb_valid = static_cast<int>(std::min<int64_t>(8, n_blocks - first));
    pack_small(blocks + first, nb_valid, dst + t * rec_bytes);
  }
}

void repack_plain_row(const uint8_t* row, int64_t n_cols, int64_t n_tiles, int elem_bytes, uint8_t* dst) {
  for (int64_t t = 0; t < n_tiles; ++t) {
    const int64_t n = std::min<int64_t>(kTileElems, n_cols - t * kTileElems);
    std::memcpy(dst + t * kTileElems * elem_bytes, row + t * kTileElems * elem_bytes, static_cast<size_t>(n * elem_bytes));
  }
}

void repack_q6k_row(const uint8_t* row, int64_t n_tiles, uint8_t* dst) {
  const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(row);
  for (int64_t t = 0; t < n_tiles; ++t) {
    uint8_t* rec = dst + t * 224;
    std::memcpy(rec, b[t].ql, 128);
    std::memcpy(rec + 128, b[t].qh, 64);
    std::memcpy(rec + 192, b[t].scales, 16);
    std::memcpy(rec + 208, &b[t].d, 2);
  }
}

}  // namespace

std::optional<int> tile_record_bytes(TensorType type) {
  switch (type) {
    case TensorType::F32: return 1024;
    case TensorType::F16: return 512;
    case TensorType::BF16: return 512;
    case TensorType::Q8_0: return 272;
    case TensorType::Q4_0: return 144;
    case TensorType::Q4_1: return 160;
    case TensorType::Q5_0: return 176;
    case TensorType::Q5_1: return 192;
    case TensorType::Q4_K: return 144;
    case TensorType::Q5_K: return 176;
    case TensorType::Q6_K: return 224;
    default: return std::nullopt;
  }
}

void repack_rows(TensorType type, const void* src, int64_t n_cols, int64_t row_begin, int64_t row_end,
                 uint8_t* dst) {
  const int rec = *tile_record_bytes(type);
  const int64_t n_tiles = (n_cols + kTileElems - 1) / kTileElems;
  const size_t src_row_bytes = row_size_bytes(type, n_cols);
  const size_t dst_row_bytes = static_cast<size_t>(n_tiles * rec);
  std::memset(dst, 0, dst_row_bytes * static_cast<size_t>(row_end - row_begin));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = static_cast<const uint8_t*>(src) + static_cast<size_t>(r) * src_row_bytes;
    uint8_t* out = dst + static_cast<size_t>(r - row_begin) * dst_row_bytes;
    switch (type) {
      case TensorType::F32: repack_plain_row(row, n_cols, n_tiles, 4, out); break;
      case TensorType::F16:
      case TensorType::BF16: repack_plain_row(row, n_cols, n_tiles, 2, out); break;
      case TensorType::Q8_0: repack_small_row<BlockQ8_0>(row, n_cols, n_tiles, rec, out); break;
      case TensorType::Q4_0: repack_small_row<BlockQ4_0>(row, n_cols, n_tiles, rec, out); break;
      case TensorType::Q4_1: repack_small_row<BlockQ4_1>(row, n_cols, n_tiles, rec, out); break;
      case TensorType::Q5_0: repack_small_row<BlockQ5_0>(row, n_cols, n_tiles, rec, out); break;
      case TensorType::Q5_1: repack_small_row<BlockQ5_1>(row, n_cols, n_tiles, rec, out); break;
      case TensorType::Q4_K:
      case TensorType::Q5_K: std::memcpy(out, row, src_row_bytes); break;
      case TensorType::Q6_K: repack_q6k_row(row, n_tiles, out); break;
      default: assert(false && "unsupported type"); break;
    }
  }
}

}  // namespace chorus::cuda
