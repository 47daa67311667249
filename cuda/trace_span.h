#pragma once
// The span one traced launch writes (step_trace.h); a plain struct for the kernels' parameters.

namespace chorus::cuda {

// Written by the blocks of one launch (step_trace.cuh). All three fields are minima so that
// one memset of 0xff arms a span: the exit is stored inverted (the minimum of ~t is ~max t).
struct TraceSpan {
  unsigned long long entry_ns;     // min over blocks: kernel entry
  unsigned long long release_ns;   // min over blocks: pdl_wait returned
  unsigned long long exit_inv_ns;  // min over blocks of ~(exit time)
};

}  // namespace chorus::cuda
