#pragma once
// Tensor maps for the bulk tensor copy engine (TMA, sm_90): how a kernel's cp.async.bulk.tensor
// finds a tile of a global array. Encoded on the host by the driver's cuTensorMapEncodeTiled,
// reached through the runtime's entry-point query so that nothing links libcuda directly (the
// library must load on machines without a driver: cuda_factory.cpp).
#include <cuda.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace chorus::cuda {

// The GEMV's activation rows x[n_seqs][x_stride] (f16) as a 3-d tensor
// [n_seqs][k_elems / 64][64] with 128-byte swizzling, boxes of box_rows rows x 4 parts of 64
// halves (one 256-column tile of each row). Rows past n_seqs and parts past K read as zeros.
// Returns false (the caller stages another way) when the layout does not allow it: K not a
// multiple of 64, x or its stride not 16-byte aligned, or the driver lacks the entry point.
bool encode_gemv_x_map(CUtensorMap& map, const __half* x, int64_t x_stride, int32_t k_elems, int32_t n_seqs,
                       int32_t box_rows);

}  // namespace chorus::cuda
