#pragma once
// Asynchronous global -> shared copies. Hopper bulk copies (through the copy engine)
// completing on an mbarrier, for one warp's private pipeline: lane 0 arms the barrier with the
// byte count and issues the copy; the warp waits on the barrier's phase parity. The buffer a copy refills was last read
// by the same warp with ordinary loads whose values were consumed before the __syncwarp() that
// precedes the refill, so no proxy fence is needed for that reuse.
#include <cstdint>

namespace chorus::cuda {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
}

// Makes initialized barriers visible to the copy engine (async proxy).
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

// One arrival (release semantics: the caller's earlier shared-memory writes, and those of
// lanes it synchronized with, are visible to a thread whose wait sees the phase complete).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

// bytes: a multiple of 16; both addresses 16-byte aligned.
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}

// Waits until the barrier's phase with this parity has completed. kClusterAcquire: with
// cluster-scope acquire, so that writes other blocks of the cluster released before their
// arrivals (cluster_push.cuh) are visible after it; otherwise the default CTA scope.
template <bool kClusterAcquire = false>
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#define CHORUS_MBAR_TRY_WAIT(SEM)                                  \
  asm volatile(                                                    \
      "{\n"                                                        \
      ".reg .pred p;\n"                                            \
      "mbarrier.try_wait.parity" SEM ".shared::cta.b64 p, [%1], %2;\n" \
      "selp.u32 %0, 1, 0, p;\n"                                    \
      "}\n"                                                        \
      : "=r"(done)                                                 \
      : "r"(smem_u32(bar)), "r"(parity)                            \
      : "memory")
  uint32_t done = 0;
  do {
    if constexpr (kClusterAcquire) {
      CHORUS_MBAR_TRY_WAIT(".acquire.cluster");
    } else {
      CHORUS_MBAR_TRY_WAIT("");
    }
  } while (!done);
#undef CHORUS_MBAR_TRY_WAIT
}

// One box of a 3-d tensor map (tensor_map.h) at element coordinates (c0, c1, c2), innermost
// first, into shared memory at dst (aligned to the map's swizzle period), completing on bar.
// The map lives in kernel parameter space (a __grid_constant__ parameter).
__device__ __forceinline__ void tma_load_3d(void* dst, const void* map, int c0, int c1, int c2, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(bar))
      : "memory");
}

// A 16-byte shared-memory load at a shared-window address (smem_u32 arithmetic), as an
// ordinary load the compiler schedules (and orders against barriers) like any other.
__device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr) {
  return *static_cast<const uint4*>(__cvta_shared_to_generic(addr));
}

// Ampere-style 16-byte asynchronous copies (through L2 only) for data every thread of a block
// stages together. The last src_bytes..16 bytes of the destination are zero-filled.
// dst_smem: a shared-memory address (smem_u32), for loops that step it by adds.
__device__ __forceinline__ void cp_async16(uint32_t dst_smem, const void* src, uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst_smem), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src, uint32_t src_bytes) {
  cp_async16(smem_u32(dst), src, src_bytes);
}
// 4 bytes, cached in L1 too (the only route for pieces under 16 bytes); both addresses 4-byte aligned.
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until this thread's copies of every committed group have landed.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

}  // namespace chorus::cuda
