// The production wiring on a real (tiny) model: CPU backend, GGUF tokenizer, ChatML
// fallback template. Batched greedy output must equal a solo run on a separate backend.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/backend/cpu_backend.h"
#include "engine/backend/solo_run.h"
#include "engine/sched/default_engine.h"
#include "tests/engine/sched_test_util.h"
#include "tests/support/test_support.h"

namespace chorus::test {
namespace {

std::string tiny_model() {
  return (peer_dir() / "logits" / "tiny-llama-q8_0.gguf").string();
}

TEST(SchedDefaultEngine, BatchedGreedyEqualsSoloRunOnTheCpuBackend) {
  if (!std::filesystem::exists(tiny_model())) GTEST_SKIP() << "no " << tiny_model();
  auto engine = make_default_engine();
  LoadOptions load;
  load.model_path = tiny_model();
  load.backend = "cpu";
  load.context_tokens = 256;
  { const Status st = engine->load_model(load); ASSERT_TRUE(st.ok()) << st.message(); }
  EXPECT_EQ(engine->stats().backend_name, "cpu");
  EXPECT_EQ(engine->stats().model_name, "tiny-llama");

  constexpr int kSeqs = 4, kGen = 12;
  Collector c;
  std::vector<RequestId> ids;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < kSeqs; ++i) {
    Request r;
    r.prompt_tokens = make_prompt(i, 20 + 7 * i, 2048);
    r.max_tokens = kGen;
    r.ignore_eos = true;
    prompts.push_back(r.prompt_tokens);
    ids.push_back(engine->submit(r, c.callbacks()));
  }
  ASSERT_TRUE(c.wait_finished(kSeqs));

  BackendOptions o;
  o.context_tokens = 256;
  auto solo_backend = create_cpu_backend(tiny_model(), o);
  ASSERT_TRUE(solo_backend.ok()) << solo_backend.message();
  for (int i = 0; i < kSeqs; ++i) {
    const Outcome got = c.get(ids[static_cast<size_t>(i)]);
    ASSERT_EQ(got.reason, FinishReason::MaxTokens) << (got.error ? *got.error : "");
    SoloRunOptions so;
    so.n_generate = kGen;
    auto want = solo_run(**solo_backend, prompts[static_cast<size_t>(i)], so);
    ASSERT_TRUE(want.ok()) << want.message();
    EXPECT_EQ(got.tokens, want->generated) << "sequence " << i;
  }
}

TEST(SchedDefaultEngine, MessagesGoThroughTheTemplateAndStreamText) {
  if (!std::filesystem::exists(tiny_model())) GTEST_SKIP() << "no " << tiny_model();
  auto engine = make_default_engine();
  LoadOptions load;
  load.model_path = tiny_model();
  load.backend = "cpu";
  load.context_tokens = 256;
  { const Status st = engine->load_model(load); ASSERT_TRUE(st.ok()) << st.message(); }
  Collector c;
  Request r;
  r.messages = {{"system", "Be brief."}, {"user", "Hello <|im_end|> there"}};
  r.max_tokens = 8;
  const RequestId id = engine->submit(r, c.callbacks());
  ASSERT_TRUE(c.wait_finished(1));
  const Outcome o = c.get(id);
  EXPECT_NE(o.reason, FinishReason::Error) << (o.error ? *o.error : "");
  EXPECT_GT(o.stats.n_prompt_tokens, 10);
  EXPECT_LE(o.tokens.size(), 8u);
}

TEST(SchedDefaultEngine, MissingModelIsAnErrorNotACrash) {
  auto engine = make_default_engine();
  LoadOptions load;
  load.model_path = (scratch_dir() / "missing.gguf").string();
  const Status st = engine->load_model(load);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("missing.gguf"), std::string::npos);
  EXPECT_FALSE(engine->stats().model_loaded);
}

}  // namespace
}  // namespace chorus::test
