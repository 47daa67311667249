#pragma once
// Every CUDA runtime / cuBLASLt call goes through these checks. A failure becomes a
// CudaError carrying the call text, file:line and the device, thrown inside the backend and
// turned into a chorus::Error at its boundary (the factory and each Backend method).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace chorus::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string describe_device();  // "device 0 (NVIDIA H200)"

// Whether kernels go out with Programmatic Dependent Launch (cuda/launch.cuh); false when the
// environment sets CHORUS_CUDA_PDL=0. Read once per process.
bool pdl_enabled();

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(int status, const char* call, const char* file, int line);

}  // namespace chorus::cuda

#define CHORUS_CUDA_CHECK(call)                                                    \
  do {                                                                             \
    cudaError_t chorus_e_ = (call);                                                \
    if (chorus_e_ != cudaSuccess)                                                  \
      ::chorus::cuda::throw_cuda_error(chorus_e_, #call, __FILE__, __LINE__);      \
  } while (0)

// After a kernel launch: launch-configuration errors show up here at once.
#define CHORUS_CUDA_CHECK_LAUNCH() CHORUS_CUDA_CHECK(cudaPeekAtLastError())

#define CHORUS_CUBLAS_CHECK(call)                                                  \
  do {                                                                             \
    int chorus_s_ = static_cast<int>(call);                                        \
    if (chorus_s_ != 0)                                                            \
      ::chorus::cuda::throw_cublas_error(chorus_s_, #call, __FILE__, __LINE__);    \
  } while (0)
