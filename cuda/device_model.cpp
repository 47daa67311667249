#include "cuda/device_model.h"

#include <algorithm>
#include <vector>

#include "cuda/weight_repack.h"
#include "engine/quant/dequant.h"

namespace chorus::cuda {
namespace {

int64_t matrix_bytes(const TensorView& t) {
  const auto rec = tile_record_bytes(t.type);
  if (!rec) throw CudaError("tensor " + t.name + " has type " + tensor_type_name(static_cast<uint32_t>(t.type)) +
                            ", which has no CUDA kernel");
  RepackedShape s{t.ne1, t.ne0, (t.ne0 + kTileElems - 1) / kTileElems, *rec};
  return static_cast<int64_t>(s.size_bytes());
}

// Repacks the GGUF rows `rows` (one per output row, null = zero) and uploads them, a slab of
// row groups at a time so the host staging stays small; the repacking of a slab is spread over
// `pool` when there is one (it, not the copy, is what a load waits for).
DeviceMatrix upload_rows(TensorType type, int64_t n_cols, const std::vector<const uint8_t*>& rows, ThreadPool* pool) {
  DeviceMatrix m;
  m.type = type;
  m.n_rows = static_cast<int64_t>(rows.size());
  m.n_cols = n_cols;
  m.n_tiles = static_cast<int32_t>((n_cols + kTileElems - 1) / kTileElems);
  m.record_bytes = *tile_record_bytes(type);
  const RepackedShape shape{m.n_rows, m.n_cols, m.n_tiles, m.record_bytes};
  m.data = DeviceBuffer<uint8_t>(shape.size_bytes());
  const int64_t group_bytes = repacked_group_bytes(m.n_tiles, m.record_bytes);
  const int64_t groups_per_slab = std::max<int64_t>(1, (64 << 20) / group_bytes);
  std::vector<uint8_t> slab(static_cast<size_t>(std::min(groups_per_slab, shape.n_groups()) * group_bytes));
  for (int64_t g = 0; g < shape.n_groups(); g += groups_per_slab) {
    const int64_t g_end = std::min(shape.n_groups(), g + groups_per_slab);
    if (pool != nullptr) {
      repack_groups(*pool, type, n_cols, rows, g, g_end, slab.data());
    } else {
      repack_groups(type, n_cols, rows, g, g_end, slab.data());
    }
    CHORUS_CUDA_CHECK(cudaMemcpy(m.data.get() + g * group_bytes, slab.data(),
                                 static_cast<size_t>((g_end - g) * group_bytes), cudaMemcpyHostToDevice));
  }
  return m;
}

std::vector<const uint8_t*> row_pointers(const TensorView& t, int64_t n_rows) {
  const size_t row_bytes = row_size_bytes(t.type, t.ne0);
  std::vector<const uint8_t*> rows(static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r) rows[static_cast<size_t>(r)] = static_cast<const uint8_t*>(t.data) + r * row_bytes;
  return rows;
}

bool same_shape_and_type(const TensorView& a, const TensorView& b) {
  return a.type == b.type && a.ne0 == b.ne0 && a.ne1 == b.ne1;
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

DeviceMatrix upload_matrix(const TensorView& t, ThreadPool* pool) {
  matrix_bytes(t);  // throws for a type without a kernel
  return upload_rows(t.type, t.ne0, row_pointers(t, t.ne1), pool);
}

DeviceMatrix upload_gate_up(const TensorView& gate, const TensorView& up, ThreadPool* pool) {
  if (!same_shape_and_type(gate, up)) throw CudaError("gate and up of different shapes or types cannot be fused");
  matrix_bytes(gate);
  const int64_t n_ff = gate.ne1, n_groups = (n_ff + kRowGroup - 1) / kRowGroup;
  const auto g = row_pointers(gate, n_ff), u = row_pointers(up, n_ff);
  std::vector<const uint8_t*> rows(static_cast<size_t>(2 * n_groups * kRowGroup), nullptr);
  for (int64_t i = 0; i < n_ff; ++i) {
    rows[static_cast<size_t>(gate_up_column(i))] = g[static_cast<size_t>(i)];
    rows[static_cast<size_t>(gate_up_column(i) + kRowGroup)] = u[static_cast<size_t>(i)];
  }
  return upload_rows(gate.type, gate.ne0, rows, pool);
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
  ThreadPool pool(0);  // for the repacking; gone when the upload is done
  DeviceModel m;
  m.token_embd = upload_matrix(w.token_embd, &pool);
  m.output_is_embd = w.output.data == w.token_embd.data;
  if (!m.output_is_embd) m.output = upload_matrix(w.output, &pool);
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
    d.wq = upload_matrix(s.wq, &pool);
    d.wk = upload_matrix(s.wk, &pool);
    d.wv = upload_matrix(s.wv, &pool);
    d.wo = upload_matrix(s.wo, &pool);
    if (same_shape_and_type(s.w_gate, s.w_up)) {
      d.w_gate_up = upload_gate_up(s.w_gate, s.w_up, &pool);
    } else {
      d.w_gate = upload_matrix(s.w_gate, &pool);
      d.w_up = upload_matrix(s.w_up, &pool);
    }
    d.w_down = upload_matrix(s.w_down, &pool);
  }
  (void)config;
  m.bytes = device_model_bytes(w);
  return m;
}

}  // namespace chorus::cuda
