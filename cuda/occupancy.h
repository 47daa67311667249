#pragma once
// Occupancy answers of the CUDA runtime that launch choices depend on (how many blocks of a
// kernel share a multiprocessor), remembered: they depend only on the kernel, its block size,
// its dynamic shared memory and the device, and the process uses one device.
#include <cstddef>

namespace chorus::cuda {

// Blocks of `kernel` (a __global__ function) with `threads` threads and `smem_bytes` of dynamic
// shared memory that one multiprocessor holds. Throws CudaError when the runtime fails.
int blocks_per_multiprocessor(const void* kernel, int threads, size_t smem_bytes);

// Multiprocessors of the current device.
int multiprocessor_count();

}  // namespace chorus::cuda
