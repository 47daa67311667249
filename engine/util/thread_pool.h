#pragma once
// A fixed set of worker threads for data-parallel loops. parallel_for blocks until every
// item is done; items are handed out in chunks from an atomic counter, so the partition
// varies between runs but each item's computation does not (results are deterministic as
// long as items write disjoint outputs).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace chorus {

class ThreadPool {
 public:
  explicit ThreadPool(int32_t n_threads);  // 0: hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t n_threads() const { return static_cast<int32_t>(workers_.size()) + 1; }

  // Calls fn(begin, end) over [0, n_items) in chunks of at most `grain` items, on the
  // workers and the calling thread. Not reentrant: one parallel_for at a time per pool.
  void parallel_for(int64_t n_items, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop();
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  uint64_t generation_ = 0;   // bumped per parallel_for, wakes workers
  int32_t n_active_ = 0;      // workers still inside the current job
  bool stop_ = false;
  // Current job.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_items_ = 0, grain_ = 1;
  std::atomic<int64_t> next_{0};
};

}  // namespace chorus
