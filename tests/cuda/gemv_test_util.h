#pragma once
// Shared by the GEMV tests: a random quantized matrix with its CPU dequantization, device
// copies, and the launch state (split scratch, counters) of one GEMV.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/device_memory.h"
#include "cuda/device_model.h"
#include "cuda/gemv.h"
#include "engine/quant/dequant.h"
#include "engine/quant/fp16.h"
#include "tests/cuda/cuda_test_util.h"

namespace chorus::cuda::test {


inline const TensorType kAllTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,
                                TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                                TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

inline bool is_k_type(TensorType t) { return t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K; }

struct Problem {
  TensorType type;
  int64_t k, n;
  std::vector<uint8_t> raw;
  std::vector<float> w;  // [n][k] dequantized on the CPU
  DeviceMatrix dm;
};

inline Problem make_problem(TensorType type, int64_t k, int64_t n, std::mt19937& rng) {
  Problem p{type, k, n, test::random_tensor(type, k, n, rng), {}, {}};
  p.w.resize(static_cast<size_t>(k * n));
  const size_t rb = row_size_bytes(type, k);
  for (int64_t r = 0; r < n; ++r) quant::dequantize_row(type, p.raw.data() + r * rb, p.w.data() + r * k, k);
  TensorView tv;
  tv.name = "test";
  tv.type = type;
  tv.ne0 = k;
  tv.ne1 = n;
  tv.data = p.raw.data();
  tv.size_bytes = p.raw.size();
  p.dm = upload_matrix(tv);
  return p;
}

template <typename T>
inline DeviceBuffer<T> to_device(const std::vector<T>& h) {
  DeviceBuffer<T> d(h.size());
  CHORUS_CUDA_CHECK(cudaMemcpy(d.get(), h.data(), d.size_bytes(), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
inline std::vector<T> to_host(const DeviceBuffer<T>& d) {
  std::vector<T> h(d.size());
  CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
  CHORUS_CUDA_CHECK(cudaMemcpy(h.data(), d.get(), d.size_bytes(), cudaMemcpyDeviceToHost));
  return h;
}

inline std::vector<float> normal_floats(size_t n, std::mt19937& rng, float mean = 0.0f) {
  std::normal_distribution<float> nd(mean, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// Device state of one GEMV launch: matrix, split scratch, counters, poisoned outputs.
struct Rig {
  const Problem& pr;
  int32_t n_splits;
  DeviceBuffer<float> partials;
  DeviceBuffer<int32_t> counters;
  Rig(const Problem& p, int32_t splits)
      : pr(p), n_splits(splits), partials(static_cast<size_t>(splits) * 32 * p.dm.n_rows),
        counters(static_cast<size_t>((p.dm.n_rows + 63) / 64)) {
    CHORUS_CUDA_CHECK(cudaMemset(partials.get(), 0xff, partials.size_bytes()));  // NaN poison
    CHORUS_CUDA_CHECK(cudaMemset(counters.get(), 0, counters.size_bytes()));
  }
  GemvParams params(int m) const {
    GemvParams p;
    p.mats.w[0] = pr.dm.ptr();
    p.mats.n_rows[0] = static_cast<int32_t>(pr.dm.n_rows);
    p.mats.n_mats = 1;
    p.mats.n_tiles = pr.dm.n_tiles;
    p.mats.record_bytes = pr.dm.record_bytes;
    p.mats.k_elems = static_cast<int32_t>(pr.k);
    p.n_seqs = m;
    p.split.n_splits = n_splits;
    p.split.tiles_per_split = (pr.dm.n_tiles + n_splits - 1) / n_splits;
    p.split.partials = partials.get();
    p.split.split_stride = int64_t{32} * pr.dm.n_rows;
    p.split.part_stride = static_cast<int32_t>(pr.dm.n_rows);
    p.split.counters = counters.get();
    return p;
  }
};

// An embedding lookup of n_tokens token ids (on the device) from a table of k-column rows:
// rows out [n_tokens][k] and their sums of squares ss [n_tokens][ceil(k / 64)].
inline EmbedParams embed_params(const Problem& table, const int32_t* tokens, int n_tokens, float* out, float* ss) {
  EmbedParams ep;
  ep.table = table.dm.ptr();
  ep.n_tiles = table.dm.n_tiles;
  ep.record_bytes = table.dm.record_bytes;
  ep.n_cols = static_cast<int32_t>(table.k);
  ep.tokens = tokens;
  ep.n_tokens = n_tokens;
  ep.out = out;
  ep.out_stride = static_cast<int32_t>(table.k);
  ep.ss = ss;
  ep.ss_stride = static_cast<int32_t>((table.k + 63) / 64);
  return ep;
}

inline std::vector<uint16_t> random_x_half(int rows, int64_t k, int64_t stride, std::mt19937& rng) {
  std::vector<uint16_t> x(static_cast<size_t>(rows * stride), 0);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int m = 0; m < rows; ++m)
    for (int64_t i = 0; i < k; ++i) x[m * stride + i] = quant::f32_to_fp16(nd(rng));
  return x;
}

// y[m][r] = sum_i w[r][i] * x[m][i] in double.
inline std::vector<double> reference(const Problem& pr, const std::vector<float>& x, int64_t x_stride, int rows) {
  std::vector<double> y(static_cast<size_t>(rows * pr.n));
  for (int m = 0; m < rows; ++m)
    for (int64_t r = 0; r < pr.n; ++r) {
      double s = 0;
      for (int64_t i = 0; i < pr.k; ++i) s += double(pr.w[r * pr.k + i]) * x[m * x_stride + i];
      y[m * pr.n + r] = s;
    }
  return y;
}

}  // namespace chorus::cuda::test
