#pragma once
// One-way transfers between the blocks of a thread-block cluster: a block writes into another
// block's shared memory and arrives on that block's mbarrier, which the receiver waits on with
// cluster-scope acquire (mbar_wait<true>, bulk_copy.cuh).
// Against a cluster barrier followed by remote reads (cg::cluster_group::sync), the sender
// never waits and the receiver's data is already local when its wait ends.
#include <cstdint>

#include "cuda/bulk_copy.cuh"

namespace chorus::cuda {

// The cluster barrier, split: every thread of every block of the cluster arrives once
// (release: the block's earlier shared-memory writes, barrier inits included) and waits once
// (acquire) before relying on the other blocks' state.
__device__ __forceinline__ void cluster_arrive_release() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait_acquire() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }

// The shared::cluster address of this block's shared variable `p` in the block of cluster rank `rank`.
__device__ __forceinline__ uint32_t cluster_map(const void* p, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(smem_u32(p)), "r"(rank));
  return out;
}

__device__ __forceinline__ void st_cluster_f32(uint32_t addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}

// After the lanes' remote writes and a __syncwarp: one lane makes them visible cluster-wide
// and arrives on the receiver's barrier (its shared::cluster address).
__device__ __forceinline__ void remote_arrive_release(uint32_t bar_cluster_addr) {
  asm volatile("fence.acq_rel.cluster;\n" ::: "memory");
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(bar_cluster_addr) : "memory");
}

}  // namespace chorus::cuda
