#include "cuda/occupancy.h"

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>

#include "cuda/cuda_check.h"

namespace chorus::cuda {

int blocks_per_multiprocessor(const void* kernel, int threads, size_t smem_bytes) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, size_t>, int> known;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(kernel, threads, smem_bytes);
  const auto it = known.find(key);
  if (it != known.end()) return it->second;
  int n = 0;
  CHORUS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem_bytes));
  known.emplace(key, n);
  return n;
}

int multiprocessor_count() {
  static const int n = [] {
    int device = 0, count = 0;
    CHORUS_CUDA_CHECK(cudaGetDevice(&device));
    CHORUS_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  }();
  return n;
}

}  // namespace chorus::cuda
