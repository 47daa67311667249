#pragma once
// The model's weights on the GPU: every matrix in its GGUF quant format, repacked into tile
// records (weight_repack.h); norms and biases as f32.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/device_memory.h"
#include "cuda/weight_repack.h"
#include "engine/model/model_config.h"
#include "engine/model/weights.h"

namespace chorus::cuda {

struct DeviceMatrix {
  TensorType type = TensorType::F32;
  int64_t n_rows = 0;   // output features (ne1); for a fused gate/up pair, 2 * round_up(n_ff, 16)
  int64_t n_cols = 0;   // input features (ne0)
  int32_t n_tiles = 0;  // ceil(n_cols / 256)
  int32_t record_bytes = 0;
  DeviceBuffer<uint8_t> data;  // [ceil(n_rows / 16)][n_tiles][16][record_bytes] (weight_repack.h)
  const uint8_t* ptr() const { return data.get(); }
};

struct DeviceLayer {
  DeviceBuffer<float> attn_norm, ffn_norm;  // [n_embd]
  DeviceBuffer<float> bq, bk, bv;           // [q_dim] / [kv_dim]; empty without biases
  DeviceMatrix wq, wk, wv, wo, w_down;
  // Gate and up as one matrix whose 16-row groups alternate gate, up, gate, up...: rows
  // [32j, 32j+16) are gate rows [16j, 16j+16) and the next 16 the same up rows, so one GEMV
  // block holds both inputs of each SwiGLU output (gemv.h). Used when both have one type;
  // otherwise w_gate and w_up hold them apart and w_gate_up is empty.
  DeviceMatrix w_gate_up, w_gate, w_up;
  bool ffn_fused() const { return w_gate_up.n_rows > 0; }
};

struct DeviceModel {
  DeviceMatrix token_embd;
  DeviceMatrix output;       // a second copy only when the file has output.weight
  bool output_is_embd = false;
  DeviceBuffer<float> output_norm;
  std::vector<DeviceLayer> layers;
  int64_t bytes = 0;

  const DeviceMatrix& lm_head() const { return output_is_embd ? token_embd : output; }
};

// Bytes the repacked weights will take on the device (for the memory check before upload).
int64_t device_model_bytes(const ModelWeights& w);

// Uploads every tensor (throws CudaError, e.g. on out-of-memory).
DeviceModel upload_model(const ModelConfig& config, const ModelWeights& w);

// A single matrix (tests and tools); `pool`, when given, repacks it on several threads.
DeviceMatrix upload_matrix(const TensorView& t, ThreadPool* pool = nullptr);

// Gate and up interleaved by 16-row groups as DeviceLayer::w_gate_up describes (same type and
// shape required).
DeviceMatrix upload_gate_up(const TensorView& gate, const TensorView& up, ThreadPool* pool = nullptr);


}  // namespace chorus::cuda
