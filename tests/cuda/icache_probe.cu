// chorus-cuda-icache-probe: what running code for the first time costs a block. The step trace
// (cuda/step_trace.h) shows decode launches at small M spending microseconds in stretches of
// a few hundred instructions of little arithmetic (attention's chunk before v19, a GEMV's
// epilogue after its splits are summed). One block per multiprocessor is one warp per
// scheduler, so a warp's instruction stream is the whole story; this measures how fast such a
// stream runs when its code was just run on that multiprocessor (warm) and when other code ran
// in between (cold), for straight-line code and for a loop of the same dynamic length.
//
// Prints, per variant, the mean and the max over blocks of thread 0's time from the first to
// the last instruction of the measured stretch (global timer, ns), and ns per instruction.
// Usage: chorus-cuda-icache-probe [repeats=20]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_memory.h"

namespace {

constexpr int kThreads = 128;  // 4 warps: one per scheduler, as decode attention at small M
constexpr int kChains = 8;     // independent FFMA chains: 2 per 4-cycle latency, so issue-bound when warm

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// kLen FFMAs in kChains chains, straight-line (kLoop == 1) or a loop of kLen / kLoop
// instructions run kLoop times. kSalt makes distinct code for the flush kernels.
template <int kLen, int kLoop, int kSalt>
__global__ void __launch_bounds__(kThreads) stretch_kernel(float b, float* sink, uint64_t* ns) {
  float a[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) a[c] = threadIdx.x * 0.001f + c + kSalt;
  __syncthreads();
  const uint64_t t0 = global_ns();
#pragma unroll 1
  for (int it = 0; it < kLoop; ++it) {
#pragma unroll
    for (int i = 0; i < kLen / kLoop; ++i) a[i % kChains] = fmaf(a[i % kChains], b, static_cast<float>(i + kSalt));
  }
  const uint64_t t1 = global_ns();
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += a[c];
  if (s == 12345.0f) sink[threadIdx.x] = s;  // keeps the chains live
  if (threadIdx.x == 0) ns[blockIdx.x] = t1 - t0;
}

constexpr int kLen = 4096;  // 64 KB of FFMAs when straight-line

struct Stat {
  double mean_ns, max_ns;
};

Stat summarize(const std::vector<uint64_t>& v) {
  double sum = 0.0, mx = 0.0;
  for (uint64_t x : v) {
    sum += static_cast<double>(x);
    mx = std::max(mx, static_cast<double>(x));
  }
  return Stat{sum / static_cast<double>(v.size()), mx};
}

template <typename K>
Stat run(K kernel, int blocks, float* sink, uint64_t* d_ns, std::vector<uint64_t>& h_ns) {
  kernel<<<blocks, kThreads>>>(1.0001f, sink, d_ns);
  CHORUS_CUDA_CHECK(cudaGetLastError());
  CHORUS_CUDA_CHECK(cudaMemcpy(h_ns.data(), d_ns, h_ns.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  return summarize(h_ns);
}

// Runs other code on every multiprocessor: three straight-line kernels of 64 KB each.
void flush(int blocks, float* sink, uint64_t* d_ns) {
  stretch_kernel<kLen, 1, 1><<<blocks, kThreads>>>(1.0f, sink, d_ns);
  stretch_kernel<kLen, 1, 2><<<blocks, kThreads>>>(1.0f, sink, d_ns);
  stretch_kernel<kLen, 1, 3><<<blocks, kThreads>>>(1.0f, sink, d_ns);
  CHORUS_CUDA_CHECK(cudaGetLastError());
}

int run_probe(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  int dev = 0, sms = 0;
  CHORUS_CUDA_CHECK(cudaGetDevice(&dev));
  CHORUS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CHORUS_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  chorus::cuda::DeviceBuffer<float> sink_buf(kThreads);
  chorus::cuda::DeviceBuffer<uint64_t> ns_buf(static_cast<size_t>(sms));
  float* sink = sink_buf.get();
  uint64_t* d_ns = ns_buf.get();
  std::vector<uint64_t> h_ns(static_cast<size_t>(sms));
  std::printf("%s, %d multiprocessors; one block of %d threads on each; %d FFMAs per thread (%d chains)\n",
              prop.name, sms, kThreads, kLen, kChains);
  std::printf("%-34s %10s %10s %12s\n", "variant", "mean ns", "max ns", "ns/instr");

  auto report = [&](const char* name, auto kernel, bool cold) {
    double mean = 0.0, mx = 0.0;
    for (int r = 0; r < repeats; ++r) {
      if (cold) {
        flush(sms, sink, d_ns);
      } else {
        run(kernel, sms, sink, d_ns, h_ns);  // the same code just ran on every multiprocessor
      }
      const Stat s = run(kernel, sms, sink, d_ns, h_ns);
      mean += s.mean_ns / repeats;
      mx = std::max(mx, s.max_ns);
    }
    std::printf("%-34s %10.0f %10.0f %12.2f\n", name, mean, mx, mean / kLen);
  };
  report("straight-line, warm", stretch_kernel<kLen, 1, 0>, false);
  report("straight-line, cold", stretch_kernel<kLen, 1, 0>, true);
  report("loop, 64 instrs x 64 times, warm", stretch_kernel<kLen, 64, 0>, false);
  report("loop, 64 instrs x 64 times, cold", stretch_kernel<kLen, 64, 0>, true);
  report("loop, 512 instrs x 8 times, cold", stretch_kernel<kLen, 8, 0>, true);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_probe(argc, argv);
  } catch (const chorus::cuda::CudaError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
