#pragma once
// Timing shared by the tile-rate probes (wgmma_probe.cu, imma_probe.cu): each block stamps the
// global timer around its loop, and a rate is the slowest block's time, best of a few launches
// (the multiprocessors run their blocks together, so the slowest one is the launch's time).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_memory.h"

namespace chorus::cuda::probe {

struct RateOut {
  unsigned long long ns;  // the block's loop, first thread's view
  float sink;             // keeps the loop's results live
};

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// Best over `reps` launches of the slowest block's ns; launch() starts one launch that writes
// one RateOut a block into out.
template <typename Launch>
double slowest_block_ns(Launch launch, const DeviceBuffer<RateOut>& out, int blocks, int reps = 5) {
  double best = 1e30;
  std::vector<RateOut> h(static_cast<size_t>(blocks));
  for (int rep = 0; rep < reps; ++rep) {
    launch();
    CHORUS_CUDA_CHECK(cudaGetLastError());
    CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
    CHORUS_CUDA_CHECK(cudaMemcpy(h.data(), out.get(), h.size() * sizeof(RateOut), cudaMemcpyDeviceToHost));
    unsigned long long worst = 0;
    for (const auto& r : h) worst = std::max(worst, r.ns);
    best = std::min(best, static_cast<double>(worst));
  }
  return best;
}

}  // namespace chorus::cuda::probe
