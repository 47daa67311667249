#pragma once
// The launch choices of the CUDA decode step that measurements vary, and their text form for
// CHORUS_CUDA_TUNING (read by libchorus_cuda's entry point, so that `chorus-bench run` and the
// app can run a candidate setting through the whole Engine without a rebuild).
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/result.h"

namespace chorus::cuda {

// Launch choices of the decode step (and the prefill GEMM's algorithm) that measurements vary (chorus-cuda-bench); the defaults
// are what those measurements chose (on the H200; v14's, session 13, on an H100).
struct CudaTuning {
  // Decode attention launches of at most this many rows merge chunk partials inside a
  // thread-block cluster (attention.h); more rows use the counters. 0: never. Clusters save
  // 4-6% of a step at 1-8 rows and cost up to 3% at 32 on the H200 (perf-notes v11).
  int32_t attn_cluster_max_rows = 8;
  // Chunks per decode attention block where the partials merge through counters
  // (DecodeAttentionParams::chunks_per_block; 0: chosen from the occupancy). Same bits for any.
  // The occupancy's choice: 8B N = 32 +2.8 % against one chunk a block (perf-notes v14b).
  int32_t attn_chunks_per_block = 0;
  // Decode attention launches of at most this many rows (whose rows fit the cluster's chunks)
  // compute each (row, kv head) in one block of attn_row_warps warps (the row route,
  // attention_row.cu; warps 0: chosen from the occupancy) instead of chunk blocks; 0: never.
  // Same bits either way. H100, against the chunk blocks: 8B N = 1 / 8 / 32 -0.3..+1.3 /
  // +0.2..+2 / +4 %, 1B +1..+2 / +2..+2.9 / +10 % at 12 warps (perf-notes v23).
  int32_t attn_row_max_rows = 32;
  int32_t attn_row_warps = 0;
  // Row-route launches of at most this many rows split each row over a cluster of
  // attn_row_split_parts blocks (DecodeAttentionParams::row_split_*) where the split blocks fit
  // one a multiprocessor; 0: never. Same bits either way. H100, against 0 in the same build,
  // two runs: 8B N = 1 / 8 +1.0..1.8 / +1.7..1.9 %, 1B +1.5..2.3 / -0.4..-0.7 % (perf-notes v23b).
  int32_t attn_row_split_max_rows = 8;
  // Blocks a split row takes at most (2 or 4). 4 measured no faster than 2 (perf-notes v23d).
  int32_t attn_row_split_parts = 2;
  // How row blocks stage their cached rows (DecodeAttentionParams::row_kv_phases): 0 the
  // launch's choice, 1 K and V together, 2 V after the scores. Same bits either way. H100, the
  // choice against 1: 8B N = 24 / 32 +3.6 / +3.7 %, N = 1 / 8 and the 1B unchanged; 2 forced
  // where one wave already fits loses 1-9 % (perf-notes v30).
  int32_t attn_row_kv_phases = 0;
  // Shared memory for a GEMV launch's x chunks (GemvParams::x_budget_bytes; 0: the defaults of
  // gemv.h). Smaller chunks let more blocks share a multiprocessor.
  int32_t gemv_x_budget_bytes = 0;
  // GemvEarly bits (gemv.h): latency cuts. The residual prefetch: 8B N = 4 / 8 +0.3-0.7 %,
  // small but in every row (perf-notes v14c). The pushed split sums: 8B N = 1 / 4 / 8 +2.6 /
  // +3.0 / +4.7 %, 1B +2.3 / +2.4 / +2.1 % on an H100 (perf-notes v18). The cluster's sums
  // finished by all its blocks (past 8 rows): 8B N = 24 / 32 +6.4 / +8.3 %, 1B +6.8 / +11.8 %
  // on an H100, N <= 8 unchanged (perf-notes v29).
  int32_t gemv_early_loads = 7;  // kGemvEarlyResidual | kGemvEarlyPush | kGemvSharedFinish
  // Steps of up to this many rows put a q4_k_m layer's Q4_K q|k and Q6_K v products in one
  // launch (launch_gemv_pair); 0: never. Same bits either way. Every batch size (32 is the
  // most a step takes): 8B N = 1 / 16 / 32 +3 / +4 / +4 % (perf-notes v14d).
  int32_t gemv_pair_max_rows = 32;
  // One value per decode GEMV launch kind: q|k|v, output, gate|up, down (text form Q.O.U.D).
  struct PerGemv {
    int32_t qkv = 0, o = 0, ffn_up = 0, down = 0;
    bool operator==(const PerGemv&) const = default;
  };
  // K splits of the decode GEMVs per matrix group instead of gemv_choose_splits' (0: its
  // choice). A split count changes the f32 summation order, so tokens may differ from the
  // default's (perf-notes v13).
  PerGemv gemv_splits;
  // From this many rows on (0: never), the launch kind pads its blocks' shared memory so that
  // a multiprocessor holds at most ceil(blocks / multiprocessors) of them
  // (GemvParams::spread_blocks). Against the block scheduler stacking a launch's blocks two a
  // multiprocessor while others idle: the 1B's 128 gate|up blocks at N = 32 ran on 68 of the
  // H200's 132 (session 30 trace). Placement only: the same bits either way. Session 25
  // padded every launch at every N and lost 4-16 %. Gate|up at every N (H100, the 1B):
  // N = 1 / 2 / 4 / 8 +2.4 / +2.5 / +1.9 / +3.3 %, N = 16 / 24 / 32 +3.2 / +4.7 / +5.8 %; the
  // 8B's gate|up blocks already sit at the cap (the occupancy), so its launches are unchanged.
  // Down (1B / 8B N = 32 -9 / -8 %) and o (8B -6 %) lose: their padded blocks cannot enter
  // beside the launch before them (perf-notes v35).
  PerGemv gemv_spread{0, 0, 1, 0};
  // Prefill GEMM: the row count at which cuBLASLt's algorithm for each weight shape is chosen
  // and then used for every call (gemm_lt.h; 0: the backend's largest prefill call). 8B on an
  // H100: 512 rows runs 4-prompt calls 19 % faster than 128 rows, and a lone 128-token prompt
  // 13 % slower (perf-notes v15).
  int32_t gemm_ref_rows = 0;
  // From this many rows on, a step normalizes its rows in a pass of their own and the GEMVs
  // stage f16 (launch_norm_rows); fewer rows are normalized inside every GEMV block (the fused
  // route, GemvIn::NormF32), which costs a launch less but puts two dependent memory round
  // trips before the first product (v19 trace: ~2.5-3.5 us). Same bits either way. At one row
  // (H100) the pass wins only for the 1B (+2 %): the 8B (-5 %) and SmolLM2 (-4 %) lose, so no
  // width rule fits (perf-notes v22c).
  int32_t norm_pass_min_rows = 3;
  // 1: the residual's producer (the o and down GEMVs, the embedding lookup) also writes
  // f16(residual * the next norm's weights), and the GEMVs behind a norm stage those rows like
  // any f16 input and scale their outputs by each row's 1 / rms (GemvIn::HalfRowScaled): no
  // pass launch at any N (norm_pass_min_rows is then unused) and no normalization inside the
  // blocks. 0: the pass or the fused normalized input, as norm_pass_min_rows says. The f16
  // values differ between the two (rounded before or after the row's scale), so tokens may too.
  int32_t norm_from_producer = 1;
};

// Applies "key=value,key=value" to base: keys are CudaTuning's field names, values
// non-negative integers; gemv_splits and gemv_spread take four, Q.O.U.D (q|k|v, output,
// gate|up, down).
// An empty spec gives base back. Unknown keys and malformed values are errors that name them.
Result<CudaTuning> parse_cuda_tuning(std::string_view spec, const CudaTuning& base);

// The same form back (every field), for logs.
std::string format_cuda_tuning(const CudaTuning& t);

}  // namespace chorus::cuda
