#pragma once
// The device side of StepTrace (step_trace.h): thread 0 of each block stamps the launch's
// span. A null span (tracing off, the default) costs a compare per stamp. The span pointer is
// read from the kernel's parameters at each stamp, so nothing stays live in registers between.
#include "cuda/step_trace.h"

namespace chorus::cuda {

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void trace_entry(TraceSpan* s) {
  if (s != nullptr && threadIdx.x == 0) atomicMin(&s->entry_ns, global_timer_ns());
}
__device__ __forceinline__ void trace_release(TraceSpan* s) {
  if (s != nullptr && threadIdx.x == 0) atomicMin(&s->release_ns, global_timer_ns());
}
__device__ __forceinline__ void trace_exit(TraceSpan* s) {
  if (s != nullptr && threadIdx.x == 0) atomicMin(&s->exit_inv_ns, ~global_timer_ns());
}

}  // namespace chorus::cuda
