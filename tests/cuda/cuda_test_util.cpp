#include "tests/cuda/cuda_test_util.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "engine/quant/fp16.h"

namespace chorus::cuda::test {

std::string no_device_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  if (n == 0) return "none found";
  return {};
}

namespace {
uint16_t rand_half(std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  return quant::f32_to_fp16(u(rng));
}
void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
}  // namespace

std::vector<uint8_t> random_tensor(TensorType type, int64_t n_cols, int64_t n_rows, std::mt19937& rng) {
  const size_t row_bytes = row_size_bytes(type, n_cols);
  std::vector<uint8_t> data(row_bytes * static_cast<size_t>(n_rows));
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const auto traits = *tensor_type_traits(static_cast<uint32_t>(type));
  const size_t n_blocks = data.size() / traits.block_size_bytes;
  for (size_t i = 0; i < n_blocks; ++i) {
    uint8_t* b = data.data() + i * traits.block_size_bytes;
    switch (type) {
      case TensorType::F32: { const float f = std::uniform_real_distribution<float>(-1, 1)(rng); std::memcpy(b, &f, 4); break; }
      case TensorType::F16: put16(b, rand_half(rng, -1, 1)); break;
      case TensorType::BF16: put16(b, quant::f32_to_bf16(std::uniform_real_distribution<float>(-1, 1)(rng))); break;
      case TensorType::Q4_0: case TensorType::Q5_0: case TensorType::Q8_0: put16(b, rand_half(rng, -0.05f, 0.05f)); break;
      case TensorType::Q4_1: case TensorType::Q5_1:
        put16(b, rand_half(rng, 0.001f, 0.05f)); put16(b + 2, rand_half(rng, -0.4f, 0.0f)); break;
      case TensorType::Q4_K: case TensorType::Q5_K:
        put16(b, rand_half(rng, 0.0005f, 0.003f)); put16(b + 2, rand_half(rng, 0.0005f, 0.003f)); break;
      case TensorType::Q6_K: put16(b + 208, rand_half(rng, 0.0005f, 0.003f)); break;
      default: break;
    }
  }
  return data;
}

double cosine(const float* a, const float* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) { ab += double(a[i]) * b[i]; aa += double(a[i]) * a[i]; bb += double(b[i]) * b[i]; }
  return ab / std::sqrt(aa * bb + 1e-300);
}

double rel_l2(const float* got, const double* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) { const double d = got[i] - ref[i]; num += d * d; den += ref[i] * ref[i]; }
  return std::sqrt(num / (den + 1e-300));
}

std::string peer_dir() {
  if (const char* e = std::getenv("CHORUS_PEER_DIR"); e && *e) return e;
  return "../shared/peer";
}

}  // namespace chorus::cuda::test
