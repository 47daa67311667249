#pragma once
// Helpers shared by the GoogleTests: where the external truth lives, scratch space, files.
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/quant/tensor_type.h"

namespace chorus::test {

// ../shared/peer beside the repository (CHORUS_PEER_DIR overrides). Read-only in CI.
std::filesystem::path peer_dir();
// A fresh writable directory for this test process (never inside peer_dir()).
std::filesystem::path scratch_dir();
std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, const std::string& bytes);
// The default model as scripts/fetch_model.sh installs it (XDG data dir); CHORUS_DEFAULT_MODEL
// overrides. Tests that need it fail, never skip, when it is missing: CI installs it.
std::filesystem::path default_model_path();
// The chorus-cli binary built with the tests (CHORUS_CLI).
std::string cli_path();
// Runs a shell command, returns its exit status and captures stdout (stderr to `err`).
int run_command(const std::string& cmd, std::string* out, std::string* err = nullptr);
// n_blocks blocks of a tensor type from random bytes, with every half-float scale and min a
// finite value in [-2, 2] (random bits there would give NaN/Inf weights, and NaN != NaN).
// F32/F16/BF16 "blocks" are single elements of random bits.
std::vector<uint8_t> random_blocks(TensorType type, int64_t n_blocks, std::mt19937& rng);

}  // namespace chorus::test
