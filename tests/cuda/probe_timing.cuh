#pragma once
// Timing shared by the tile-rate probes (wgmma_probe.cu, imma_probe.cu): each block stamps the
// global timer around its loop, and a rate is the slowest block's time, best of a few launches
// (the multiprocessors run their blocks together, so the slowest one is the launch's time),
// over the warp-tiles a multiprocessor ran (tile_rate).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_memory.h"
#include "cuda/occupancy.h"

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

// One rate-loop kernel's figure: `blocks_per_sm` blocks of `n_warps` warps on every
// multiprocessor, each warp running `tiles` tiles (kernel(tiles, out) writes one RateOut a block
// into out, which must hold them all), with `smem` bytes of dynamic shared memory allowed.
struct TileRate {
  double ns_per_warp_tile = 0;  // a multiprocessor's: the slowest block's time over its warp-tiles
  double slowest_block_ns = 0;
  int resident_per_sm = 0;      // blocks the runtime says fit a multiprocessor at once
};

template <typename Kernel>
TileRate tile_rate(Kernel kernel, int n_warps, int blocks_per_sm, int smem, int tiles, const DeviceBuffer<RateOut>& out) {
  const int blocks = blocks_per_sm * multiprocessor_count();
  if (out.size() < static_cast<size_t>(blocks)) throw CudaError("probe: the output holds fewer blocks than the launch");
  CHORUS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  TileRate r;
  CHORUS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r.resident_per_sm, kernel, n_warps * 32, smem));
  r.slowest_block_ns = slowest_block_ns([&] { kernel<<<blocks, n_warps * 32, smem>>>(tiles, out.get()); }, out, blocks);
  r.ns_per_warp_tile = r.slowest_block_ns / (static_cast<double>(blocks_per_sm) * n_warps * tiles);
  return r;
}

}  // namespace chorus::cuda::probe
