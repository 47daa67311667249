#include <algorithm>
#include <climits>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/gemv.h"
#include "cuda/tensor_map.h"

namespace chorus::cuda {

GemvSplitShape gemv_choose_splits(int64_t total_rows, int32_t n_tiles, int32_t n_sms) {
  // The fewest splits that give at least 6 warps (16 rows x one split each) per multiprocessor,
  // keeping at least 2 tiles per split so the f32 partials stay small next to the weights.
  // Doubling past 6 warps a multiprocessor doubles the blocks: the step trace (perf-notes v17)
  // showed the 8B output and down products at 8 splits (512 blocks in clusters of 8) with blocks
  // that became resident only 5-12 us after the launch's release, a second wave, where 4 splits
  // (256 blocks) are all resident and prefetched before it. The old target (8 warps) chose 8
  // there; 6 chooses 4 for the 8B output and down products, 1 for the 1B gate|up, 8 for the 1B
  // down product, and the same as before elsewhere. (A target of 4 was faster only at N >= 16
  // and lost 20 % at 1B N = 8: perf-notes v13.)
  const int64_t warps = (total_rows + 15) / 16;
  int32_t splits = 1;
  while (warps * splits < 6 * n_sms && n_tiles / (splits * 2) >= 2 && splits < 16) splits *= 2;
  return gemv_split_shape(splits, n_tiles);
}

GemvSplitShape gemv_split_shape(int32_t n_splits, int32_t n_tiles) {
  const int32_t splits = std::clamp(n_splits, 1, std::max(1, std::min(16, n_tiles)));
  GemvSplitShape s;
  s.tiles_per_split = (n_tiles + splits - 1) / splits;
  s.n_splits = (n_tiles + s.tiles_per_split - 1) / s.tiles_per_split;  // no empty split
  return s;
}

namespace {

// Parameter combinations the kernel relies on; a violation is a bug in the caller.
void check_params(const GemvParams& p) {
  auto fail = [](const std::string& what) { throw CudaError("gemv: " + what); };
  if (p.n_seqs < 1 || p.n_seqs > kGemvMaxSeqs) fail(std::to_string(p.n_seqs) + " rows (1.." + std::to_string(kGemvMaxSeqs) + ")");
  if (p.mats.n_mats < 1 || p.mats.n_mats > kGemvMaxMats) fail("matrix count");
  if (p.split.n_splits < 1 || p.split.tiles_per_split < 1 ||
      (p.split.n_splits - 1) * p.split.tiles_per_split >= p.mats.n_tiles) {
    fail("split shape " + std::to_string(p.split.n_splits) + " x " + std::to_string(p.split.tiles_per_split) +
         " for " + std::to_string(p.mats.n_tiles) + " tiles");
  }
  const bool fused = p.out.kind != GemvOut::Partials && p.out.kind != GemvOut::Sum;
  if (fused && (p.mats.n_mats != 1 || p.mats.col_begin[0] != 0)) fail("fused outputs take one matrix at column 0");
  const bool counters = p.out.kind != GemvOut::Partials && p.split.n_splits > 1 && p.split.reduce == GemvReduce::Counters;
  if ((p.out.kind == GemvOut::Partials || counters) && p.split.partials == nullptr) fail("no partials buffer");
  if (counters && p.split.counters == nullptr) fail("no counters");
  if (p.split.reduce == GemvReduce::Cluster &&
      (p.out.kind == GemvOut::Partials || p.split.n_splits < 2 || p.split.n_splits > kGemvMaxClusterSplits)) {
    fail("cluster reduction of " + std::to_string(p.split.n_splits) + " splits");
  }
  if (p.out.kind == GemvOut::Logits && p.split.n_splits != 1) fail("logits take one split");
  if (gemv_x_half(p.in) && static_cast<int64_t>(p.n_seqs) * p.in.x_stride >= INT32_MAX) {
    fail("activation rows of " + std::to_string(p.in.x_stride) + " elements: the kernel's offsets are 32-bit");
  }
  if (p.out.kind == GemvOut::Residual && p.out.ss == nullptr) fail("residual output without sums of squares");
  if (p.in.kind == GemvIn::NormF32 && (p.in.resid == nullptr || p.in.ss == nullptr || p.in.norm_w == nullptr)) {
    fail("normalized input without residual rows, sums of squares or weights");
  }
  if (p.in.kind == GemvIn::HalfRowScaled && (p.in.x == nullptr || p.in.ss == nullptr)) {
    fail("row-scaled input without its f16 rows or sums of squares");
  }
  if (p.out.xw_h != nullptr && (p.out.kind != GemvOut::Residual || p.out.xw_norm_w == nullptr)) {
    fail("a next-norm input needs a residual output and the norm's weights");
  }
}

}  // namespace

#define CHORUS_TYPE_SWITCH(type, CALL)                                          \
  switch (type) {                                                              \
    case TensorType::F32: CALL(TensorType::F32); break;                        \
    case TensorType::F16: CALL(TensorType::F16); break;                        \
    case TensorType::BF16: CALL(TensorType::BF16); break;                      \
    case TensorType::Q8_0: CALL(TensorType::Q8_0); break;                      \
    case TensorType::Q4_0: CALL(TensorType::Q4_0); break;                      \
    case TensorType::Q4_1: CALL(TensorType::Q4_1); break;                      \
    case TensorType::Q5_0: CALL(TensorType::Q5_0); break;                      \
    case TensorType::Q5_1: CALL(TensorType::Q5_1); break;                      \
    case TensorType::Q4_K: CALL(TensorType::Q4_K); break;                      \
    case TensorType::Q5_K: CALL(TensorType::Q5_K); break;                      \
    case TensorType::Q6_K: CALL(TensorType::Q6_K); break;                      \
    default: throw CudaError("tensor type " + tensor_type_name(static_cast<uint32_t>(type)) + \
                             " has no CUDA kernel");                           \
  }

void prepare_gemv_kernels() {
  static const bool done = [] {
    for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
                         TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q4_K, TensorType::Q5_K,
                         TensorType::Q6_K}) {
#define CALL(T) detail::prepare_gemv_typed<T>()
      CHORUS_TYPE_SWITCH(t, CALL)
#undef CALL
    }
    detail::prepare_gemv_pairs();
    return true;
  }();
  (void)done;
}

namespace {

// The launch-time choices every launch makes the same way (reduction route, x staging route,
// chunk size, ring), then the parameter checks.
void complete_params(GemvParams& p) {
  prepare_gemv_kernels();  // no-op after the first call; the backend makes that call at load
  if (p.split.reduce == GemvReduce::Auto) {
    const bool cluster = p.out.kind != GemvOut::Partials && p.split.n_splits > 1 && p.split.n_splits <= kGemvMaxClusterSplits;
    p.split.reduce = cluster ? GemvReduce::Cluster : GemvReduce::Counters;
  }
  check_params(p);
  // f16 rows of more than one sequence go by the copy engine where the layout allows (a tensor
  // map per launch: inside a graph capture the parameters, map included, are recorded with the
  // launch). One row stays on cp.async: its whole split is one chunk that 128 threads copy at
  // once, and by the engine (a box per tile from one thread, 1 KB-aligned tiles) the M = 1
  // ffn_down launch measured 22.2 -> 24.5-26.0 us (perf-notes v9).
  p.x_tma = gemv_x_async(p.in) && p.n_seqs > 1 &&
            encode_gemv_x_map(p.x_map, p.in.x, p.in.x_stride, p.mats.k_elems, p.n_seqs, gemv_x_rows(p.n_seqs));
  // Activation tiles staged at once: as many as the budget holds for this M (any chunking gives
  // the same arithmetic: the accumulators run on across chunks).
  // (Up to 8 rows the launch then shrinks the chunk while that fits more blocks on a
  // multiprocessor, gemv_launch.cuh: gemv_fit_chunk; not when the budget is given.)
  const int budget = p.x_budget_bytes > 0 ? p.x_budget_bytes : kGemvXBudgetBytes;
  const int buf_bytes = budget / (gemv_x_async(p.in) ? 2 : 1);
  p.x_chunk_tiles = std::clamp(buf_bytes / gemv_x_tile_stride(p.n_seqs, p.x_tma), 1, p.split.tiles_per_split);
  // Past 8 rows a chunk is one tile, and the block barrier that recycled the two chunk buffers
  // held every warp to the slowest once per tile (a fifth of the M = 32 gate|up launch's stall
  // samples, perf-notes v10): the ring recycles buffers without one. Both give the same bits.
  // Splits of under kGemvRingMinTiles tiles keep the chunk loop: tried against the 1B N = 32
  // loss (its launches are nearly all 2-tile splits), which did not move it; whether the ring
  // is better there is open (perf-notes v10, what is left).
  p.x_ring_bufs = 0;
  if (p.x_tma && p.n_seqs > 8 && p.split.tiles_per_split >= kGemvRingMinTiles) {
    p.x_chunk_tiles = 1;
    p.x_ring_bufs = std::clamp(kGemvXRingBytes / gemv_x_tile_stride(p.n_seqs, true), 2, kGemvMaxRingBufs);
  }
}

}  // namespace

void launch_gemv(TensorType type, GemvParams p, cudaStream_t stream) {
  complete_params(p);
#define CALL(T) detail::launch_gemv_typed<T>(p, stream)
  CHORUS_TYPE_SWITCH(type, CALL)
#undef CALL
}

bool gemv_pair_supported(TensorType a, TensorType b) { return a == TensorType::Q4_K && b == TensorType::Q6_K; }

void launch_gemv_pair(TensorType a, TensorType b, GemvParams p, cudaStream_t stream) {
  if (!gemv_pair_supported(a, b)) {
    throw CudaError("gemv: no shared launch for " + tensor_type_name(static_cast<uint32_t>(a)) + " and " +
                    tensor_type_name(static_cast<uint32_t>(b)));
  }
  if (p.mats.n_mats_a < 1 || p.mats.n_mats_a >= p.mats.n_mats) throw CudaError("gemv: a pair launch needs both types");
  complete_params(p);
  detail::launch_gemv_q4k_q6k(p, stream);
}

void launch_dequant_f16(TensorType type, const uint8_t* w, int64_t n_rows, int32_t n_tiles, int32_t record_bytes,
                        __half* out, cudaStream_t stream) {
#define CALL(T) detail::launch_dequant_typed<T>(w, n_rows, n_tiles, record_bytes, out, stream)
  CHORUS_TYPE_SWITCH(type, CALL)
#undef CALL
}

void launch_embed_rows(TensorType type, const EmbedParams& p, cudaStream_t stream) {
#define CALL(T) detail::launch_embed_typed<T>(p, stream)
  CHORUS_TYPE_SWITCH(type, CALL)
#undef CALL
}

}  // namespace chorus::cuda
