#pragma once
// Host side of the batched GEMV (gemv.h): shared-memory sizing, the chunk fitted to the
// occupancy, and the launches of gemv_kernel and gemv_pair_kernel (gemv_kernel.cuh), plus the
// dequantization and embedding launchers. Included by one .cu per type family, which
// instantiates them with CHORUS_INSTANTIATE_GEMV.
#include <algorithm>
#include <string>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/gemv_kernel.cuh"
#include "cuda/launch.cuh"
#include "cuda/occupancy.h"
#include "cuda/spread_smem.h"

namespace chorus::cuda {

namespace detail {

// Bytes of the x chunk (+ sub-block sums) / epilogue area for this launch, and the slack that
// aligns it to 1024.
inline size_t gemv_x_region_bytes(const GemvParams& p, int block_rows, int xsum_tile_bytes) {
  // Chunk buffers: two (async) or one, sums for two chunks; a ring: a tile and its sums each.
  const size_t n_bufs = p.x_ring_bufs > 0 ? p.x_ring_bufs : (gemv_x_async(p.in) ? 2 : 1);
  const size_t n_sums = p.x_ring_bufs > 0 ? p.x_ring_bufs : 2;
  const size_t x = (n_bufs * gemv_x_tile_stride(p.n_seqs, p.x_tma) + n_sums * static_cast<size_t>(xsum_tile_bytes)) *
                   p.x_chunk_tiles;
  const size_t vals = static_cast<size_t>(p.n_seqs) * block_rows * 4;
  return (std::max(x, vals) + 15) / 16 * 16 + (p.x_tma ? 1024 : 0);
}

// The opt-in limit is 227 KiB per block including static shared memory (rstd, flags).
inline constexpr int kGemvMaxSmem = 220 * 1024;

// Raises a GEMV kernel's dynamic shared-memory limit and asks for the largest shared carveout.
inline void prepare_kernel(const void* kernel) {
  CHORUS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kGemvMaxSmem));
  CHORUS_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
}

// f(std::integral_constant<int, kNT>) for the column groups (8 activation rows each) of n_seqs
// rows; each_column_groups calls it for every kNT a launch may take.
template <typename F>
void with_column_groups(int n_seqs, F&& f) {
  switch ((n_seqs + 7) / 8) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    default: f(std::integral_constant<int, 4>{}); break;
  }
}
template <typename F>
void each_column_groups(F&& f) {
  for (int n_seqs : {8, 16, 24, 32}) with_column_groups(n_seqs, f);
}

inline void check_record(int got, int want) {
  if (got != want) {
    throw CudaError("gemv: records of " + std::to_string(got) + " bytes, the kernel expects " + std::to_string(want));
  }
}

// Launches `kernel` over `blocks` row blocks x the splits, the splits of a row block forming a
// cluster where they meet in one (GemvReduce::Cluster).
template <typename Kernel>
void launch_blocks(Kernel kernel, const GemvParams& p, int blocks, int threads, size_t smem, cudaStream_t stream) {
  if (smem > static_cast<size_t>(kGemvMaxSmem)) throw CudaError("gemv: " + std::to_string(smem) + " bytes of shared memory");
  const unsigned cluster_y = p.split.reduce == GemvReduce::Cluster ? static_cast<unsigned>(p.split.n_splits) : 1u;
  launch_pdl_clustered(kernel, dim3(blocks, p.split.n_splits), dim3(threads), smem, dim3(1, cluster_y, 1), stream, p);
}

// With p.spread_blocks, the shared memory (at least `smem`) that lets a multiprocessor hold at
// most ceil(blocks / multiprocessors) of the launch's blocks (spread_smem.h); `smem` otherwise.
template <typename Kernel>
size_t gemv_spread_smem(Kernel kernel, const GemvParams& p, int blocks, int threads, size_t smem) {
  if (p.spread_blocks == 0) return smem;
  const void* k = reinterpret_cast<const void*>(kernel);
  const int cap = spread_cap(int64_t{blocks} * p.split.n_splits, multiprocessor_count());
  return least_smem_for_cap([&](size_t bytes) { return blocks_per_multiprocessor(k, threads, bytes); }, smem,
                            kGemvMaxSmem, cap);
}

// Whether the launch prefetches its residual rows (kGemvEarlyResidual): one column group, the
// splits added by a block known at the start, 16-byte aligned rows.
template <int kNT>
bool gemv_prefetches_residual(const GemvParams& p) {
  return kNT == 1 && (p.early_loads & kGemvEarlyResidual) != 0 && p.out.kind == GemvOut::Residual &&
         (p.split.n_splits == 1 || p.split.reduce == GemvReduce::Cluster) && p.out.out_stride % 4 == 0 &&
         p.mats.col_begin[0] % 4 == 0 && reinterpret_cast<uintptr_t>(p.out.out) % 16 == 0;
}

// Whether the splits' sums go by pushes (kGemvEarlyPush): one column group, added in a cluster.
template <int kNT>
bool gemv_pushes_splits(const GemvParams& p) {
  return kNT == 1 && (p.early_loads & kGemvEarlyPush) != 0 && p.split.reduce == GemvReduce::Cluster;
}

// The push route's receive area after `smem` bytes: its offset (16-byte aligned) into
// p.push_smem_offset, and the launch's dynamic shared memory with it.
template <int kNT>
size_t gemv_add_push_area(GemvParams& p, size_t smem) {
  p.push_smem_offset = 0;
  if (!gemv_pushes_splits<kNT>(p)) return smem;
  const size_t offset = (smem + 15) / 16 * 16;
  p.push_smem_offset = static_cast<int32_t>(offset);
  return offset + 16 + static_cast<size_t>(p.split.n_splits - 1) * p.n_seqs * kGemvRowsPerBlock * 4;
}

// Offset of the prefetched residual rows (after the x region) and the launch's dynamic shared
// memory.
template <TensorType kType, int kNT>
size_t gemv_smem_bytes(const GemvParams& p, size_t* resid_offset = nullptr) {
  using S = GemvShape<kType, kNT>;
  const size_t base = S::kBarBytes + S::kWBytes + gemv_x_region_bytes(p, S::kBlockRows, S::kXsumTileBytes);
  if (resid_offset) *resid_offset = gemv_prefetches_residual<kNT>(p) ? base : 0;
  return base + (gemv_prefetches_residual<kNT>(p) ? static_cast<size_t>(p.n_seqs) * kGemvRowsPerBlock * 4 : 0);
}

// Blocks of gemv_kernel<kType, kNT> that one multiprocessor holds with `smem` bytes of dynamic
// shared memory (occupancy.h).
template <TensorType kType, int kNT>
int gemv_blocks_per_sm(size_t smem) {
  return blocks_per_multiprocessor(reinterpret_cast<const void*>(gemv_kernel<kType, kNT>),
                                   GemvShape<kType, kNT>::kWarps * 32, smem);
}

// Up to 8 rows, the largest x chunk (at most launch_gemv's) that still lets the most blocks
// share a multiprocessor: a chunk's tiles cost shared memory next to the weight stages, and
// these launches are latency-bound, so a block more per multiprocessor is worth more than
// fewer chunk barriers (perf-notes v12). Fewer tiles a chunk give the same bits. The most
// blocks are those of a one-tile chunk (fewer bytes never fit fewer blocks), so the search
// stops at the first chunk, from the largest down, that fits as many.
template <TensorType kType, int kNT>
int gemv_fit_chunk(GemvParams q) {
  const int max_chunk = q.x_chunk_tiles;
  q.x_chunk_tiles = 1;
  const int most = gemv_blocks_per_sm<kType, kNT>(gemv_smem_bytes<kType, kNT>(q));
  for (int c = max_chunk; c > 1; --c) {
    q.x_chunk_tiles = c;
    if (gemv_blocks_per_sm<kType, kNT>(gemv_smem_bytes<kType, kNT>(q)) >= most) return c;
  }
  return 1;
}

template <TensorType kType, int kNT>
void launch_nt(const GemvParams& p_in, cudaStream_t stream) {
  using S = GemvShape<kType, kNT>;
  check_record(p_in.mats.record_bytes, S::kRec);
  GemvParams p = p_in;
  if (p.x_budget_bytes == 0 && p.x_ring_bufs == 0 && p.n_seqs <= 8) p.x_chunk_tiles = gemv_fit_chunk<kType, kNT>(p);
  size_t resid_offset = 0;
  const size_t smem = gemv_add_push_area<kNT>(p, gemv_smem_bytes<kType, kNT>(p, &resid_offset));
  p.resid_smem_offset = static_cast<int32_t>(resid_offset);
  const int blocks = gemv_row_blocks(p.mats, S::kBlockRows);
  launch_blocks(gemv_kernel<kType, kNT>, p, blocks, S::kWarps * 32,
                gemv_spread_smem(gemv_kernel<kType, kNT>, p, blocks, S::kWarps * 32, smem), stream);
}

// A two-type launch (gemv_pair_kernel): the chunk that suits both types' blocks, shared memory
// for the larger of the two layouts, and the prefetched residual rows past both.
template <TensorType kA, TensorType kB, int kNT>
void launch_pair_nt(const GemvParams& p_in, cudaStream_t stream) {
  using SA = GemvShape<kA, kNT>;
  check_record(p_in.mats.record_bytes, SA::kRec);
  check_record(p_in.mats.record_bytes_b, GemvShape<kB, kNT>::kRec);
  GemvParams p = p_in;
  if (p.x_budget_bytes == 0 && p.x_ring_bufs == 0 && p.n_seqs <= 8) {
    p.x_chunk_tiles = std::min(gemv_fit_chunk<kA, kNT>(p), gemv_fit_chunk<kB, kNT>(p));
  }
  size_t off_a = 0, off_b = 0;
  const size_t smem_a = gemv_smem_bytes<kA, kNT>(p, &off_a), smem_b = gemv_smem_bytes<kB, kNT>(p, &off_b);
  const size_t resid_bytes = off_a > 0 ? smem_a - off_a : 0;  // the same for both (gemv_prefetches_residual)
  const size_t resid_offset = std::max(off_a, off_b);
  const size_t smem =
      gemv_add_push_area<kNT>(p, resid_offset > 0 ? resid_offset + resid_bytes : std::max(smem_a, smem_b));
  p.resid_smem_offset = static_cast<int32_t>(resid_offset);
  const int blocks = gemv_row_blocks(p.mats, SA::kBlockRows);
  launch_blocks(gemv_pair_kernel<kA, kB, kNT>, p, blocks, SA::kWarps * 32,
                gemv_spread_smem(gemv_pair_kernel<kA, kB, kNT>, p, blocks, SA::kWarps * 32, smem), stream);
}

template <TensorType kA, TensorType kB>
void prepare_pair_typed() {
  each_column_groups([](auto nt) { prepare_kernel(reinterpret_cast<const void*>(gemv_pair_kernel<kA, kB, nt.value>)); });
}

template <TensorType kA, TensorType kB>
void launch_pair_typed(const GemvParams& p, cudaStream_t stream) {
  with_column_groups(p.n_seqs, [&](auto nt) { launch_pair_nt<kA, kB, nt.value>(p, stream); });
}

template <TensorType kType>
void prepare_gemv_typed() {
  each_column_groups([](auto nt) { prepare_kernel(reinterpret_cast<const void*>(gemv_kernel<kType, nt.value>)); });
}

template <TensorType kType>
void launch_gemv_typed(const GemvParams& p, cudaStream_t stream) {
  with_column_groups(p.n_seqs, [&](auto nt) { launch_nt<kType, nt.value>(p, stream); });
}

template <TensorType kType>
void launch_dequant_typed(const uint8_t* w, int64_t n_rows, int32_t n_tiles, int32_t record_bytes, __half* out,
                          cudaStream_t stream) {
  const int64_t total = n_rows * n_tiles * 4;
  const int threads = kDequantThreads;
  dequant_f16_kernel<kType><<<static_cast<unsigned>((total + threads - 1) / threads), threads, 0, stream>>>(
      w, n_rows, n_tiles, record_bytes, out);
  CHORUS_CUDA_CHECK_LAUNCH();
}

template <TensorType kType>
void launch_embed_typed(const EmbedParams& p, cudaStream_t stream) {
  embed_kernel<kType><<<p.n_tokens, 128, 0, stream>>>(p);
  CHORUS_CUDA_CHECK_LAUNCH();
}

}  // namespace detail

#define CHORUS_INSTANTIATE_GEMV(T)                                                                         \
  template void detail::prepare_gemv_typed<T>();                                                            \
  template void detail::launch_gemv_typed<T>(const GemvParams&, cudaStream_t);                             \
  template void detail::launch_dequant_typed<T>(const uint8_t*, int64_t, int32_t, int32_t, __half*,        \
                                                cudaStream_t);                                             \
  template void detail::launch_embed_typed<T>(const EmbedParams&, cudaStream_t);

}  // namespace chorus::cuda
