// The GPU weight layout, checked on the host (no device needed): row groups with zero padding,
// and the Q4_K / Q6_K records decoded by an independent model of the bit extraction the
// kernels do (quant_tile.cuh: PartQ4K, PartQ6K) against the scalar GGUF dequantizer.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cuda/weight_repack.h"
#include "engine/quant/dequant.h"
#include "engine/quant/fp16.h"
#include "tests/cuda/cuda_test_util.h"

namespace chorus::cuda {
namespace {

std::vector<uint8_t> repack(TensorType type, const std::vector<uint8_t>& raw, int64_t k, int64_t n) {
  const size_t row_bytes = row_size_bytes(type, k);
  std::vector<const uint8_t*> rows(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) rows[static_cast<size_t>(r)] = raw.data() + r * row_bytes;
  const RepackedShape shape{n, k, (k + kTileElems - 1) / kTileElems, *tile_record_bytes(type)};
  std::vector<uint8_t> out(shape.size_bytes(), 0xAB);
  repack_groups(type, k, rows, 0, shape.n_groups(), out.data());
  return out;
}

uint32_t word(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return quant::fp16_to_f32(h);
}

// Q4_K record: part t's scales and mins in byte t of the words at 4, 8, 12 (a 24-bit field:
// sc of sub-block 2t, sc of 2t+1, m of 2t, m of 2t+1, 6 bits each); word wd of its qs (bytes
// 16 + 32t + 4wd): low nibbles of elements 4wd, 4wd+2 at bits 0 / 8 and 4wd+1, 4wd+3 at bits
// 16 / 24 (sub-block 2t); high nibbles likewise for elements 32 + ... (sub-block 2t+1).
std::vector<float> decode_q4k(const uint8_t* rec) {
  const float d = half_at(rec), dmin = half_at(rec + 2);
  std::vector<float> out(256);
  for (int t = 0; t < 4; ++t) {
    const uint32_t field = rec[4 + t] | (rec[8 + t] << 8) | (rec[12 + t] << 16);
    const int s_lo = field & 63, s_hi = (field >> 6) & 63, m_lo = (field >> 12) & 63, m_hi = (field >> 18) & 63;
    for (int wd = 0; wd < 8; ++wd) {
      const uint32_t v = word(rec + 16 + 32 * t + 4 * wd);
      const int shift_of[4] = {0, 16, 8, 24};  // element 4wd + i
      for (int i = 0; i < 4; ++i) {
        const int lo = (v >> shift_of[i]) & 0xF, hi = (v >> (shift_of[i] + 4)) & 0xF;
        out[64 * t + 4 * wd + i] = d * s_lo * lo - dmin * m_lo;
        out[64 * t + 32 + 4 * wd + i] = d * s_hi * hi - dmin * m_hi;
      }
    }
  }
  return out;
}

// Q6_K record: part t's words 12t + 6g + k hold its half2 16g..16g+16. Half2 4c'+j of the
// half (c' = 0..2) is the 6-bit field at bit 0 (j even) or 6 (j odd) of word 2c' + j/2; half2
// 12+j is the nibble at bits 12-15 of word j with the pair at bits 12 + 2(j%2) of word 4 + j/2.
// The high lane (+16 bits) holds the odd element. Scales (int8) per 16 elements at 192, d at 208.
std::vector<float> decode_q6k(const uint8_t* rec) {
  const float d = half_at(rec + 208);
  std::vector<float> out(256);
  for (int t = 0; t < 4; ++t) {
    for (int g = 0; g < 2; ++g) {
      const uint8_t* words = rec + 4 * (12 * t + 6 * g);
      for (int h = 0; h < 16; ++h) {
        for (int odd = 0; odd < 2; ++odd) {
          int q = 0;
          if (h < 12) {
            q = (word(words + 4 * (h / 2)) >> (6 * (h % 2) + 16 * odd)) & 63;
          } else {
            const int j = h - 12;
            const int lo = (word(words + 4 * j) >> (12 + 16 * odd)) & 0xF;
            const int hi = (word(words + 4 * (4 + j / 2)) >> (12 + 2 * (j % 2) + 16 * odd)) & 3;
            q = lo | (hi << 4);
          }
          const int e = 64 * t + 32 * g + 2 * h + odd;
          const int sc = static_cast<int8_t>(rec[192 + e / 16]);
          out[static_cast<size_t>(e)] = d * sc * (q - 32);
        }
      }
    }
  }
  return out;
}

TEST(WeightRepack, KQuantRecordsDecodeLikeGgml) {
  std::mt19937 rng(5);
  for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K}) {
    const int64_t k = 512, n = 37;  // rows not a multiple of the 16-row group
    const auto raw = test::random_tensor(type, k, n, rng);
    const auto packed = repack(type, raw, k, n);
    const int rec = *tile_record_bytes(type);
    const size_t row_bytes = row_size_bytes(type, k);
    for (int64_t r = 0; r < n; ++r) {
      std::vector<float> want(static_cast<size_t>(k));
      quant::dequantize_row(type, raw.data() + r * row_bytes, want.data(), k);
      for (int64_t tile = 0; tile < k / 256; ++tile) {
        const uint8_t* p = packed.data() + record_offset(r, tile, k / 256, rec);
        const auto got = type == TensorType::Q4_K ? decode_q4k(p) : decode_q6k(p);
        for (int e = 0; e < 256; ++e) {
          ASSERT_NEAR(got[static_cast<size_t>(e)], want[static_cast<size_t>(tile * 256 + e)], 1e-6f)
              << tensor_type_name(static_cast<uint32_t>(type)) << " row " << r << " elem " << tile * 256 + e;
        }
      }
    }
    // Rows 37..47 of the last group are zero records.
    for (int64_t r = n; r < 48; ++r) {
      for (int64_t tile = 0; tile < k / 256; ++tile) {
        const uint8_t* p = packed.data() + record_offset(r, tile, k / 256, rec);
        for (int i = 0; i < rec; ++i) ASSERT_EQ(p[i], 0) << "padding row " << r;
      }
    }
  }
}

TEST(WeightRepack, ThreadedRepackGivesTheSameBytes) {
  // The loader repacks on a thread pool; a slab's groups may be split anywhere.
  std::mt19937 rng(9);
  ThreadPool pool(3);
  for (TensorType type : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q4_0, TensorType::F16}) {
    const bool k_quant = type == TensorType::Q4_K || type == TensorType::Q6_K;
    const int64_t k = k_quant ? 512 : 320, n = 300;  // 19 groups, the last one partial
    const auto raw = test::random_tensor(type, k, n, rng);
    const auto serial = repack(type, raw, k, n);
    const size_t row_bytes = row_size_bytes(type, k);
    std::vector<const uint8_t*> rows(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) rows[static_cast<size_t>(r)] = raw.data() + r * row_bytes;
    const RepackedShape shape{n, k, (k + kTileElems - 1) / kTileElems, *tile_record_bytes(type)};
    const int64_t group_bytes = int64_t{kRowGroup} * shape.n_tiles * shape.record_bytes;
    std::vector<uint8_t> threaded(shape.size_bytes(), 0xCD);
    repack_groups(pool, type, k, rows, 0, 7, threaded.data());  // two slabs, as the loader does
    repack_groups(pool, type, k, rows, 7, shape.n_groups(), threaded.data() + 7 * group_bytes);
    EXPECT_EQ(threaded, serial) << tensor_type_name(static_cast<uint32_t>(type));
  }
}

TEST(WeightRepack, GroupsKeepEachWarpTileContiguous) {
  // record_offset: the 16 records of (group, tile) are one run; tiles of a group follow.
  const int rec = 144;
  const int64_t n_tiles = 3;
  for (int64_t r = 0; r < 40; ++r) {
    for (int64_t t = 0; t < n_tiles; ++t) {
      EXPECT_EQ(record_offset(r, t, n_tiles, rec), ((r / 16) * n_tiles * 16 + t * 16 + r % 16) * rec);
    }
  }
}

}  // namespace
}  // namespace chorus::cuda
