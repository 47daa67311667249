#pragma once
// Host-side repacking of a GGUF weight matrix into the GPU layout. The quant format is
// unchanged (same bits, same scales); only the placement moves.
//
// Rows come in groups of 16 (one GEMV warp's m16 tile); a row of K elements is cut into
// ceil(K / 256) tiles. Storage order is [row group][tile][16 rows][record], so the 16 records
// a warp needs for one tile are one contiguous run of 16 * record_bytes, fetched with a single
// bulk copy. Rows past the matrix in its last group are zero records (weights 0).
//
// Record layouts (byte offsets); thread part t (0..3) of a row owns elements [64t, 64t+64):
//   F32  : f32[256]                                   1024 B
//   F16  : f16[256]                                    512 B
//   BF16 : bf16[256]                                   512 B
//   Q8_0 : qs[8][32] @0, d[8] @256                     272 B
//   Q4_0 : qs[8][16] @0, d[8] @128                     144 B
//   Q4_1 : qs[8][16] @0, d[8] @128, m[8] @144          160 B
//   Q5_0 : qs[8][16] @0, qh[8][4] @128, d[8] @160      176 B
//   Q5_1 : qs[8][16] @0, qh[8][4] @128, d[8] @160, m[8] @176   192 B
//   Q4_K : d @0, dmin @2, the 6-bit scales and mins regrouped @4 (part t's 24-bit
//          q4k_part_field in byte t of the words @4, @8, @12: bits 0-7, 8-15, 16-23), the
//          ggml qs[128] @16 with bytes 1 and 2 of every 32-bit word swapped, so one mask
//          yields two neighbouring elements                                    144 B
//   Q5_K : the ggml block as is (d, dmin, scales[12], qh[32], qs[128])  176 B
//   Q6_K : part t's 12 words @48t: each 6-bit quant whole in a 16-bit lane where it can be,
//          scales[16] @192, d @208, pad             224 B   (see q6k_nibble_bit / q6k_high_bit)
// A partial last tile (K % 256 != 0, 32-element types only) is zero-filled (scale 0).
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/quant/tensor_type.h"
#include "engine/util/thread_pool.h"

// record_offset is shared by the host repacker and the kernels.
#if defined(__CUDACC__)
#define CHORUS_HOST_DEVICE __host__ __device__
#else
#define CHORUS_HOST_DEVICE
#endif

namespace chorus::cuda {

inline constexpr int kTileElems = 256;
inline constexpr int kRowGroup = 16;

// Record size in bytes of one 256-element tile; 0 for types the GPU cannot compute with.
// (Kernels size their pipelines with it at compile time.)
CHORUS_HOST_DEVICE constexpr int record_bytes_of(TensorType t) {
  switch (t) {
    case TensorType::F32: return 1024;
    case TensorType::F16: case TensorType::BF16: return 512;
    case TensorType::Q8_0: return 272;
    case TensorType::Q4_0: return 144;
    case TensorType::Q4_1: return 160;
    case TensorType::Q5_0: return 176;
    case TensorType::Q5_1: return 192;
    case TensorType::Q4_K: return 144;
    case TensorType::Q5_K: return 176;
    case TensorType::Q6_K: return 224;
    default: return 0;
  }
}

// The same, nullopt for types the GPU cannot compute with.
inline std::optional<int> tile_record_bytes(TensorType type) {
  const int bytes = record_bytes_of(type);
  return bytes > 0 ? std::optional<int>(bytes) : std::nullopt;
}

// Gate and up in one matrix (DeviceLayer::w_gate_up): 16-row groups alternate gate, up, so
// FFN feature i's gate is output column gate_up_column(i) and its up value the column 16
// further. Used by the upload, the GEMV's SwiGLU output and the prefill SwiGLU kernel.
CHORUS_HOST_DEVICE constexpr int64_t gate_up_column(int64_t i) { return (i / 16) * 32 + i % 16; }

// Bytes of one 16-row group of a repacked matrix: its records of every tile.
inline int64_t repacked_group_bytes(int64_t n_tiles, int record_bytes) {
  return int64_t{kRowGroup} * n_tiles * record_bytes;
}

struct RepackedShape {
  int64_t n_rows = 0;        // ne1: output features
  int64_t n_cols = 0;        // ne0: input features (K)
  int64_t n_tiles = 0;       // ceil(K / 256)
  int record_bytes = 0;
  int64_t n_groups() const { return (n_rows + kRowGroup - 1) / kRowGroup; }
  size_t size_bytes() const { return static_cast<size_t>(n_groups() * repacked_group_bytes(n_tiles, record_bytes)); }
};

// Byte offset of (row, tile)'s record in the repacked matrix.
CHORUS_HOST_DEVICE inline int64_t record_offset(int64_t row, int64_t tile, int64_t n_tiles, int record_bytes) {
  return ((row / kRowGroup * n_tiles + tile) * kRowGroup + row % kRowGroup) * record_bytes;
}

// Repacks the row groups [group_begin, group_end) of a matrix whose output row r is the GGUF
// row at rows[r] (n_cols elements of `type`; null or past the end of `rows`: a zero row).
// `dst` holds (group_end - group_begin) groups.
void repack_groups(TensorType type, int64_t n_cols, const std::vector<const uint8_t*>& rows, int64_t group_begin,
                   int64_t group_end, uint8_t* dst);

// The same with the groups spread over `pool`'s threads; every group is written by one thread,
// so the bytes do not depend on the partition.
void repack_groups(ThreadPool& pool, TensorType type, int64_t n_cols, const std::vector<const uint8_t*>& rows,
                   int64_t group_begin, int64_t group_end, uint8_t* dst);

// Q4_K: the scales and mins of part t's two sub-blocks (2t: low nibbles, 2t+1: high ones)
// from ggml's 12 packed bytes, as one 24-bit field: bits 0-5 sc[2t], 6-11 sc[2t+1], 12-17
// m[2t], 18-23 m[2t+1] (the repacker writes it, quant_tile.cuh's q4k_field reads it).
uint32_t q4k_part_field(const uint8_t* scales, int t);

// Q6_K record: where element e (0..255) of a tile keeps its low nibble and its high two bits
// (bit offsets from the record start), as the repacker writes them; PartQ6K (quant_tile.cuh)
// reads the same positions word by word.
//
// Part t's half2 w[16g + h] (elements 64t + 32g + 2h and the next, in the low and high 16-bit
// lanes of a word) lives in the six words 12t + 6g + k. Each lane of such a word holds two whole
// quants, A at bits 0-5 (h = 2k) and B at bits 6-11 (h = 2k + 1), and 4 spare bits 12-15. The
// spares of words 0-3 hold the low nibbles of h = 12..15, the spares of words 4 and 5 their high
// bit pairs. A whole quant costs the kernel one mask (and one shift for B) where the nibble and
// bit-pair split of ggml cost two shifts and two masks; 6 bits a quant either way.

// The first of the six words that hold element e.
inline int q6k_first_word(int e) {
  const int t = e / 64, i = (e % 64) / 2;
  return 12 * t + 6 * (i / 16);
}
inline int q6k_nibble_bit(int e) {
  const int h = (e % 64) / 2 % 16, lane = 16 * (e & 1);
  if (h < 12) return 32 * (q6k_first_word(e) + h / 2) + lane + 6 * (h % 2);
  return 32 * (q6k_first_word(e) + h - 12) + lane + 12;
}
inline int q6k_high_bit(int e) {
  const int h = (e % 64) / 2 % 16, lane = 16 * (e & 1);
  if (h < 12) return q6k_nibble_bit(e) + 4;
  return 32 * (q6k_first_word(e) + 4 + (h - 12) / 2) + lane + 12 + 2 * ((h - 12) % 2);
}

}  // namespace chorus::cuda
