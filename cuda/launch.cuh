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

template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream,
                Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  CHORUS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace chorus::cuda
