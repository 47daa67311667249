#include "app/cli/cli_backend.h"

#include <filesystem>

#include "engine/backend/cpu_backend.h"

namespace chorus::cli {

Result<std::unique_ptr<Backend>> open_backend(const std::string& model_path, const Args& args,
                                              int64_t kv_tokens_needed) {
  BackendOptions o;
  if (auto t = args.get("--threads")) {
    auto n = parse_int("--threads", *t, 0, 1024);
    if (!n) return n.error();
    o.n_threads = static_cast<int32_t>(*n);
  }
  if (auto c = args.get("--ctx")) {
    auto n = parse_int("--ctx", *c, 16, 1 << 20);
    if (!n) return n.error();
    o.context_tokens = static_cast<int32_t>(*n);
  }
  o.kv_cache_tokens = std::max<int64_t>(kv_tokens_needed, o.context_tokens);
  std::error_code ec;
  if (!std::filesystem::exists(model_path, ec)) return make_error(model_path + ": no such file");
  const std::string backend = args.get("--backend").value_or("cpu");
  if (backend == "cpu" || backend == "auto") return create_cpu_backend(model_path, o);
  return make_error("--backend: unknown backend '" + backend + "' (cpu, auto)");
}

}  // namespace chorus::cli
