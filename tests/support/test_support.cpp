#include "support/test_support.h"

#include "engine/model/default_model.h"
#include "engine/quant/fp16.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

namespace chorus::test {

std::filesystem::path peer_dir() {
  if (const char* p = std::getenv("CHORUS_PEER_DIR")) return p;
  return CHORUS_DEFAULT_PEER_DIR;
}

std::filesystem::path scratch_dir() {
  static std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "chorus-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + p.string());
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::filesystem::path default_model_path() {
  if (const char* p = std::getenv("CHORUS_DEFAULT_MODEL")) return p;
  return chorus::default_model_path();
}

std::string cli_path() {
  if (const char* p = std::getenv("CHORUS_CLI")) return p;
  return CHORUS_DEFAULT_CLI;
}

int run_command(const std::string& cmd, std::string* out, std::string* err) {
  std::string err_file = (scratch_dir() / ("stderr-" + std::to_string(::getpid()) + ".txt")).string();
  std::string full = cmd + " 2>" + err_file;
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return -1;
  std::string captured;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) captured.append(buf, n);
  int status = ::pclose(pipe);
  if (out) *out = std::move(captured);
  if (err) {
    std::ifstream e(err_file, std::ios::binary);
    std::ostringstream ss;
    ss << e.rdbuf();
    *err = ss.str();
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<uint8_t> random_blocks(TensorType type, int64_t n_blocks, std::mt19937& rng) {
  const auto traits = *tensor_type_traits(static_cast<uint32_t>(type));
  std::vector<uint8_t> raw(static_cast<size_t>(n_blocks) * traits.block_size_bytes);
  for (auto& b : raw) b = static_cast<uint8_t>(rng());
  if (type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16) return raw;
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  const bool has_min = type == TensorType::Q4_1 || type == TensorType::Q5_1 || type == TensorType::Q4_K ||
                       type == TensorType::Q5_K;
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    uint8_t* p = raw.data() + blk * static_cast<int64_t>(traits.block_size_bytes);
    const uint16_t d = quant::f32_to_fp16(scale(rng)), m = quant::f32_to_fp16(scale(rng));
    std::memcpy(type == TensorType::Q6_K ? p + 208 : p, &d, 2);  // Q6_K keeps d last
    if (has_min) std::memcpy(p + 2, &m, 2);
  }
  return raw;
}

}  // namespace chorus::test
