#pragma once
// The model's weights on the GPU: every matrix in its GGUF quant format, repacked into tile
// records (weight_repack.h); norms and biases as f32.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/device_memory.h"
#include "engine/model/model_config.h"
#include "engine/model/weights.h"

namespace chorus::cuda {

struct DeviceMatrix {
  TensorType type = TensorType::F32;
  int64_t n_rows = 0;   // output features (ne1)
  int64_t n_cols = 0;   // input features (ne0)
  int32_t n_tiles = 0;  // ceil(n_cols / 256)
  int32_t record_bytes = 0;
  DeviceBuffer<uint8_t> data;  // [n_rows][n_tiles][record_bytes]
  const uint8_t* ptr() const { return data.get(); }
};

struct DeviceLayer {
  DeviceBuffer<float> attn_norm, ffn_norm;  // [n_embd]
  DeviceBuffer<float> bq, bk, bv;           // [q_dim] / [kv_dim]; empty without biases
  DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
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

// A single matrix (tests and tools).
DeviceMatrix upload_matrix(const TensorView& t);

}  // namespace chorus::cuda
