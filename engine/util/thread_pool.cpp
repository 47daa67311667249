#include "engine/util/thread_pool.h"

#include <algorithm>

namespace chorus {

ThreadPool::ThreadPool(int32_t n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  for (int32_t k = 1; k < n_threads; ++k) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  for (;;) {
    int64_t begin = next_.fetch_add(grain_, std::memory_order_relaxed);
    if (begin >= n_items_) return;
    (*fn_)(begin, std::min(n_items_, begin + grain_));
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_chunks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--n_active_ == 0) cv_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n_items, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n_items <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (workers_.empty() || n_items <= grain) {
    fn(0, n_items);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_items_ = n_items;
    grain_ = grain;
    next_.store(0, std::memory_order_relaxed);
    n_active_ = static_cast<int32_t>(workers_.size());
    ++generation_;
  }
  cv_start_.notify_all();
  run_chunks();
  std::unique_lock<std::mutex> lock(mu_);
  cv_done_.wait(lock, [&] { return n_active_ == 0; });
  fn_ = nullptr;
}

}  // namespace chorus
