// The C entry points of libchorus_cuda.so, found with dlsym by engine/backend/backend_loader.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/cuda_backend.h"

namespace {

void write_err(char* err, size_t err_len, const std::string& msg) {
  if (err && err_len > 0) std::snprintf(err, err_len, "%s", msg.c_str());
}

// Empty when a usable device exists, otherwise why not (in words a user can act on).
std::string probe() {
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) return "no NVIDIA driver is installed";
  if (driver < CUDART_VERSION) {
    return "the NVIDIA driver supports CUDA " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) +
           ", this build needs " + std::to_string(CUDART_VERSION / 1000) + "." +
           std::to_string(CUDART_VERSION % 1000 / 10) + " or newer (update the driver)";
  }
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device found";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "cannot query CUDA device 0";
  if (prop.major < 9) {
    return std::string(prop.name) + " has compute capability " + std::to_string(prop.major) + "." +
           std::to_string(prop.minor) + "; this build of the CUDA backend runs on 9.0 (Hopper) and newer";
  }
  return {};
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int chorus_cuda_probe(char* err, size_t err_len) {
  const std::string why = probe();
  if (why.empty()) return 1;
  write_err(err, err_len, why);
  return 0;
}

extern "C" __attribute__((visibility("default"))) chorus::Backend* chorus_cuda_create_backend(
    const char* model_path, const chorus::BackendOptions* opts, char* err, size_t err_len) {
  const std::string why = probe();
  if (!why.empty()) {
    write_err(err, err_len, why);
    return nullptr;
  }
  chorus::cuda::CudaBackendOptions o;
  if (opts) o.base = *opts;
  // A measured candidate launch setting, run through the whole Engine without a rebuild
  // (scripts/gpu/run_gpu_checks.sh); unset in normal use.
  if (const char* spec = std::getenv("CHORUS_CUDA_TUNING"); spec && *spec) {
    auto t = chorus::cuda::parse_cuda_tuning(spec, o.tuning);
    if (!t) {
      write_err(err, err_len, "CHORUS_CUDA_TUNING: " + t.message());
      return nullptr;
    }
    o.tuning = *t;
  }
  auto b = chorus::cuda::CudaBackend::create(model_path ? model_path : "", o);
  if (!b) {
    write_err(err, err_len, b.message());
    return nullptr;
  }
  return b->release();
}
