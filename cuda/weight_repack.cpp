#include "cuda/weight_repack.h"

#include <array>
#include <bit>
#include <cassert>
#include <cstring>

#include "engine/quant/blocks.h"
#include "engine/quant/dequant.h"

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

// Q4_K: d and dmin as they are; the 12 bytes of 6-bit scales and mins regrouped per part
// (q4k_part_field); bytes 1 and 2 of each qs word swapped: a word then holds elements (j, j+1)
// of both sub-blocks in its low byte pair and (j+2, j+3) in its high one.
void repack_q4k_row(const uint8_t* row, int64_t n_tiles, uint8_t* dst) {
  for (int64_t t = 0; t < n_tiles; ++t) {
    const uint8_t* b = row + t * 144;
    uint8_t* rec = dst + t * 144;
    std::memcpy(rec, b, 4);
    for (int part = 0; part < 4; ++part) {
      const uint32_t field = q4k_part_field(b + 4, part);
      for (int byte = 0; byte < 3; ++byte) rec[4 + 4 * byte + part] = static_cast<uint8_t>(field >> (8 * byte));
    }
    for (int w = 0; w < 32; ++w) {
      const uint8_t* s = b + 16 + 4 * w;
      uint8_t* d = rec + 16 + 4 * w;
      d[0] = s[0]; d[1] = s[2]; d[2] = s[1]; d[3] = s[3];
    }
  }
}

// Where each element of a tile lands in a Q6_K record: the 32-bit word and shift of its low
// nibble and of its high bit pair (a nibble may straddle two bytes, never two words). An element
// then costs two ORs (bit by bit, an 8B model's Q6_K took a minute to load).
struct Q6kPlace {
  uint8_t lo_word, lo_shift, hi_word, hi_shift;
};
const std::array<Q6kPlace, 256>& q6k_places() {
  static const std::array<Q6kPlace, 256> places = [] {
    std::array<Q6kPlace, 256> p{};
    for (int e = 0; e < 256; ++e) {
      const int lo = q6k_nibble_bit(e), hi = q6k_high_bit(e);
      p[static_cast<size_t>(e)] = Q6kPlace{static_cast<uint8_t>(lo / 32), static_cast<uint8_t>(lo % 32),
                                           static_cast<uint8_t>(hi / 32), static_cast<uint8_t>(hi % 32)};
    }
    return p;
  }();
  return places;
}

// ggml keeps element e = 128n + 32grp + l of a Q6_K block as: low nibble in
// ql[64n + 32(grp & 1) + l] (low half for grp < 2, high half above), high bits at bit 2grp of
// qh[32n + l]; the 6-bit quant is 0..63 before the -32 offset.
void repack_q6k_row(const uint8_t* row, int64_t n_tiles, uint8_t* dst) {
  static_assert(std::endian::native == std::endian::little, "records are read as little-endian words");
  const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(row);
  const std::array<Q6kPlace, 256>& places = q6k_places();
  for (int64_t t = 0; t < n_tiles; ++t) {
    uint8_t* rec = dst + t * 224;
    std::array<uint32_t, 48> words{};  // the record's 192 bytes of quants
    for (int n = 0; n < 2; ++n) {
      for (int grp = 0; grp < 4; ++grp) {
        for (int l = 0; l < 32; ++l) {
          const int e = 128 * n + 32 * grp + l;
          const uint8_t ql = b[t].ql[64 * n + 32 * (grp & 1) + l];
          const uint32_t lo = grp < 2 ? (ql & 0xFu) : (ql >> 4);
          const uint32_t hi = (b[t].qh[32 * n + l] >> (2 * grp)) & 3u;
          const Q6kPlace& p = places[static_cast<size_t>(e)];
          words[p.lo_word] |= lo << p.lo_shift;
          words[p.hi_word] |= hi << p.hi_shift;
        }
      }
    }
    std::memcpy(rec, words.data(), 192);
    std::memcpy(rec + 192, b[t].scales, 16);
    std::memcpy(rec + 208, &b[t].d, 2);
    std::memset(rec + 210, 0, 14);
  }
}

// One source row into `n_tiles` consecutive records.
void repack_row(TensorType type, const uint8_t* row, int64_t n_cols, int64_t n_tiles, int rec, uint8_t* out) {
  switch (type) {
    case TensorType::F32: repack_plain_row(row, n_cols, n_tiles, 4, out); break;
    case TensorType::F16:
    case TensorType::BF16: repack_plain_row(row, n_cols, n_tiles, 2, out); break;
    case TensorType::Q8_0: repack_small_row<BlockQ8_0>(row, n_cols, n_tiles, rec, out); break;
    case TensorType::Q4_0: repack_small_row<BlockQ4_0>(row, n_cols, n_tiles, rec, out); break;
    case TensorType::Q4_1: repack_small_row<BlockQ4_1>(row, n_cols, n_tiles, rec, out); break;
    case TensorType::Q5_0: repack_small_row<BlockQ5_0>(row, n_cols, n_tiles, rec, out); break;
    case TensorType::Q5_1: repack_small_row<BlockQ5_1>(row, n_cols, n_tiles, rec, out); break;
    case TensorType::Q4_K: repack_q4k_row(row, n_tiles, out); break;
    case TensorType::Q5_K: std::memcpy(out, row, row_size_bytes(type, n_cols)); break;
    case TensorType::Q6_K: repack_q6k_row(row, n_tiles, out); break;
    default: assert(false && "unsupported type"); break;
  }
}

}  // namespace

void repack_groups(TensorType type, int64_t n_cols, const std::vector<const uint8_t*>& rows, int64_t group_begin,
                   int64_t group_end, uint8_t* dst) {
  const int rec = *tile_record_bytes(type);
  const int64_t n_tiles = (n_cols + kTileElems - 1) / kTileElems;
  std::memset(dst, 0, static_cast<size_t>((group_end - group_begin) * repacked_group_bytes(n_tiles, rec)));
  std::vector<uint8_t> one(static_cast<size_t>(n_tiles * rec));
  for (int64_t r = group_begin * kRowGroup; r < group_end * kRowGroup && r < static_cast<int64_t>(rows.size()); ++r) {
    const uint8_t* row = rows[static_cast<size_t>(r)];
    if (row == nullptr) continue;
    std::memset(one.data(), 0, one.size());
    repack_row(type, row, n_cols, n_tiles, rec, one.data());
    for (int64_t t = 0; t < n_tiles; ++t) {
      const int64_t off = record_offset(r - group_begin * kRowGroup, t, n_tiles, rec);
      std::memcpy(dst + off, one.data() + t * rec, static_cast<size_t>(rec));
    }
  }
}

void repack_groups(ThreadPool& pool, TensorType type, int64_t n_cols, const std::vector<const uint8_t*>& rows,
                   int64_t group_begin, int64_t group_end, uint8_t* dst) {
  const int64_t group_bytes = repacked_group_bytes((n_cols + kTileElems - 1) / kTileElems, *tile_record_bytes(type));
  pool.parallel_for(group_end - group_begin, 8, [&](int64_t b, int64_t e) {
    repack_groups(type, n_cols, rows, group_begin + b, group_begin + e, dst + b * group_bytes);
  });
}

uint32_t q4k_part_field(const uint8_t* scales, int t) {
  uint8_t sc_lo, m_lo, sc_hi, m_hi;
  quant::unpack_k_scale_min(2 * t, scales, &sc_lo, &m_lo);
  quant::unpack_k_scale_min(2 * t + 1, scales, &sc_hi, &m_hi);
  return uint32_t{sc_lo} | (uint32_t{sc_hi} << 6) | (uint32_t{m_lo} << 12) | (uint32_t{m_hi} << 18);
}

}  // namespace chorus::cuda
