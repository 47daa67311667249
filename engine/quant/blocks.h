#pragma once
// Block layouts of ggml's quantized types, bit-exact with GGUF files. A row of n elements is
// n / block_elems consecutive blocks. `d`/`m` fields are IEEE half floats stored as uint16.
// These structs are plain data and are shared with the CUDA kernels (no CUDA types here).
#include <cstdint>

namespace chorus::quant {

inline constexpr int kQK = 32;    // elements per block of the 32-element types
inline constexpr int kQK_K = 256; // elements per super-block of the K types
inline constexpr int kKScaleBytes = 12;

#pragma pack(push, 1)
// x = d * (q - 8), q in 0..15; qs[j] low nibble is element j, high nibble element j+16.
struct BlockQ4_0 { uint16_t d; uint8_t qs[kQK / 2]; };
// x = d * q + m.
struct BlockQ4_1 { uint16_t d; uint16_t m; uint8_t qs[kQK / 2]; };
// 5th bit of element j in bit j of qh; x = d * (q - 16).
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
// x = d * q + m.
struct BlockQ5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
// x = d * q, q signed 8-bit.
struct BlockQ8_0 { uint16_t d; int8_t qs[kQK]; };
// 8 sub-blocks of 32 with 6-bit scales and mins packed in `scales`; x = d*sc*q - dmin*m.
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[kKScaleBytes]; uint8_t qs[kQK_K / 2]; };
// As Q4_K with a 5th bit per element in qh.
struct BlockQ5_K { uint16_t d; uint16_t dmin; uint8_t scales[kKScaleBytes]; uint8_t qh[kQK_K / 8]; uint8_t qs[kQK_K / 2]; };
// 16 sub-blocks of 16 with signed 8-bit scales; 6-bit quants: low 4 bits in ql, high 2 in qh.
struct BlockQ6_K { uint8_t ql[kQK_K / 2]; uint8_t qh[kQK_K / 4]; int8_t scales[kQK_K / 16]; uint16_t d; };
#pragma pack(pop)

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

}  // namespace chorus::quant
