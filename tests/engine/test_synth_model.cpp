// Synthetic models: the tiny shapes in every quant mix load through the CPU backend and give
// finite, input-dependent logits; the files re-open with the planned shapes and types; the
// vocabulary is a consistent byte-level BPE; the large shapes plan the real tensor shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/backend/cpu_backend.h"
#include "engine/backend/solo_run.h"
#include "engine/gguf/gguf_reader.h"
#include "engine/model/synth_model.h"
#include "support/test_support.h"

namespace chorus::synth {
namespace {

std::string write_model(const std::string& shape_name, QuantMix mix, uint64_t seed = 7) {
  auto shape = shape_by_name(shape_name);
  EXPECT_TRUE(shape.ok());
  SynthParams p;
  p.shape = *shape;
  p.mix = mix;
  p.seed = seed;
  p.n_threads = 2;
  const std::string path = (test::scratch_dir() / (shape_name + "-" + quant_mix_name(mix) + "-" +
                                                   std::to_string(seed) + ".gguf")).string();
  auto summary = write_synth_model(path, p);
  EXPECT_TRUE(summary.ok()) << (summary.ok() ? "" : summary.message());
  return path;
}

const TensorPlan* find_plan(const std::vector<TensorPlan>& plans, const std::string& name) {
  for (const TensorPlan& t : plans) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

struct Case {
  std::string shape;
  QuantMix mix;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.shape << " " << quant_mix_name(c.mix); }

class SynthTiny : public ::testing::TestWithParam<Case> {};

TEST_P(SynthTiny, LoadsAndGivesFiniteVariedLogits) {
  const Case c = GetParam();
  const std::string path = write_model(c.shape, c.mix);
  BackendOptions options;
  options.n_threads = 2;
  options.context_tokens = 64;
  auto backend = create_cpu_backend(path, options);
  ASSERT_TRUE(backend.ok()) << backend.message();
  const ModelConfig& cfg = (*backend)->config();
  auto shape = shape_by_name(c.shape);
  EXPECT_EQ(cfg.n_vocab, shape->n_vocab);
  EXPECT_EQ(cfg.n_layers, shape->n_layers);
  EXPECT_EQ(cfg.has_qkv_bias, shape->qkv_bias);
  EXPECT_EQ(cfg.tied_embeddings, shape->tied_embeddings);

  const std::vector<int32_t> prompt = {5, 300, 1200, 77, 900, 1500, 42, 1999, 640, 10, 256, 1024};
  SoloRunOptions run;
  run.prompt_logits = LogitsMode::Return;
  run.n_generate = 8;
  auto out = solo_run(**backend, prompt, run);
  ASSERT_TRUE(out.ok()) << out.message();
  const int64_t V = cfg.n_vocab;
  ASSERT_EQ(out->prompt_logits.size(), prompt.size() * static_cast<size_t>(V));
  std::set<int32_t> argmaxes;
  for (size_t row = 0; row < prompt.size(); ++row) {
    const float* l = out->prompt_logits.data() + row * V;
    int32_t best = 0;
    double mean = 0, sq = 0;
    for (int64_t v = 0; v < V; ++v) {
      ASSERT_TRUE(std::isfinite(l[v])) << "row " << row << " token " << v;
      if (l[v] > l[best]) best = static_cast<int32_t>(v);
      mean += l[v];
      sq += double(l[v]) * l[v];
    }
    mean /= V;
    const double stddev = std::sqrt(sq / V - mean * mean);
    // Neither flat (vanishing activations) nor exploding: logits spread on the order of 1.
    EXPECT_GT(stddev, 0.3) << "row " << row;
    EXPECT_LT(stddev, 30.0) << "row " << row;
    argmaxes.insert(best);
  }
  EXPECT_GE(argmaxes.size(), 3u) << "the prediction hardly depends on the input";
  for (int32_t t : out->generated) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, V);
  }
}

TEST_P(SynthTiny, ReopensWithPlannedShapesAndTypes) {
  const Case c = GetParam();
  const std::string path = write_model(c.shape, c.mix);
  auto r = gguf::Reader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  const auto plans = plan_tensors(*shape_by_name(c.shape), c.mix);
  ASSERT_EQ(r->tensors().size(), plans.size());
  for (const TensorPlan& p : plans) {
    const gguf::TensorInfo* t = r->find_tensor(p.name);
    ASSERT_NE(t, nullptr) << p.name;
    EXPECT_EQ(t->type(), p.type) << p.name;
    ASSERT_EQ(t->n_dims, static_cast<int>(p.ne.size())) << p.name;
    for (size_t d = 0; d < p.ne.size(); ++d) EXPECT_EQ(t->ne[d], p.ne[d]) << p.name;
  }
  const bool q4km = c.mix == QuantMix::Q4_K_M;
  const auto* embd = r->find_tensor("token_embd.weight");
  const auto* norm = r->find_tensor("blk.0.attn_norm.weight");
  const auto* q = r->find_tensor("blk.1.attn_q.weight");
  ASSERT_TRUE(embd && norm && q);
  EXPECT_EQ(norm->type(), TensorType::F32);
  const TensorType matrix = q4km ? TensorType::Q4_K : c.mix == QuantMix::Q8_0 ? TensorType::Q8_0 : TensorType::F16;
  EXPECT_EQ(q->type(), matrix);
  EXPECT_EQ(r->get_uint_or("general.file_type", 0), q4km ? 15u : c.mix == QuantMix::Q8_0 ? 7u : 1u);
  EXPECT_EQ(r->get_string_or("tokenizer.ggml.model", ""), "gpt2");
}

INSTANTIATE_TEST_SUITE_P(AllMixes, SynthTiny,
                         ::testing::Values(Case{"tiny", QuantMix::Q4_K_M}, Case{"tiny", QuantMix::Q8_0},
                                           Case{"tiny", QuantMix::F16}, Case{"tiny-qwen2", QuantMix::Q4_K_M},
                                           Case{"tiny-qwen2", QuantMix::F16}),
                         [](const auto& info) {
                           std::string n = info.param.shape + "_" + quant_mix_name(info.param.mix);
                           for (char& ch : n) if (ch == '-' || ch == '.') ch = '_';
                           return n;
                         });

TEST(SynthModel, SameSeedSameBytesDifferentSeedDifferentWeights) {
  const std::string a = write_model("tiny", QuantMix::Q8_0, 3);
  const std::string b = test::read_file(a);
  const std::string c = test::read_file(write_model("tiny", QuantMix::Q8_0, 4));
  ASSERT_EQ(b.size(), c.size());
  EXPECT_NE(b, c);
  // Regenerating with the same seed (and another thread count inside) gives the same file.
  auto shape = shape_by_name("tiny");
  SynthParams p;
  p.shape = *shape;
  p.mix = QuantMix::Q8_0;
  p.seed = 3;
  p.n_threads = 1;
  const std::string path = (test::scratch_dir() / "tiny-1thread.gguf").string();
  ASSERT_TRUE(write_synth_model(path, p).ok());
  EXPECT_EQ(test::read_file(path), b);
}

TEST(SynthModel, VocabularyIsConsistentByteLevelBpe) {
  for (const std::string& name : {std::string("tiny"), std::string("tiny-qwen2"), std::string("llama3-8b"),
                                  std::string("qwen2.5-1.5b")}) {
    const ShapeSpec s = *shape_by_name(name);
    const SynthVocab v = build_vocab(s);
    ASSERT_EQ(v.tokens.size(), static_cast<size_t>(s.n_vocab)) << name;
    ASSERT_EQ(v.token_types.size(), v.tokens.size()) << name;
    std::unordered_set<std::string> seen;
    for (const std::string& t : v.tokens) EXPECT_TRUE(seen.insert(t).second) << name << ": duplicate " << t;
    EXPECT_EQ(v.tokens[' '], "\xC4\xA0") << "space is 'Ġ'";
    EXPECT_EQ(v.tokens['a'], "a");
    EXPECT_EQ(v.tokens[0], "\xC4\x80");  // U+0100
    // Every merge joins two tokens that exist, and its result is the next merged token.
    std::unordered_set<std::string> so_far(v.tokens.begin(), v.tokens.begin() + 256);
    for (size_t i = 0; i < v.merges.size(); ++i) {
      const std::string& m = v.merges[i];
      const size_t sp = m.find(' ');
      ASSERT_NE(sp, std::string::npos) << m;
      const std::string l = m.substr(0, sp), r = m.substr(sp + 1);
      ASSERT_TRUE(so_far.count(l) && so_far.count(r)) << name << ": merge " << m << " uses an unknown part";
      ASSERT_EQ(v.tokens[256 + i], l + r) << name;
      so_far.insert(l + r);
    }
    ASSERT_GE(v.bos_id, 0);
    EXPECT_EQ(v.token_types[static_cast<size_t>(v.bos_id)], 3);
    EXPECT_EQ(v.token_types[static_cast<size_t>(v.eos_id)], 3);
  }
  const SynthVocab llama = build_vocab(*shape_by_name("llama3-8b"));
  EXPECT_EQ(llama.tokens[128000], "<|begin_of_text|>");
  EXPECT_EQ(llama.tokens[128009], "<|eot_id|>");
  EXPECT_EQ(llama.bos_id, 128000);
  const SynthVocab qwen = build_vocab(*shape_by_name("qwen2.5-1.5b"));
  EXPECT_EQ(qwen.tokens[151643], "<|endoftext|>");
  EXPECT_EQ(qwen.tokens[151645], "<|im_end|>");
  EXPECT_EQ(qwen.eos_id, 151645);
}

TEST(SynthModel, LargeShapesPlanTheRealTensors) {
  const auto l8 = plan_tensors(*shape_by_name("llama3-8b"), QuantMix::Q4_K_M);
  EXPECT_EQ(l8.size(), 2u + 32u * 9u + 1u);
  EXPECT_EQ(find_plan(l8, "token_embd.weight")->ne, (std::vector<int64_t>{4096, 128256}));
  EXPECT_EQ(find_plan(l8, "token_embd.weight")->type, TensorType::Q4_K);
  EXPECT_EQ(find_plan(l8, "output.weight")->type, TensorType::Q6_K);
  EXPECT_EQ(find_plan(l8, "blk.0.attn_k.weight")->ne, (std::vector<int64_t>{4096, 1024}));
  EXPECT_EQ(find_plan(l8, "blk.0.ffn_down.weight")->ne, (std::vector<int64_t>{14336, 4096}));
  EXPECT_EQ(find_plan(l8, "blk.0.ffn_down.weight")->type, TensorType::Q6_K);  // first eighth
  EXPECT_EQ(find_plan(l8, "blk.4.attn_v.weight")->type, TensorType::Q4_K);
  EXPECT_EQ(find_plan(l8, "blk.31.attn_v.weight")->type, TensorType::Q6_K);  // last eighth
  int n_six = 0;
  for (int il = 0; il < 32; ++il) n_six += find_plan(l8, "blk." + std::to_string(il) + ".attn_v.weight")->type == TensorType::Q6_K;
  EXPECT_GE(n_six, 12);
  EXPECT_LE(n_six, 20);
  int64_t bytes = 0, params = 0;
  for (const TensorPlan& t : l8) {
    const int64_t n = t.ne[0] * (t.ne.size() > 1 ? t.ne[1] : 1);
    params += n;
    bytes += static_cast<int64_t>(row_size_bytes(t.type, t.ne[0])) * (t.ne.size() > 1 ? t.ne[1] : 1);
  }
  EXPECT_NEAR(static_cast<double>(params), 8.03e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(bytes), 4.9e9, 0.15e9);  // llama.cpp's Q4_K_M 8B is 4.92 GB

  const auto q = plan_tensors(*shape_by_name("qwen2.5-1.5b"), QuantMix::Q8_0);
  EXPECT_EQ(find_plan(q, "output.weight"), nullptr);  // tied
  EXPECT_EQ(find_plan(q, "blk.27.attn_k.bias")->ne, (std::vector<int64_t>{256}));
  EXPECT_EQ(find_plan(q, "blk.0.ffn_up.weight")->ne, (std::vector<int64_t>{1536, 8960}));
  EXPECT_EQ(find_plan(q, "token_embd.weight")->ne, (std::vector<int64_t>{1536, 151936}));
  const auto l1 = plan_tensors(*shape_by_name("llama3.2-1b"), QuantMix::Q4_K_M);
  EXPECT_EQ(find_plan(l1, "output.weight"), nullptr);
  EXPECT_EQ(find_plan(l1, "token_embd.weight")->type, TensorType::Q6_K);  // tied: it is the LM head
  EXPECT_EQ(find_plan(l1, "blk.15.ffn_gate.weight")->ne, (std::vector<int64_t>{2048, 8192}));
}

TEST(SynthModel, UnknownNamesAreActionableErrors) {
  auto s = shape_by_name("llama9");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("llama3-8b"), std::string::npos);
  auto m = quant_mix_by_name("q3_k");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("q4_k_m"), std::string::npos);
}

}  // namespace
}  // namespace chorus::synth
