#include "cuda/device_model.h"

#include <vector>

#include "cuda/weight_repack.h"
#include "engine/quant/dequant.h"

namespace chorus::cuda {
namespace {

int64_t matrix_bytes(const TensorView& t) {
  const auto rec = tile_record_bytes(t.type);
  if (!rec) throw CudaError("tensor " + t.name + " has type " + tensor_type_name(static_cast<uint32_t>(t.type)) +
                            ", which has no CUDA kernel");
  const int64_t n_tiles = (t.ne0 + kTileElems - 1) / kTileElems;
  return t.ne1 * n_tiles * *rec;
}

DeviceBuffer<float> upload_vector(const TensorView& t) {
  if (!t.present()) return {};
  std::vector<float> host(static_cast<size_t>(t.ne0 * t.ne1));
  quant::dequantize_row(t.type, t.data, host.data(), static_cast<int64_t>(host.size()));
  DeviceBuffer<float> d(host.size());
  CHORUS_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), d.size_bytes(), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

DeviceMatrix upload_matrix(const TensorView& t) {
  DeviceMatrix m;
  m.type = t.type;
  m.n_rows = t.ne1;
  m.n_cols = t.ne0;
  m.n_tiles = static_cast<int32_t>((t.ne0 + kTileElems - 1) / kTileElems);
  m.record_bytes = *tile_record_bytes(t.type);
  m.data = DeviceBuffer<uint8_t>(static_cast<size_t>(matrix_bytes(t)));
  // Repack and copy in slabs of rows so the host staging stays small.
  const int64_t row_bytes = static_cast<int64_t>(m.n_tiles) * m.record_bytes;
  const int64_t rows_per_slab = std::max<int64_t>(1, (64 << 20) / row_bytes);
  std::vector<uint8_t> slab(static_cast<size_t>(std::min(rows_per_slab, m.n_rows) * row_bytes));
  for (int64_t r = 0; r < m.n_rows; r += rows_per_slab) {
    const int64_t r_end = std::min(m.n_rows, r + rows_per_slab);
    repack_rows(t.type, t.data, t.ne0, r, r_end, slab.data());
    CHORUS_CUDA_CHECK(cudaMemcpy(m.data.get() + r * row_bytes, slab.data(), static_cast<size_t>((r_end - r) * row_bytes),
                                 cudaMemcpyHostToDevice));
  }
  return m;
}

int64_t device_model_bytes(const ModelWeights& w) {
  int64_t n = matrix_bytes(w.token_embd) + w.output_norm.ne0 * 4;
  if (w.output.data != w.token_embd.data) n += matrix_bytes(w.output);
  for (const LayerWeights& l : w.layers) {
    for (const TensorView* t : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) n += matrix_bytes(*t);
    for (const TensorView* t : {&l.attn_norm, &l.ffn_norm, &l.bq, &l.bk, &l.bv}) {
      if (t->present()) n += t->ne0 * t->ne1 * 4;
    }
  }
  return n;
}

DeviceModel upload_model(const ModelConfig& config, const ModelWeights& w) {
  DeviceModel m;
  m.token_embd = upload_matrix(w.token_embd);
  m.output_is_embd = w.output.data == w.token_embd.data;
  if (!m.output_is_embd) m.output = upload_matrix(w.output);
  m.output_norm = upload_vector(w.output_norm);
  m.layers.resize(w.layers.size());
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& s = w.layers[i];
    DeviceLayer& d = m.layers[i];
    d.attn_norm = upload_vector(s.attn_norm);
    d.ffn_norm = upload_vector(s.ffn_norm);
    d.bq = upload_vector(s.bq);
    d.bk = upload_vector(s.bk);
    d.bv = upload_vector(s.bv);
    d.wq = upload_matrix(s.wq);
    d.wk = upload_matrix(s.wk);
    d.wv = upload_matrix(s.wv);
    d.wo = upload_matrix(s.wo);
    d.w_gate = upload_matrix(s.w_gate);
    d.w_up = upload_matrix(s.w_up);
    d.w_down = upload_matrix(s.w_down);
  }
  (void)config;
  m.bytes = device_model_bytes(w);
  return m;
}

}  // namespace chorus::cuda
