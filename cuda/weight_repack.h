#pragma once
// Host-side repacking of a GGUF weight matrix into the GPU tile layout. The quant format is
// unchanged (same bits, same scales); only the placement moves so that every field a thread
// loads is 16-byte aligned: a row of K elements becomes ceil(K / 256) tile records of 256
// elements each, the record holding the type's blocks with quants and scales grouped.
// A partial last tile (K % 256 != 0, 32-element types only) is zero-filled (scale 0).
//
// Record layouts (byte offsets), thread t of a row owns elements [64t, 64t+64) of a tile:
//   F32  : f32[256]                                   1024 B
//   F16  : f16[256]                                    512 B
//   BF16 : bf16[256]                                   512 B
//   Q8_0 : qs[8][32] @0, d[8] @256                     272 B
//   Q4_0 : qs[8][16] @0, d[8] @128                     144 B
//   Q4_1 : qs[8][16] @0, d[8] @128, m[8] @144          160 B
//   Q5_0 : qs[8][16] @0, qh[8][4] @128, d[8] @160      176 B
//   Q5_1 : qs[8][16] @0, qh[8][4] @128, d[8] @160, m[8] @176   192 B
//   Q4_K : the ggml block as is (d, dmin, scales[12], qs[128])  144 B
//   Q5_K : the ggml block as is (d, dmin, scales[12], qh[32], qs[128])  176 B
//   Q6_K : ql[128] @0, qh[64] @128, scales[16] @192, d @208, pad   224 B
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/quant/tensor_type.h"

namespace chorus::cuda {

inline constexpr int kTileElems = 256;

// Record size in bytes of one 256-element tile; nullopt for types the GPU cannot compute with.
std::optional<int> tile_record_bytes(TensorType type);

struct RepackedShape {
  int64_t n_rows = 0;        // ne1: output features
  int64_t n_cols = 0;        // ne0: input features (K)
  int64_t n_tiles = 0;       // ceil(K / 256)
  int record_bytes = 0;
  size_t size_bytes() const { return static_cast<size_t>(n_rows * n_tiles * record_bytes); }
};

// Repacks rows [row_begin, row_end) of a row-major GGUF matrix (ne0 = n_cols per row) into
// `dst`, which holds (row_end - row_begin) * n_tiles * record_bytes bytes.
void repack_rows(TensorType type, const void* src, int64_t n_cols, int64_t row_begin, int64_t row_end,
                 uint8_t* dst);

}  // namespace chorus::cuda
