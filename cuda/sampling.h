#pragma once
// Token sampling on the GPU, one block per row: penalties over the row's history, then
// argmax (temperature 0; ties to the lowest id) or temperature / top-k / top-p / min-p with
// the counter-based draw uniform01(seed, draw_index) of engine/sample/rng.h. The candidates
// of a seeded draw are the best min(top_k, 1024) tokens (1024 when top_k is off), sorted by
// logit then id; with top_k off, probabilities are normalized over the whole vocabulary as on
// the CPU. Only the sampled ids leave the device.
#include <cuda_runtime.h>

#include <cstdint>

namespace chorus::cuda {

inline constexpr int kSampleMaxCandidates = 1024;
inline constexpr int kSampleMaxHistory = 256;

struct DeviceSampling {  // per row, uploaded with the step inputs
  float temperature = 0.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t n_history = 0;      // tokens in this row's history slot (already cut to penalty_last_n)
  uint64_t seed = 0;
  uint64_t draw_index = 0;
};

struct SampleParams {
  const float* logits = nullptr;        // [n_rows][logits_stride]
  int32_t logits_stride = 0;
  float* work = nullptr;                // [n_rows][n_vocab] scratch
  int32_t n_vocab = 0;
  const DeviceSampling* params = nullptr;  // [n_rows]
  const int32_t* history = nullptr;     // [n_rows][kSampleMaxHistory]
  int32_t* out_tokens = nullptr;        // [n_rows]
  int32_t n_rows = 0;
  // Per-block argmaxes of the logits from the LM head (gemv.h, GemvOut::Logits):
  // [n_argmax_blocks][kGemvMaxSeqs]. Greedy rows without penalties take the best of these
  // instead of scanning the vocabulary in one block. Null: always scan.
  const float* argmax_val = nullptr;
  const int32_t* argmax_idx = nullptr;
  int32_t n_argmax_blocks = 0;
  int32_t argmax_stride = 0;  // entries per block (kGemvMaxSeqs)
};

void launch_sample(const SampleParams& p, cudaStream_t stream);

}  // namespace chorus::cuda
