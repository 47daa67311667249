#pragma once
// The device side of StepTrace (step_trace.h): thread 0 of each block stamps the launch's
// span when the build has the trace (trace_span.h) and the launch was given a span. The span
// pointer is read from the kernel's parameters at each stamp, so nothing stays live in
// registers between stamps.
#include "cuda/trace_span.h"

namespace chorus::cuda {

#if CHORUS_STEP_TRACE
__device__ __forceinline__ unsigned long long trace_stamp(unsigned long long* first, unsigned long long* last_inv) {
  if (threadIdx.x != 0) return 0;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  atomicMin(first, t);
  atomicMin(last_inv, ~t);
  return t;
}
__device__ __forceinline__ unsigned int trace_smid() {
  unsigned int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}
__device__ __forceinline__ void trace_entry(TraceSpan* s) {
  if (s == nullptr) return;
  trace_stamp(&s->entry_first_ns, &s->entry_last_inv_ns);
  if (threadIdx.x != 0) return;
  const unsigned int sm = trace_smid();
  if (sm < kTraceMaxSms) atomicAdd(&s->sm_blocks_less1[sm], 1u);
}
__device__ __forceinline__ void trace_release(TraceSpan* s) {
  if (s != nullptr) trace_stamp(&s->release_first_ns, &s->release_last_inv_ns);
}
// Every thread of the block reaches the kernel's end (the kernels return block-uniformly), and
// the block is done only when its last warp is: thread 0 stamps after a barrier.
__device__ __forceinline__ void trace_exit(TraceSpan* s) {
  if (s == nullptr) return;
  __syncthreads();
  trace_stamp(&s->exit_first_ns, &s->exit_last_inv_ns);
}
// Phase k of the block's work. GEMV (gemv_kernel.cuh): 0 the first x chunk is in shared
// memory, 1 the first weight tile is, 2 the tiles are multiplied, 3 the splits are summed (the
// block that goes on to the output). Decode attention: 0 the new token's q, k, v are loaded,
// 1 the first chunk's K/V rows are staged, 2 the last chunk is attended, 3 the merge's first
// cluster barrier is passed (cluster route).
// Phase kTracePerSmPhase is also kept per multiprocessor (TraceSpan::sm_phase2_last_inv_ns).
__device__ __forceinline__ void trace_phase(TraceSpan* s, int k) {
  if (s == nullptr) return;
  const unsigned long long t = trace_stamp(&s->phase_first_ns[k], &s->phase_last_inv_ns[k]);
  if (k != kTracePerSmPhase || threadIdx.x != 0) return;
  const unsigned int sm = trace_smid();
  if (sm < kTraceMaxSms) atomicMin(&s->sm_phase2_last_inv_ns[sm], ~t);
}
#else
__device__ __forceinline__ void trace_phase(TraceSpan*, int) {}
__device__ __forceinline__ void trace_entry(TraceSpan*) {}
__device__ __forceinline__ void trace_release(TraceSpan*) {}
__device__ __forceinline__ void trace_exit(TraceSpan*) {}
#endif

}  // namespace chorus::cuda
