#pragma once
// Kernel launches with Programmatic Dependent Launch (PDL, sm_90). A decode step is ~300
// small kernels in a row; with PDL the next kernel is launched while the previous one drains,
// runs its independent prologue (the GEMV starts streaming its weights, which no earlier
// kernel writes) and then waits in `pdl_wait()` until the previous grid has completed and its
// writes are visible. Rules every kernel launched through `launch_pdl` follows:
//   - it calls pdl_wait() in every block before touching data an earlier kernel wrote and
//     before exiting (so "previous grid complete" stays transitive down the chain);
//   - it may call pdl_trigger() at any point (that only lets the next launch begin).
// Inside stream capture the attribute becomes a programmatic edge of the graph. With the
// environment variable CHORUS_CUDA_PDL=0 launches are plain (A/B measurements, debugging);
// griddepcontrol instructions are no-ops then.
#include <cuda_runtime.h>

#include <utility>

#include "cuda/cuda_check.h"

namespace chorus::cuda {

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }

// cluster: thread-block cluster shape (1 x 1 x 1: none).
template <typename... Params, typename... Args>
void launch_pdl_clustered(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes, dim3 cluster,
                          cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  int n = 0;
  if (pdl_enabled()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster.x;
    attr[n].val.clusterDim.y = cluster.y;
    attr[n].val.clusterDim.z = cluster.z;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  CHORUS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream,
                Args&&... args) {
  launch_pdl_clustered(kernel, grid, block, smem_bytes, dim3(1, 1, 1), stream, std::forward<Args>(args)...);
}

}  // namespace chorus::cuda
