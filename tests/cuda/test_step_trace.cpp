// The decode step trace (cuda/step_trace.h): the summary's arithmetic on hand-made records
// (no GPU needed), and on a GPU that a traced step stamps every launch in the order the PDL
// chain promises, without changing a single output bit.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <utility>

#include "cuda/cuda_backend.h"
#include "cuda/step_trace.h"
#include "tests/cuda/cuda_test_util.h"

namespace chorus::cuda {
namespace {

TraceRecord rec(const char* label, int64_t size_bytes, uint64_t entry, uint64_t release, uint64_t exit) {
  TraceRecord r;
  r.label = label;
  r.size_bytes = size_bytes;
  r.stamped = true;
  r.entry_ns = entry;
  r.last_entry_ns = entry + 1000;
  r.release_ns = release;
  r.last_release_ns = release + 2000;
  r.first_exit_ns = exit - 3000;
  r.exit_ns = exit;
  return r;
}

TEST(StepTraceSummary, SharesAddUpToTheStepPerLabel) {
  // Two steps of qkv -> attn -> o; the second step is 1 us slower in attention's body.
  std::vector<std::vector<TraceRecord>> steps = {
      {rec("qkv", 1000000, 0, 2000, 10000), rec("attn", 0, 5000, 11000, 20000), rec("o", 500000, 15000, 21000, 30000)},
      {rec("qkv", 1000000, 100000, 102000, 110000), rec("attn", 0, 105000, 111000, 121000),
       rec("o", 500000, 115000, 122000, 131000)},
  };
  const TraceSummary s = summarize_trace(steps);
  ASSERT_EQ(s.n_steps, 2);
  EXPECT_DOUBLE_EQ(s.step_us, (28.0 + 29.0) / 2);  // first release -> last exit
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[0].label, "qkv");  // order of appearance, not alphabetical
  EXPECT_EQ(s.rows[1].label, "attn");
  EXPECT_EQ(s.rows[2].label, "o");
  // The first launch's share starts at its release.
  EXPECT_DOUBLE_EQ(s.rows[0].crit_us_per_step, 8.0);
  EXPECT_DOUBLE_EQ(s.rows[0].gap_us, 0.0);
  EXPECT_DOUBLE_EQ(s.rows[0].lead_us, 2.0);
  // attn: gaps 1 us, bodies 9 and 10 us, leads 6 us.
  EXPECT_DOUBLE_EQ(s.rows[1].crit_us_per_step, 10.5);
  EXPECT_DOUBLE_EQ(s.rows[1].gap_us, 1.0);
  EXPECT_DOUBLE_EQ(s.rows[1].body_us, 9.5);
  EXPECT_DOUBLE_EQ(s.rows[1].lead_us, 6.0);
  EXPECT_DOUBLE_EQ(s.rows[1].last_entry_us, -5.0);  // 1 us after the first entry, 6 before the release
  EXPECT_DOUBLE_EQ(s.rows[1].last_release_us, 2.0);
  EXPECT_DOUBLE_EQ(s.rows[1].first_exit_us, 9.5 - 3.0);
  for (int k = 0; k < kTracePhases; ++k) EXPECT_EQ(s.rows[1].phase_launches[k], 0.0) << k;  // none stamped
  // A phase stamped in one of the two steps' o launches: its mean is over that launch only.
  steps[1][2].phase_first_ns[2] = steps[1][2].release_ns + 3000;
  steps[1][2].phase_last_ns[2] = steps[1][2].release_ns + 5000;
  const TraceSummary sp = summarize_trace(steps);
  EXPECT_DOUBLE_EQ(sp.rows[2].phase_launches[2], 0.5);
  EXPECT_DOUBLE_EQ(sp.rows[2].phase_first_us[2], 3.0);
  EXPECT_DOUBLE_EQ(sp.rows[2].phase_last_us[2], 5.0);
  EXPECT_NE(format_trace(sp).find("p2 3.00/5.00"), std::string::npos) << format_trace(sp);
  EXPECT_DOUBLE_EQ(s.rows[2].crit_us_per_step, 10.0);
  EXPECT_DOUBLE_EQ(s.rows[2].gap_us, 1.0);
  EXPECT_DOUBLE_EQ(s.rows[2].size_mb_per_step, 0.5);
  // Placement: means per launch of the multiprocessors used and the most blocks on one.
  steps[0][0].sms_used = 100;
  steps[0][0].max_blocks_per_sm = 2;
  steps[1][0].sms_used = 132;
  steps[1][0].max_blocks_per_sm = 4;
  const TraceSummary sm = summarize_trace(steps);
  EXPECT_DOUBLE_EQ(sm.rows[0].sms_used, 116.0);
  EXPECT_DOUBLE_EQ(sm.rows[0].max_blocks_per_sm, 3.0);
  EXPECT_NE(format_trace(sm).find("116.0   3.00"), std::string::npos) << format_trace(sm);
  double crit = 0;
  for (const TraceRow& r : s.rows) crit += r.crit_us_per_step;
  EXPECT_DOUBLE_EQ(crit, s.step_us);
  EXPECT_DOUBLE_EQ(s.timer_1us_share, 1.0);  // every stamp above is a whole microsecond
  EXPECT_NE(format_trace(s).find("whole us"), std::string::npos);
}

TEST(StepTraceSummary, TilesDonePerMultiprocessorClass) {
  // Two steps of one GEMV launch: multiprocessors that ran one block finish their tiles early,
  // those that ran two late; the second step has no three-block class stamped.
  std::vector<std::vector<TraceRecord>> steps = {{rec("ffn_up", 1000, 0, 1000, 41000)},
                                                 {rec("ffn_up", 1000, 100000, 101000, 141000)}};
  auto set = [](TraceRecord& r, int c, int sms, uint64_t first, double mean, uint64_t last) {
    TraceRecord::SmClass& k = r.sm_classes[c];
    k.sms = k.sms_stamped = sms;
    k.phase2_first_ns = r.release_ns + first;
    k.phase2_mean_ns = static_cast<double>(r.release_ns) + mean;
    k.phase2_last_ns = r.release_ns + last;
  };
  set(steps[0][0], 0, 16, 10000, 12000, 14000);
  set(steps[0][0], 1, 116, 24000, 30000, 37000);
  set(steps[1][0], 0, 14, 12000, 13000, 16000);
  set(steps[1][0], 1, 118, 26000, 31000, 39000);
  steps[0][0].sm_classes[2].sms = 2;  // counted, never stamped: no times, but the count
  const TraceSummary s = summarize_trace(steps);
  ASSERT_EQ(s.rows.size(), 1u);
  const TraceRow& r = s.rows[0];
  // {sms, stamped launches per step, first, mean, last} of each class.
  const double want[kTraceSmClasses][5] = {{15, 1, 11, 12.5, 15}, {117, 1, 25, 30.5, 38}, {1, 0, 0, 0, 0}, {}};
  for (int c = 0; c < kTraceSmClasses; ++c) {
    const TraceRow::SmClassRow& k = r.sm_classes[c];
    const double got[5] = {k.sms, k.stamped_launches, k.phase2_first_us, k.phase2_mean_us, k.phase2_last_us};
    for (int f = 0; f < 5; ++f) EXPECT_DOUBLE_EQ(got[f], want[c][f]) << "class " << c << " field " << f;
  }
  const std::string text = format_trace(s);
  EXPECT_NE(text.find("1: 15.0 SMs 11.00/12.50/15.00  2: 117.0 SMs 25.00/30.50/38.00\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("3: "), std::string::npos) << text;  // no stamps, no times
}

TEST(StepTraceSummary, SeparatesTheWeightTypesOfOneLabel) {
  // A q4_k_m layer's ffn_down is Q6_K in some layers, Q4_K in the others: one row per type.
  std::vector<TraceRecord> step = {rec("down", 1000, 0, 1000, 5000), rec("down", 2000, 5000, 6000, 14000),
                                   rec("down", 1000, 14000, 15000, 19000), rec("attn", 0, 19000, 20000, 22000)};
  step[0].weight_types = step[2].weight_types = "Q4_K";
  step[1].weight_types = "Q6_K";
  const TraceSummary s = summarize_trace(std::span(&step, 1));
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[0].label, "down:Q4_K");
  EXPECT_EQ(s.rows[1].label, "down:Q6_K");
  EXPECT_EQ(s.rows[2].label, "attn");  // no weights, no types
  EXPECT_DOUBLE_EQ(s.rows[0].launches_per_step, 2.0);
  EXPECT_DOUBLE_EQ(s.rows[0].body_us, 4.0);
  EXPECT_DOUBLE_EQ(s.rows[1].body_us, 8.0);
  EXPECT_NE(format_trace(s).find("down:Q6_K"), std::string::npos);
}

TEST(StepTraceSummary, SkipsStepsWithUnstampedLaunches) {
  std::vector<std::vector<TraceRecord>> steps = {
      {rec("qkv", 0, 1, 3, 7), rec("o", 0, 4, 9, 15)},
      {rec("qkv", 0, 1, 3, 7), TraceRecord{"o", 0, false}},
      {},
  };
  const TraceSummary s = summarize_trace(steps);
  EXPECT_EQ(s.n_steps, 1);
  EXPECT_DOUBLE_EQ(s.step_us, 12e-3);
  EXPECT_DOUBLE_EQ(s.timer_1us_share, 0.0);
  EXPECT_EQ(format_trace(summarize_trace({})), "trace: no fully stamped step\n");
}

namespace fs = std::filesystem;

std::string tiny_model() { return test::peer_dir() + "/logits/tiny-llama-q4_k_m.gguf"; }

struct Decoded {
  std::vector<std::vector<float>> logits;
  std::vector<std::vector<TraceRecord>> traces;
};

// n sequences with short random prompts, then n_steps greedy decode steps together; the step
// trace read after each step.
Decoded decode(CudaBackend& b, int n, int n_steps) {
  std::mt19937 rng(5);
  Decoded d;
  std::vector<std::vector<int32_t>> tables;
  std::vector<int32_t> next, lens;
  for (int s = 0; s < n; ++s) {
    std::vector<int32_t> table(8);
    std::iota(table.begin(), table.end(), s * 8);
    tables.push_back(table);
    std::vector<int32_t> prompt(static_cast<size_t>(3 + 5 * s));
    for (auto& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(b.config().n_vocab));
    PrefillChunk c;
    c.seq.block_table = tables.back();
    c.tokens = prompt;
    c.output = PrefillChunk::Output::SampleLast;
    auto r = b.prefill(c);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
    next.push_back(r.ok() ? r->sampled_token : 0);
    lens.push_back(static_cast<int32_t>(prompt.size()));
  }
  for (int step = 0; step < n_steps; ++step) {
    DecodeBatch batch;
    for (int s = 0; s < n; ++s) {
      SeqState st;
      st.seq_id = s;
      st.block_table = tables[static_cast<size_t>(s)];
      st.n_past = lens[static_cast<size_t>(s)] + step;
      batch.seqs.push_back(st);
      batch.tokens.push_back(next[static_cast<size_t>(s)]);
    }
    batch.logits = LogitsMode::Return;
    auto r = b.decode(batch);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
    if (!r.ok()) break;
    next = r->tokens;
    d.logits.push_back(r->logits);
    d.traces.push_back(b.read_step_trace());
  }
  return d;
}

TEST(StepTraceGpu, StampsEveryLaunchInChainOrderAndChangesNoBits) {
  CHORUS_REQUIRE_GPU();
  if (!fs::exists(tiny_model())) GTEST_SKIP() << "peer model missing";
  if (!kStepTraceBuilt) {
    // The shipped build: asking for a trace is an error that says how to get one.
    // (scripts/gpu/build_carry.sh builds this test with the trace too, as test_step_trace_traced.)
    auto b = CudaBackend::create(tiny_model(), CudaBackendOptions{});
    ASSERT_TRUE(b.ok()) << b.message();
    const Status st = (*b)->set_step_trace(true);
    ASSERT_FALSE(st);
    EXPECT_NE(st.message().find("-DCHORUS_CUDA_STEP_TRACE=ON"), std::string::npos) << st.message();
    EXPECT_TRUE((*b)->read_step_trace().empty());
    return;
  }
  for (GraphMode mode : {GraphMode::Replay, GraphMode::Eager}) {
    // 4 rows with the norms normalized in front of the product (norm_from_producer=0): the
    // norm pass is a launch of its own. The default (the producer's f16 rows) has none.
    for (const auto& [n, from_producer] : {std::pair{1, 1}, std::pair{4, 1}, std::pair{4, 0}}) {
      const bool pass = from_producer == 0 && n >= 3;
      CudaBackendOptions o;
      o.base.max_batch = 8;
      o.base.context_tokens = 128;
      o.base.kv_cache_tokens = 8 * 128;
      o.graphs = mode;
      o.tuning.norm_from_producer = from_producer;
      auto b = CudaBackend::create(tiny_model(), o);
      ASSERT_TRUE(b.ok()) << b.message();
      const Decoded plain = decode(**b, n, 6);
      for (const auto& t : plain.traces) EXPECT_TRUE(t.empty());  // tracing is off by default
      ASSERT_TRUE((*b)->set_step_trace(true));
      const Decoded traced = decode(**b, n, 6);
      ASSERT_EQ(plain.logits.size(), traced.logits.size());
      for (size_t s = 0; s < plain.logits.size(); ++s) {
        ASSERT_EQ(0, std::memcmp(plain.logits[s].data(), traced.logits[s].data(), plain.logits[s].size() * 4))
            << "step " << s;
      }
      const int n_layers = (*b)->config().n_layers;
      for (const auto& t : traced.traces) {
        std::map<std::string, int> count;
        for (const TraceRecord& r : t) ++count[r.label];
        EXPECT_EQ(count["attn"], n_layers);
        EXPECT_EQ(count["o"], n_layers);
        EXPECT_EQ(count["down"], n_layers);
        EXPECT_GE(count["qkv"], n_layers);  // one launch per weight type unless paired
        EXPECT_GE(count["ffn_up"], n_layers);
        EXPECT_EQ(count["norm"], pass ? 2 * n_layers + 1 : 0);  // a pass before each normalized input
        EXPECT_EQ(count["lm_head"], 1);
        EXPECT_EQ(t.front().label, pass ? "norm" : "qkv");
        EXPECT_EQ(t.back().label, "lm_head");
        EXPECT_GT(t.back().size_bytes, 0);
        for (size_t i = 0; i < t.size(); ++i) {
          ASSERT_TRUE(t[i].stamped) << "launch " << i << " (" << t[i].label << ")";
          // Every GEMV and attention block stamps its first phases inside its own span.
          if (t[i].label != "norm") {
            for (int k : {0, 1, 2}) {
              EXPECT_GE(t[i].phase_first_ns[k], t[i].release_ns) << i << " p" << k;
              EXPECT_LE(t[i].phase_last_ns[k], t[i].exit_ns) << i << " p" << k;
            }
          }
          // Every block counted on the multiprocessor it ran on; each multiprocessor in one
          // class, and its last phase 2 inside the launch.
          int32_t class_sms = 0;
          for (const TraceRecord::SmClass& c : t[i].sm_classes) {
            class_sms += c.sms;
            EXPECT_LE(c.sms_stamped, c.sms) << i;
            if (c.sms_stamped == 0) continue;
            EXPECT_GE(c.phase2_first_ns, t[i].phase_first_ns[kTracePerSmPhase]) << i;
            EXPECT_LE(c.phase2_last_ns, t[i].phase_last_ns[kTracePerSmPhase]) << i;
            EXPECT_LE(static_cast<double>(c.phase2_first_ns), c.phase2_mean_ns) << i;
            EXPECT_LE(c.phase2_mean_ns, static_cast<double>(c.phase2_last_ns)) << i;
          }
          EXPECT_EQ(class_sms, t[i].sms_used) << i;
          EXPECT_GE(t[i].sms_used, 1) << i;
          EXPECT_LE(t[i].sms_used, kTraceMaxSms) << i;
          EXPECT_GE(t[i].max_blocks_per_sm, 1) << i;
          EXPECT_LE(t[i].entry_ns, t[i].release_ns) << i;
          EXPECT_LE(t[i].release_ns, t[i].exit_ns) << i;
          // PDL: no launch passes pdl_wait before every block of the one before has exited.
          if (i > 0) {
            EXPECT_GE(t[i].release_ns, t[i - 1].exit_ns) << "launch " << i << " (" << t[i].label << ")";
          }
        }
      }
      const TraceSummary sum = summarize_trace(traced.traces);
      EXPECT_EQ(sum.n_steps, 6);
      EXPECT_GT(sum.step_us, 0.0);
      ASSERT_TRUE((*b)->set_step_trace(false));
      const Decoded again = decode(**b, n, 2);
      for (const auto& t : again.traces) EXPECT_TRUE(t.empty());
    }
  }
}

}  // namespace
}  // namespace chorus::cuda
