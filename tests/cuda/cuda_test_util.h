#pragma once
// Helpers shared by the GPU tests: device presence, random inputs, comparisons.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/quant/tensor_type.h"

namespace chorus::cuda::test {

// Empty when a CUDA device is usable, otherwise why not (the GTEST_SKIP message).
std::string no_device_reason();

#define CHORUS_REQUIRE_GPU()                                                   \
  do {                                                                         \
    const std::string why_ = ::chorus::cuda::test::no_device_reason();         \
    if (!why_.empty()) GTEST_SKIP() << "no CUDA device: " << why_;             \
  } while (0)

// Random bytes of n_rows rows of a tensor type, with every scale field set to a sane
// half-precision value so the weights are finite and of moderate size.
std::vector<uint8_t> random_tensor(TensorType type, int64_t n_cols, int64_t n_rows, std::mt19937& rng);

double cosine(const float* a, const float* b, size_t n);
double rel_l2(const float* got, const double* ref, size_t n);

// Directory of the peer data (CHORUS_PEER_DIR, else ../shared/peer from the working dir).
std::string peer_dir();

}  // namespace chorus::cuda::test
