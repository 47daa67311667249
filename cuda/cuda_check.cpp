#include "cuda/cuda_check.h"

#include <cublasLt.h>

#include <cstdlib>
#include <cstring>

namespace chorus::cuda {

std::string describe_device() {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) return "no device";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) return "device " + std::to_string(dev);
  return "device " + std::to_string(dev) + " (" + prop.name + ")";
}

void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + " on " +
                  describe_device() + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void throw_cublas_error(int status, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + " on " +
                  describe_device() + ": cuBLAS status " + std::to_string(status) + " (" +
                  cublasLtGetStatusString(static_cast<cublasStatus_t>(status)) + ")");
}

bool pdl_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("CHORUS_CUDA_PDL");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

}  // namespace chorus::cuda
