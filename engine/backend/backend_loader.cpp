#include "engine/backend/backend_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace chorus {
namespace {

constexpr const char* kLibName = "libchorus_cuda.so";
using CreateFn = Backend* (*)(const char*, const BackendOptions*, char*, size_t);
using ProbeFn = int (*)(char*, size_t);

std::string exe_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string{} : path.substr(0, slash);
}

std::vector<std::string> candidates() {
  std::vector<std::string> c;
  if (const char* env = std::getenv("CHORUS_CUDA_LIB"); env && *env) c.emplace_back(env);
  const std::string dir = exe_dir();
  if (!dir.empty()) {
    c.push_back(dir + "/" + kLibName);
    c.push_back(dir + "/../lib/" + kLibName);
  }
  c.emplace_back(kLibName);
  return c;
}

struct Library {
  void* handle = nullptr;
  std::string error;  // why it could not be loaded
};

// Loaded once per process and kept (backends created from it hold its code).
const Library& library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string errors;
    for (const std::string& path : candidates()) {
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h) {
        lib.handle = h;
        return;
      }
      const char* e = dlerror();
      const std::string msg = e ? e : "unknown error";
      // A library that exists but cannot load (missing libcublasLt, say) is the real reason.
      if (msg.find("No such file") == std::string::npos || path == candidates().front()) {
        if (!errors.empty()) errors += "; ";
        errors += msg;
      }
    }
    lib.error = std::string(kLibName) + " could not be loaded (" +
                (errors.empty() ? std::string("not found; searched ") + cuda_library_search_description() : errors) +
                ")";
  });
  return lib;
}

}  // namespace

std::string cuda_library_search_description() {
  return "$CHORUS_CUDA_LIB, the executable's folder, ../lib beside it, and the system library path";
}

std::string cuda_unavailable_reason() {
  const Library& lib = library();
  if (!lib.handle) return lib.error;
  auto probe = reinterpret_cast<ProbeFn>(dlsym(lib.handle, "chorus_cuda_probe"));
  if (!probe) return std::string(kLibName) + " has no chorus_cuda_probe symbol (mismatched build)";
  char err[512] = {};
  if (probe(err, sizeof(err)) == 1) return {};
  return err[0] ? std::string(err) : std::string("the CUDA backend reported no usable device");
}

Result<std::unique_ptr<Backend>> load_cuda_backend(const std::string& model_path, const BackendOptions& options) {
  const Library& lib = library();
  if (!lib.handle) return make_error("CUDA backend unavailable: " + lib.error);
  auto create = reinterpret_cast<CreateFn>(dlsym(lib.handle, "chorus_cuda_create_backend"));
  if (!create) return make_error(std::string("CUDA backend unavailable: ") + kLibName +
                                 " has no chorus_cuda_create_backend symbol (mismatched build)");
  char err[1024] = {};
  Backend* b = create(model_path.c_str(), &options, err, sizeof(err));
  if (!b) return make_error(err[0] ? std::string(err) : std::string("CUDA backend: creation failed"));
  return std::unique_ptr<Backend>(b);
}

}  // namespace chorus
