// The user-facing promise of the default model on the CPU: a sensible answer.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/test_support.h"

namespace chorus {
namespace {

TEST(ChatCli, AnswersTheCapitalOfFrance) {
  const auto model = test::default_model_path();
  ASSERT_TRUE(std::filesystem::exists(model)) << model << " missing: run scripts/fetch_model.sh";
  std::string out, err;
  const int status = test::run_command("timeout 300 " + test::cli_path() + " chat --model " + model.string() +
                                           " --max-tokens 64 --prompt \"What is the capital of France?\"",
                                       &out, &err);
  ASSERT_EQ(status, 0) << err;
  EXPECT_NE(out.find("Paris"), std::string::npos) << out;
}

TEST(ChatCli, MissingModelIsOneClearLine) {
  std::string out, err;
  const int status = test::run_command(test::cli_path() + " chat --model /nope.gguf --prompt hi", &out, &err);
  EXPECT_EQ(status, 1);
  EXPECT_NE(err.find("/nope.gguf"), std::string::npos) << err;
}

}  // namespace
}  // namespace chorus
