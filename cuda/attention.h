#pragma once
// Decode attention over the paged F16 KV cache for rows of different lengths, with GQA and
// split-K: the positions of a row are cut into chunks of `chunk_tokens`; one block handles
// one (chunk, kv head, row) for all query heads of that kv head and writes a partial
// (max, sum, unnormalized output); the combine kernel merges the partials in chunk order.
// Chunking depends on the row's own length only, so a row's result never depends on the
// batch. Prefill chunks use the same kernels, one row per prompt token with its causal length.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/rope.cuh"
#include "cuda/trace_span.h"

namespace chorus::cuda {

inline constexpr int kAttnChunkTokens = 32;   // short chunks: more blocks, shorter latency chains
inline constexpr int kAttnMaxRowsPerLaunch = 32;  // rows per launch (partials sized for this); prompts use attention_prefill
inline constexpr int kAttnMaxGroup = 8;      // query heads per kv head
inline constexpr int kAttnMaxHeadDim = 256;

struct AttentionParams {
  const float* q = nullptr;               // [n_rows][n_heads * head_dim], RoPE applied
  __half* k_cache = nullptr;              // this layer: [n_blocks][n_kv_heads][block_tokens][head_dim]
  __half* v_cache = nullptr;
  const int32_t* block_tables = nullptr;  // [n_rows][max_blocks]
  int32_t max_blocks = 0;
  int32_t block_tokens = 0;
  const int32_t* seq_lens = nullptr;      // [n_rows]: positions attended (pos + 1)
  int32_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  int32_t max_chunks = 0;                 // stride of the partial arrays (chunks per row at most)
  int32_t grid_chunks = 0;                // chunks launched per row (>= what the longest row needs)
  float* part_o = nullptr;                // [n_rows][n_heads][max_chunks][head_dim]
  float* part_ml = nullptr;               // [n_rows][n_heads][max_chunks][2]
  __half* out = nullptr;                  // [n_rows][out_stride], heads side by side
  int32_t out_stride = 0;
  int32_t n_rows = 0;
};

void launch_attention(const AttentionParams& p, cudaStream_t stream);

// A decode step's attention in one launch (attention_decode.cu). Row r is one sequence's new
// token at position seq_lens[r] - 1. The block that owns the chunk holding that position
// rotates the token's K and writes K and V into the cache before reading the chunk; every
// block rotates its own copy of the queries; the chunk partials of each (row, kv head) are
// merged in chunk order — inside one block that computed them all (the row route,
// attention_row.cu), inside a cluster of its chunk blocks (up to kAttnMaxClusterChunks each),
// or by the last of them to finish — and the output written; the same bits every way.
// `attn.q` is unused.
struct DecodeAttentionParams {
  AttentionParams attn;
  const float* qkv = nullptr;  // [n_rows][qkv_stride]: q | k | v columns, biases included
  int32_t qkv_stride = 0;
  RopeSpec rope;
  int32_t* counters = nullptr;  // [n_rows][n_kv_heads], zero between launches
  // The rotations of positions [0, rope_cs_positions) (rope_table.h), read instead of computed;
  // positions past it (or no table) are computed, to the same bits.
  const float2* rope_cs = nullptr;
  int32_t rope_cs_positions = 0;
  // Launches of at most this many rows merge in clusters (if grid_chunks allows); 0: never.
  int32_t cluster_max_rows = INT32_MAX;
  int32_t cluster_merge = 0;    // set by launch_attention_decode: a row's chunks merge in a cluster
  // Consecutive chunks one block computes where the partials merge through the counters (0:
  // launch_attention_decode chooses from the occupancy; always 1 in a cluster). Each chunk's
  // partial is computed as by a block of its own, so the bits do not depend on it.
  int32_t chunks_per_block = 0;
  // Launches of at most this many rows whose rows fit kAttnMaxClusterChunks chunks compute each
  // (row, kv head) in one block of row_warps warps instead of a cluster of chunk blocks (the
  // row route, attention_row.cu: no cluster barriers, the merge from the block's own shared
  // memory); the same bits. 0: never. Shapes whose staged rows do not fit one block's shared
  // memory take the chunk blocks.
  int32_t row_max_rows = 0;
  int32_t row_warps = 0;  // 4-24; 0: chosen from the occupancy (attention_row.cu)
  // Row-route launches of at most this many rows split each row's chunks over a cluster of
  // row_split_parts blocks (2 or 4; fewer where the launch's blocks would not get a
  // multiprocessor each), which merge in the first one's shared memory (1 / parts of the items
  // a multiprocessor, for one cluster barrier); the same bits. 0: never.
  int32_t row_split_max_rows = 0;
  int32_t row_split_parts = 2;
  // How a row block stages its cached rows: 1: K and V before the wait (one phase); 2: K
  // before the wait and V into K's place after the scores (two phases: about half the shared
  // memory, so twice the blocks a multiprocessor); 0: the launch's choice, two phases only
  // where they let all of its blocks be resident at once and one phase does not
  // (attention_row.cu). The same bits every way.
  int32_t row_kv_phases = 0;
  TraceSpan* trace = nullptr;  // step_trace.h: stamped by every block when set
};
// Up to this many chunks per row (grid_chunks), a (kv head, row)'s chunk blocks form a
// thread-block cluster and merge through distributed shared memory (the portable cluster size).
inline constexpr int kAttnMaxClusterChunks = 8;
void launch_attention_decode(const DecodeAttentionParams& p, cudaStream_t stream);
// Raises the decode kernels' shared-memory limit (staged K/V rows). Once per process, before
// any graph capture; launch_attention_decode calls it too.
void prepare_attention_kernels();

// Prefill chunk of one sequence (rows = positions first_pos, first_pos + 1, ...; every row's
// block table is the same, row 0's is read): tiles of 32 query rows, online softmax
// (attention_prefill.cu). Needs head_dim % 4 == 0.
bool attention_prefill_supported(int32_t head_dim);
void launch_attention_prefill(const AttentionParams& p, int32_t first_pos, cudaStream_t stream);

}  // namespace chorus::cuda
