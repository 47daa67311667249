#pragma once
// The span one traced launch writes (step_trace.h); a plain struct for the kernels' parameters.

// Builds configured with -DCHORUS_CUDA_STEP_TRACE=ON compile the stamps into the kernels; in
// other builds they are empty, so the submitted kernels carry no trace code (the stamps cost
// the decode step ~1 % even when off: perf-notes, session 15).
#ifndef CHORUS_STEP_TRACE
#define CHORUS_STEP_TRACE 0
#endif

namespace chorus::cuda {

inline constexpr bool kStepTraceBuilt = CHORUS_STEP_TRACE != 0;
inline constexpr int kTracePhases = 4;
inline constexpr int kTraceMaxSms = 192;  // multiprocessors whose blocks a span counts (H100/H200: 132)
// Multiprocessors are grouped by how many blocks of a launch they ran: 1, 2, 3, 4 or more.
inline constexpr int kTraceSmClasses = 4;
// The phase also kept per multiprocessor (TraceSpan::sm_phase2_last_inv_ns): a GEMV's tiles done.
inline constexpr int kTracePerSmPhase = 2;

// Written by the blocks of one launch (step_trace.cuh). Every field is a minimum, so that one
// memset of 0xff arms a span; the latest times are stored inverted (the minimum of ~t is ~max t).
struct TraceSpan {
  unsigned long long entry_first_ns, entry_last_inv_ns;      // kernel entry
  unsigned long long release_first_ns, release_last_inv_ns;  // pdl_wait returned
  unsigned long long exit_first_ns, exit_last_inv_ns;        // block done
  // Points inside a block's work (step_trace.cuh names them per kernel), thread 0's view.
  unsigned long long phase_first_ns[kTracePhases], phase_last_inv_ns[kTracePhases];
  // Blocks that entered on each multiprocessor, less one: armed to ~0u, each block adds one, so
  // a count wraps to blocks - 1 (where the block scheduler put the launch: a cluster of blocks
  // must share one GPC, and blocks that become resident early take what the last launch freed).
  unsigned int sm_blocks_less1[kTraceMaxSms];
  // When the last block on each multiprocessor reached phase 2 (the tiles done, for a GEMV), so
  // that a launch's spread can be told apart by placement: multiprocessors that ran two blocks
  // against one, or the same count but later (perf-notes, gate|up at N = 32).
  unsigned long long sm_phase2_last_inv_ns[kTraceMaxSms];
};

}  // namespace chorus::cuda
