// The whole CUDA backend on the peer tiny models: logits against the float64 `exact`
// references (cosine >= 0.995 per position, prefill and decode paths), graph replay equal to
// eager execution bit for bit, and batch invariance (a sequence's logits are bit-identical
// whether it decodes alone or beside 31 others).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "cuda/cuda_backend.h"
#include "tests/cuda/cuda_test_util.h"

namespace chorus::cuda {
namespace {

namespace fs = std::filesystem;

std::vector<int32_t> json_tokens(const std::string& json_path) {
  std::ifstream f(json_path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  const size_t k = s.find("\"tokens\"");
  const size_t a = s.find('[', k), b = s.find(']', a);
  std::vector<int32_t> out;
  std::stringstream list(s.substr(a + 1, b - a - 1));
  std::string item;
  while (std::getline(list, item, ',')) out.push_back(std::stoi(item));
  return out;
}

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  const auto n = static_cast<size_t>(f.tellg());
  std::vector<float> v(n / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n));
  return v;
}

std::vector<std::string> peer_models() {
  std::vector<std::string> names;
  const fs::path dir = fs::path(test::peer_dir()) / "logits";
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 5 && n.ends_with(".gguf")) names.push_back(n.substr(0, n.size() - 5));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::unique_ptr<CudaBackend> open(const std::string& path, GraphMode mode = GraphMode::Replay) {
  CudaBackendOptions o;
  o.base.max_batch = 32;
  o.base.context_tokens = 256;
  o.base.kv_cache_tokens = 32 * 256;
  o.graphs = mode;
  o.max_prefill_tokens = 128;
  auto b = CudaBackend::create(path, o);
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.message());
  return b.ok() ? std::move(*b) : nullptr;
}

std::vector<int32_t> table_for(int seq, int blocks_per_seq) {
  std::vector<int32_t> t(static_cast<size_t>(blocks_per_seq));
  std::iota(t.begin(), t.end(), seq * blocks_per_seq);
  return t;
}

TEST(CudaBackendPeer, LogitsMatchExactReference) {
  CHORUS_REQUIRE_GPU();
  const auto models = peer_models();
  if (models.empty()) GTEST_SKIP() << "no peer models under " << test::peer_dir();
  for (const std::string& name : models) {
    const std::string base = test::peer_dir() + "/logits/" + name;
    auto b = open(base + ".gguf");
    ASSERT_TRUE(b);
    const auto tokens = json_tokens(base + ".json");
    const auto exact = read_f32(base + ".exact.logits.f32");
    const int32_t n_vocab = b->config().n_vocab;
    ASSERT_EQ(exact.size(), tokens.size() * static_cast<size_t>(n_vocab));
    const auto table = table_for(0, 16);

    // Prefill path: all tokens in one chunk (tensor-core GEMM route, > 32 tokens).
    PrefillChunk chunk;
    chunk.seq.block_table = table;
    chunk.tokens = tokens;
    chunk.logits = LogitsMode::Return;
    auto pr = b->prefill(chunk);
    ASSERT_TRUE(pr.ok()) << pr.message();
    double worst_prefill = 1.0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      worst_prefill = std::min(worst_prefill, test::cosine(pr->logits.data() + i * n_vocab,
                                                           exact.data() + i * n_vocab, n_vocab));
    }

    // Decode path: token 0 by prefill, then one decode step per token (batched GEMV route),
    // with the norms' f16 inputs from the residual's producer (the default) and normalized in
    // front of the product (norm_from_producer=0, the fused route at one row).
    for (const int32_t from_producer : {1, 0}) {
      CudaTuning t = b->tuning();
      t.norm_from_producer = from_producer;
      b->set_tuning(t);
      PrefillChunk first = chunk;
      first.tokens = std::span<const int32_t>(tokens.data(), 1);
      ASSERT_TRUE(b->prefill(first).ok());
      double worst_decode = 1.0;
      for (size_t i = 1; i < tokens.size(); ++i) {
        DecodeBatch batch;
        SeqState s;
        s.block_table = table;
        s.n_past = static_cast<int32_t>(i);
        batch.seqs = {s};
        batch.tokens = {tokens[i]};
        batch.logits = LogitsMode::Return;
        auto dr = b->decode(batch);
        ASSERT_TRUE(dr.ok()) << dr.message();
        worst_decode = std::min(worst_decode, test::cosine(dr->logits.data(), exact.data() + i * n_vocab, n_vocab));
      }
      std::printf("[ cosine   ] %-22s prefill min %.6f  decode min %.6f (norm_from_producer=%d)\n", name.c_str(),
                  worst_prefill, worst_decode, from_producer);
      EXPECT_GE(worst_prefill, 0.995) << name;
      EXPECT_GE(worst_decode, 0.995) << name << " norm_from_producer=" << from_producer;
    }
  }
}

// Runs n_steps greedy decode steps for the sequences `seqs` together, from prompts already
// prefilled; returns per step the logits [m][n_vocab] and the tokens.
struct DecodeRun {
  std::vector<std::vector<float>> logits;
  std::vector<std::vector<int32_t>> tokens;
};

DecodeRun decode_together(CudaBackend& b, const std::vector<int>& seqs, const std::vector<std::vector<int32_t>>& prompts,
                    int n_steps, int blocks_per_seq) {
  DecodeRun run;
  std::vector<std::vector<int32_t>> tables;
  std::vector<int32_t> next;
  for (int s : seqs) {
    tables.push_back(table_for(s, blocks_per_seq));
    PrefillChunk c;
    c.seq.block_table = tables.back();
    c.tokens = prompts[static_cast<size_t>(s)];
    c.output = PrefillChunk::Output::SampleLast;
    auto r = b.prefill(c);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
    next.push_back(r.ok() ? r->sampled_token : 0);
  }
  for (int step = 0; step < n_steps; ++step) {
    DecodeBatch batch;
    for (size_t i = 0; i < seqs.size(); ++i) {
      SeqState st;
      st.seq_id = seqs[i];
      st.block_table = tables[i];
      st.n_past = static_cast<int32_t>(prompts[static_cast<size_t>(seqs[i])].size()) + step;
      batch.seqs.push_back(st);
      batch.tokens.push_back(next[i]);
    }
    batch.logits = LogitsMode::Return;
    auto r = b.decode(batch);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
    if (!r.ok()) break;
    next = r->tokens;
    run.logits.push_back(r->logits);
    run.tokens.push_back(r->tokens);
  }
  return run;
}

std::vector<std::vector<int32_t>> random_prompts(int n, int32_t n_vocab, std::mt19937& rng) {
  std::vector<std::vector<int32_t>> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    p[static_cast<size_t>(i)].resize(static_cast<size_t>(5 + (i * 7) % 40));
    for (auto& t : p[static_cast<size_t>(i)]) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
  }
  return p;
}

std::string model_for_invariance() {
  return test::peer_dir() + "/logits/tiny-llama-q4_k_m.gguf";
}

TEST(CudaBackendGraphs, ReplayEqualsEager) {
  CHORUS_REQUIRE_GPU();
  if (!fs::exists(model_for_invariance())) GTEST_SKIP() << "peer model missing";
  auto g = open(model_for_invariance(), GraphMode::Replay);
  auto e = open(model_for_invariance(), GraphMode::Eager);
  ASSERT_TRUE(g && e);
  std::mt19937 rng(7);
  const auto prompts = random_prompts(8, g->config().n_vocab, rng);
  const std::vector<int> seqs = {0, 1, 2, 3, 4, 5, 6, 7};
  const DecodeRun a = decode_together(*g, seqs, prompts, 12, 16);
  const DecodeRun c = decode_together(*e, seqs, prompts, 12, 16);
  ASSERT_EQ(a.logits.size(), c.logits.size());
  for (size_t s = 0; s < a.logits.size(); ++s) {
    ASSERT_EQ(0, std::memcmp(a.logits[s].data(), c.logits[s].data(), a.logits[s].size() * 4)) << "step " << s;
  }
  EXPECT_GT(g->counters().graph_replays, 0);
  EXPECT_EQ(e->counters().graph_replays, 0);
}

TEST(CudaBackendBatch, InvariantToBatchComposition) {
  CHORUS_REQUIRE_GPU();
  if (!fs::exists(model_for_invariance())) GTEST_SKIP() << "peer model missing";
  auto b = open(model_for_invariance());
  ASSERT_TRUE(b);
  std::mt19937 rng(11);
  const int n = 32, steps = 10;
  const auto prompts = random_prompts(n, b->config().n_vocab, rng);
  const int32_t n_vocab = b->config().n_vocab;
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  const DecodeRun together = decode_together(*b, all, prompts, steps, 8);
  for (int m : {1, 2, 7, 8, 9, 16, 31}) {
    // The first m sequences alone (fresh KV blocks of their own) must match bit for bit.
    std::vector<int> subset(all.begin(), all.begin() + m);
    const DecodeRun part = decode_together(*b, subset, prompts, steps, 8);
    for (int s = 0; s < steps; ++s) {
      ASSERT_EQ(0, std::memcmp(part.logits[s].data(), together.logits[s].data(),
                               static_cast<size_t>(m) * n_vocab * 4))
          << "M=" << m << " step " << s;
    }
  }
  // And one sequence alone.
  const DecodeRun solo = decode_together(*b, {n - 1}, prompts, steps, 8);
  for (int s = 0; s < steps; ++s) {
    ASSERT_EQ(0, std::memcmp(solo.logits[s].data(), together.logits[s].data() + static_cast<size_t>(n - 1) * n_vocab,
                             static_cast<size_t>(n_vocab) * 4));
  }
}

// Chunks of several sequences in one prefill_batch call give each sequence the bits it gets
// alone: every row's logits, the sampled first token, and (through the KV cache) the next
// decode step. Two long chunks share the GEMM pass, the short ones a GEMV pass; one chunk
// continues a prompt whose first part was prefilled before.
TEST(CudaBackendBatch, PackedPrefillEqualsPrefillAlone) {
  CHORUS_REQUIRE_GPU();
  if (!fs::exists(model_for_invariance())) GTEST_SKIP() << "peer model missing";
  auto b = open(model_for_invariance());
  ASSERT_TRUE(b);
  const int32_t n_vocab = b->config().n_vocab;
  std::mt19937 rng(23);
  const std::vector<int> lengths = {40, 5, 50, 20, 12};  // 127 tokens, the backend's 128 at most
  const int continued = 4;                               // its first 9 tokens go first, alone
  const int32_t continued_first = 9;
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::vector<int32_t> p(static_cast<size_t>(lengths[i] + (static_cast<int>(i) == continued ? continued_first : 0)));
    for (auto& t : p) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    prompts.push_back(p);
  }
  struct Out {
    std::vector<PrefillResult> prefill;
    std::vector<std::vector<float>> next_logits;
  };
  // `packed`: one call for all chunks; otherwise one call per chunk. Sequence i uses blocks
  // of its own, shifted by `table_base` so the two runs share nothing.
  const auto run = [&](bool packed, int table_base) {
    Out out;
    std::vector<std::vector<int32_t>> tables;
    std::vector<PrefillChunk> chunks;
    for (size_t i = 0; i < prompts.size(); ++i) tables.push_back(table_for(table_base + static_cast<int>(i), 8));
    for (size_t i = 0; i < prompts.size(); ++i) {
      PrefillChunk c;
      c.seq.seq_id = static_cast<int64_t>(i);
      c.seq.block_table = tables[i];
      c.tokens = prompts[i];
      c.output = PrefillChunk::Output::SampleLast;
      c.logits = LogitsMode::Return;
      if (static_cast<int>(i) == continued) {
        PrefillChunk head = c;
        head.tokens = std::span<const int32_t>(prompts[i]).first(static_cast<size_t>(continued_first));
        head.output = PrefillChunk::Output::None;
        head.logits = LogitsMode::None;
        EXPECT_TRUE(b->prefill(head).ok());
        c.seq.n_past = continued_first;
        c.tokens = std::span<const int32_t>(prompts[i]).subspan(static_cast<size_t>(continued_first));
      }
      chunks.push_back(c);
    }
    if (packed) {
      auto r = b->prefill_batch(chunks);
      EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
      if (r.ok()) out.prefill = std::move(*r);
    } else {
      for (const PrefillChunk& c : chunks) {
        auto r = b->prefill(c);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
        if (r.ok()) out.prefill.push_back(std::move(*r));
      }
    }
    for (size_t i = 0; i < chunks.size() && out.prefill.size() == chunks.size(); ++i) {
      DecodeBatch batch;
      SeqState st = chunks[i].seq;
      st.n_past = static_cast<int32_t>(prompts[i].size());
      batch.seqs = {st};
      batch.tokens = {out.prefill[i].sampled_token};
      batch.logits = LogitsMode::Return;
      auto r = b->decode(batch);
      EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
      if (r.ok()) out.next_logits.push_back(r->logits);
    }
    return out;
  };
  const Out alone = run(false, 0);
  const Out packed = run(true, 8);
  ASSERT_EQ(alone.prefill.size(), prompts.size());
  ASSERT_EQ(packed.prefill.size(), prompts.size());
  ASSERT_EQ(packed.next_logits.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(packed.prefill[i].sampled_token, alone.prefill[i].sampled_token) << "sequence " << i;
    ASSERT_EQ(packed.prefill[i].logits.size(), alone.prefill[i].logits.size()) << "sequence " << i;
    EXPECT_EQ(0, std::memcmp(packed.prefill[i].logits.data(), alone.prefill[i].logits.data(),
                             alone.prefill[i].logits.size() * 4))
        << "prompt logits of sequence " << i;
    EXPECT_EQ(0, std::memcmp(packed.next_logits[i].data(), alone.next_logits[i].data(),
                             static_cast<size_t>(n_vocab) * 4))
        << "decode logits after the prompt of sequence " << i;
  }
}

TEST(CudaBackendBatch, PackedPrefillRefusesWhatDoesNotFit) {
  CHORUS_REQUIRE_GPU();
  if (!fs::exists(model_for_invariance())) GTEST_SKIP() << "peer model missing";
  auto b = open(model_for_invariance());  // 128 prompt tokens per call
  ASSERT_TRUE(b);
  const std::vector<int32_t> tokens(70, 3);
  const auto t0 = table_for(0, 8), t1 = table_for(1, 8);
  std::vector<PrefillChunk> chunks(2);
  chunks[0].seq.block_table = t0;
  chunks[1].seq.block_table = t1;
  chunks[0].tokens = chunks[1].tokens = tokens;
  auto r = b->prefill_batch(chunks);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("140 tokens"), std::string::npos) << r.message();
  chunks[1].tokens = {};
  r = b->prefill_batch(chunks);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("chunk of 0 tokens"), std::string::npos) << r.message();
}

TEST(CudaBackendSampling, SeededDrawsAreReproducibleAndBatchFree) {
  CHORUS_REQUIRE_GPU();
  if (!fs::exists(model_for_invariance())) GTEST_SKIP() << "peer model missing";
  auto b = open(model_for_invariance());
  ASSERT_TRUE(b);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6};
  auto draw = [&](int m, float temp, int top_k, float top_p, float min_p) {
    std::vector<int32_t> out;
    std::vector<std::vector<int32_t>> tables;
    for (int i = 0; i < m; ++i) {
      tables.push_back(table_for(i, 8));
      PrefillChunk c;
      c.seq.block_table = tables.back();
      c.tokens = prompt;
      EXPECT_TRUE(b->prefill(c).ok());
    }
    for (uint64_t k = 0; k < 16; ++k) {
      DecodeBatch batch;
      for (int i = 0; i < m; ++i) {
        SeqState s;
        s.block_table = tables[static_cast<size_t>(i)];
        s.n_past = static_cast<int32_t>(prompt.size());
        s.sampling.temperature = temp;
        s.sampling.top_k = top_k;
        s.sampling.top_p = top_p;
        s.sampling.min_p = min_p;
        s.sampling.seed = 42;
        s.sample_index = k;
        batch.seqs.push_back(s);
        batch.tokens.push_back(7);
      }
      auto r = b->decode(batch);
      EXPECT_TRUE(r.ok());
      if (r.ok()) out.push_back(r->tokens[0]);
    }
    return out;
  };
  for (auto cfg : {std::make_tuple(0.8f, 40, 0.95f, 0.0f), std::make_tuple(1.0f, 0, 0.9f, 0.05f),
                   std::make_tuple(1.5f, 0, 1.0f, 0.0f)}) {
    const auto [t, k, p, mp] = cfg;
    const auto solo = draw(1, t, k, p, mp);
    const auto batched = draw(32, t, k, p, mp);
    EXPECT_EQ(solo, batched);
    std::set<int32_t> distinct(solo.begin(), solo.end());
    EXPECT_GT(distinct.size(), 1u) << "16 seeded draws all gave one token";
  }
}

// A token id outside the vocabulary is refused with a message before any device work: read as
// an embedding row it would fault, and a fault leaves the CUDA context unusable for every chat.
TEST(CudaBackendInput, RefusesTokenIdsOutsideTheVocabularyAndKeepsWorking) {
  CHORUS_REQUIRE_GPU();
  if (!fs::exists(model_for_invariance())) GTEST_SKIP() << "peer model missing";
  auto b = open(model_for_invariance());
  ASSERT_TRUE(b);
  const int32_t n_vocab = b->config().n_vocab;
  const auto table = table_for(0, 8);
  PrefillChunk c;
  c.seq.block_table = table;
  c.output = PrefillChunk::Output::SampleLast;
  for (int32_t bad : {-1, n_vocab, 1 << 30}) {
    const std::vector<int32_t> tokens = {1, bad, 3};
    c.tokens = tokens;
    auto r = b->prefill(c);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.message().find("out of range"), std::string::npos) << r.message();
    DecodeBatch batch;
    SeqState s;
    s.block_table = table;
    batch.seqs.push_back(s);
    batch.tokens.push_back(bad);
    auto d = b->decode(batch);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.message().find("out of range"), std::string::npos) << d.message();
  }
  const std::vector<int32_t> good = {1, 2, 3};
  c.tokens = good;
  auto r = b->prefill(c);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_GE(r->sampled_token, 0);
  EXPECT_LT(r->sampled_token, n_vocab);
  DecodeBatch batch;
  SeqState s;
  s.block_table = table;
  s.n_past = 3;
  batch.seqs.push_back(s);
  batch.tokens.push_back(r->sampled_token);
  auto d = b->decode(batch);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_GE(d->tokens[0], 0);
  EXPECT_LT(d->tokens[0], n_vocab);
}

}  // namespace
}  // namespace chorus::cuda
