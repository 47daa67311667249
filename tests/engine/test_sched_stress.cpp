// 32 concurrent requests submitted and cancelled from several threads for
// CHORUS_STRESS_SECONDS (default 10), on a cache small enough to force preemption, with a
// model reload in the middle. Run under ASan and TSan in CI. Checks: every request
// finishes exactly once, nothing is delivered after its finish, greedy outputs of equal
// prompts agree (preemption and batching change nothing), and the cache ends empty.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "tests/engine/sched_test_util.h"

namespace chorus::test {
namespace {

constexpr int kThreads = 4;
constexpr int kInFlightPerThread = 8;  // 32 concurrent requests
constexpr int kPromptVariants = 8;

double stress_seconds() {
  const char* s = std::getenv("CHORUS_STRESS_SECONDS");
  const double v = s ? std::atof(s) : 10.0;
  return v > 0 ? v : 10.0;
}

struct Record {
  int variant = 0;
  bool greedy_plain = false;  // greedy, no stop strings: output depends on the prompt only
  std::vector<int32_t> tokens;
  std::optional<FinishReason> reason;
  int n_finish_calls = 0;
  int32_t n_preemptions = 0;
  bool delta_after_finish = false;
};

struct Worker {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  std::vector<std::shared_ptr<Record>> records;
};

RequestCallbacks callbacks_for(Worker& w, const std::shared_ptr<Record>& rec) {
  RequestCallbacks cb;
  cb.on_delta = [&w, rec](const TokenDelta& d) {
    std::lock_guard<std::mutex> lock(w.mu);
    if (rec->reason) rec->delta_after_finish = true;
    rec->tokens.insert(rec->tokens.end(), d.token_ids.begin(), d.token_ids.end());
  };
  cb.on_finish = [&w, rec](RequestId, FinishReason r, const RequestStats& s) {
    std::lock_guard<std::mutex> lock(w.mu);
    rec->reason = r;
    rec->n_preemptions = s.n_preemptions;
    rec->n_finish_calls += 1;
    w.in_flight -= 1;
    w.cv.notify_all();
  };
  return cb;
}

Request random_request(std::mt19937& rng, Record& rec) {
  rec.variant = static_cast<int>(rng() % kPromptVariants);
  Request r;
  // Equal variants share a prompt, for the cross-check; lengths span 1..351 tokens, so
  // some prompts take two chunks.
  r.prompt_tokens = make_prompt(rec.variant, 1 + rec.variant * 50);
  r.max_tokens = 1 + static_cast<int>(rng() % 160);
  r.priority = static_cast<int32_t>(rng() % 3);
  r.ignore_eos = true;
  rec.greedy_plain = true;
  if (rng() % 4 == 0) {
    r.stop_strings = {"abc", "e d"};
    rec.greedy_plain = false;
  }
  if (rng() % 4 == 0) {
    r.sampling.temperature = 0.7f;
    r.sampling.seed = rng();
    rec.greedy_plain = false;
  }
  return r;
}

void run_worker(Engine& engine, Worker& w, unsigned seed,
                std::chrono::steady_clock::time_point deadline, std::atomic<bool>& hung) {
  std::mt19937 rng(seed);
  std::vector<RequestId> mine;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::unique_lock<std::mutex> lock(w.mu);
      if (!w.cv.wait_for(lock, std::chrono::seconds(60),
                         [&] { return w.in_flight < kInFlightPerThread; })) {
        hung = true;
        return;
      }
      w.in_flight += 1;
    }
    auto rec = std::make_shared<Record>();
    Request r = random_request(rng, *rec);
    {
      std::lock_guard<std::mutex> lock(w.mu);
      w.records.push_back(rec);
    }
    const RequestId id = engine.submit(std::move(r), callbacks_for(w, rec));
    mine.push_back(id);
    const unsigned roll = rng() % 10;
    if (roll == 0) engine.cancel(id);                                  // at once
    if (roll == 1 && mine.size() > 3) engine.cancel(mine[rng() % mine.size()]);  // later
    if (roll == 2) engine.cancel(id + 1000000);                        // unknown
    if (roll == 3) std::this_thread::yield();
  }
  std::unique_lock<std::mutex> lock(w.mu);
  if (!w.cv.wait_for(lock, std::chrono::seconds(120), [&] { return w.in_flight == 0; })) hung = true;
}

TEST(SchedStress, ConcurrentSubmitCancelReload) {
  FakeEngineSetup setup;
  setup.backend.kv = KvLayout{16, 96};  // 1536 slots for up to 32 sequences: preemption
  setup.backend.decode_delay = std::chrono::microseconds(50);
  setup.context_tokens = 1024;
  auto engine = make_fake_engine(setup);

  const auto start = std::chrono::steady_clock::now();
  const auto duration = std::chrono::duration<double>(stress_seconds());
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration);
  std::atomic<bool> hung{false};
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  std::vector<Worker> workers(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { run_worker(*engine, workers[static_cast<size_t>(t)], 1234u + t, deadline, hung); });
  }
  std::thread observer([&] {
    int64_t n = 0;
    bool reloaded = false;
    // Polls stats about once a millisecond until the workers are done.
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(done_mu);
        if (done_cv.wait_for(lock, std::chrono::milliseconds(1), [&] { return done; })) break;
      }
      const StatsSnapshot s = engine->stats();
      EXPECT_LE(s.kv_blocks_used, s.kv_blocks_total);
      EXPECT_LE(s.current_batch, 32);
      ++n;
      if (!reloaded && std::chrono::steady_clock::now() > start + duration / 2) {
        LoadOptions load;
        load.context_tokens = 1024;
        EXPECT_TRUE(engine->load_model(load).ok());
        reloaded = true;
      }
    }
    EXPECT_GT(n, 0);
  });
  for (auto& th : threads) th.join();
  {
    std::lock_guard<std::mutex> lock(done_mu);
    done = true;
  }
  done_cv.notify_all();
  observer.join();
  ASSERT_FALSE(hung.load()) << "requests stopped finishing (deadlock?)";
  engine->wait_idle();

  const StatsSnapshot end = engine->stats();
  EXPECT_EQ(end.kv_blocks_used, 0);
  EXPECT_EQ(end.n_running, 0);
  EXPECT_EQ(end.n_waiting, 0);

  std::map<int, std::vector<int32_t>> longest;  // variant -> longest greedy output
  int64_t n_requests = 0, n_cancelled = 0, n_checked = 0, n_preemptions = 0;
  for (Worker& w : workers) {
    std::lock_guard<std::mutex> lock(w.mu);
    for (const auto& rec : w.records) {
      ++n_requests;
      EXPECT_EQ(rec->n_finish_calls, 1);
      EXPECT_FALSE(rec->delta_after_finish);
      ASSERT_TRUE(rec->reason.has_value());
      EXPECT_NE(*rec->reason, FinishReason::Error);
      if (*rec->reason == FinishReason::Cancelled) ++n_cancelled;
      n_preemptions += rec->n_preemptions;
      if (!rec->greedy_plain) continue;
      auto& ref = longest[rec->variant];
      if (rec->tokens.size() > ref.size()) ref = rec->tokens;
    }
  }
  for (Worker& w : workers) {
    std::lock_guard<std::mutex> lock(w.mu);
    for (const auto& rec : w.records) {
      if (!rec->greedy_plain) continue;
      const auto& ref = longest[rec->variant];
      ASSERT_LE(rec->tokens.size(), ref.size());
      EXPECT_TRUE(std::equal(rec->tokens.begin(), rec->tokens.end(), ref.begin()))
          << "greedy outputs of prompt variant " << rec->variant << " disagree";
      ++n_checked;
    }
  }
  std::printf("stress: %lld requests (%lld cancelled, %lld preemptions), %lld greedy outputs "
              "cross-checked\n",
              static_cast<long long>(n_requests), static_cast<long long>(n_cancelled),
              static_cast<long long>(n_preemptions), static_cast<long long>(n_checked));
  EXPECT_GT(n_requests, 32);
  EXPECT_GT(n_preemptions, 0) << "the cache was never full: the stress missed preemption";
}

}  // namespace
}  // namespace chorus::test
