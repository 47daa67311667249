#include "engine/sched/scheduler.h"

#include <algorithm>
#include <cassert>

namespace chorus {

Scheduler::Scheduler(const SchedulerConfig& config, const KvLayout& kv)
    : config_(config), kv_(kv), alloc_(kv.n_blocks, kv.block_tokens) {
  assert(config.max_batch > 0 && config.prefill_chunk_tokens > 0 && config.max_prefill_seqs > 0);
  if (config_.prefill_step_tokens < config_.prefill_chunk_tokens) {
    config_.prefill_step_tokens = config_.prefill_chunk_tokens;
  }
  const int64_t cache_tokens = static_cast<int64_t>(kv.n_blocks) * kv.block_tokens;
  context_limit_ = static_cast<int32_t>(
      std::min<int64_t>(config.context_tokens, cache_tokens));
  running_.reserve(static_cast<size_t>(config.max_batch));
  plan_.decode.reserve(static_cast<size_t>(config.max_batch));
}

void Scheduler::add(NewSequence n) {
  assert(!n.prompt.empty() && static_cast<int32_t>(n.prompt.size()) < context_limit_);
  assert(seqs_.find(n.id) == seqs_.end());
  auto s = std::make_unique<Sequence>();
  s->id = n.id;
  s->priority = n.priority;
  s->arrival = next_arrival_++;
  s->sampling = n.sampling;
  s->n_prompt = static_cast<int32_t>(n.prompt.size());
  s->tokens = std::move(n.prompt);
  Sequence* raw = s.get();
  seqs_.emplace(n.id, std::move(s));
  insert_waiting(raw);
}

void Scheduler::remove(int64_t id) {
  if (Sequence* s = find_mut(id)) erase(s);
}

const Sequence* Scheduler::find(int64_t id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

Sequence* Scheduler::find_mut(int64_t id) {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

int32_t Scheduler::n_running() const {
  return static_cast<int32_t>(running_.size() + prefilling_.size());
}

int32_t Scheduler::n_holding_blocks() const { return n_running(); }

const StepPlan& Scheduler::schedule() {
  plan_.clear();
  plan_decodes();
  plan_prefill();
  return plan_;
}

// Every running sequence decodes one token; each first makes room for its next position.
// When the cache is full, the lowest-ranked sequence still to be considered (or the
// prefilling one) gives its blocks back; if that is the sequence itself, it steps aside.
void Scheduler::plan_decodes() {
  size_t i = 0;
  while (i < running_.size()) {
    Sequence* s = running_[i];
    assert(static_cast<int32_t>(i) < config_.max_batch);
    if (alloc_.grow_to(s->block_table, static_cast<int64_t>(s->n_computed) + 1)) {
      plan_.decode.push_back({s->id, s->n_computed, s->tokens.back()});
      ++i;
      continue;
    }
    Sequence* victim = lowest_victim(i + 1, s);
    if (victim && !victim->outranks(*s)) {
      preempt(victim);
    } else if (n_holding_blocks() == 1) {
      // Alone and still out of room: the sequence has reached what the cache can hold.
      force_finish(s, FinishReason::ContextFull);
    } else {
      preempt(s);
    }
  }
}

// The prompts already being chunked continue first, in admission order; then waiting
// sequences are admitted while their first chunk fits. The first chunk that does not fit
// ends the planning, so a long prompt is never overtaken for ever by short ones behind it.
void Scheduler::plan_prefill() {
  const std::vector<Sequence*> continuing = prefilling_;
  for (Sequence* s : continuing) {
    if (!plan_chunk(s)) return;
  }
  while (!waiting_.empty() && static_cast<int32_t>(plan_.prefill.size()) < config_.max_prefill_seqs) {
    const int32_t first = next_chunk_tokens(*waiting_.front());
    if (plan_.n_prefill_tokens() + first > config_.prefill_step_tokens) return;
    if (!admit_next()) return;
    if (!plan_chunk(prefilling_.back())) return;
  }
}

int32_t Scheduler::next_chunk_tokens(const Sequence& s) const {
  return std::min(config_.prefill_chunk_tokens, s.prefill_target() - s.n_computed);
}

bool Scheduler::plan_chunk(Sequence* s) {
  if (static_cast<int32_t>(plan_.prefill.size()) >= config_.max_prefill_seqs) return false;
  const int32_t n = next_chunk_tokens(*s);
  assert(n > 0);
  if (plan_.n_prefill_tokens() + n > config_.prefill_step_tokens) return false;
  const bool last = s->n_computed + n == s->prefill_target();
  plan_.prefill.push_back(PlannedPrefill{s->id, s->n_computed, n, last && s->prefill_samples()});
  return true;
}

// Admits the best waiting sequence when its whole (re)prefill plus one decode slot fits,
// displacing running sequences of strictly lower priority if needed. Otherwise it waits:
// first come, first served within a priority, so a large request is not starved by small
// ones behind it.
bool Scheduler::admit_next() {
  if (waiting_.empty() || n_holding_blocks() >= config_.max_batch) return false;
  Sequence* s = waiting_.front();
  const int32_t target = s->prefill_target();
  const int32_t need = alloc_.blocks_for_tokens(static_cast<int64_t>(target) + 1);
  while (alloc_.n_blocks_free() < need) {
    Sequence* victim = lowest_victim(0, nullptr);
    if (!victim || victim->priority >= s->priority) return false;
    preempt(victim);
  }
  const bool grown = alloc_.grow_to(s->block_table, target);
  assert(grown);
  (void)grown;
  waiting_.erase(waiting_.begin());
  s->phase = SeqPhase::Prefilling;
  prefilling_.push_back(s);
  return true;
}

// The lowest-ranked sequence among running_[first_running..] and the prefilling ones.
Sequence* Scheduler::lowest_victim(size_t first_running, const Sequence* exclude) const {
  Sequence* best = nullptr;
  if (first_running < running_.size() && running_.back() != exclude) best = running_.back();
  for (Sequence* p : prefilling_) {
    if (p != exclude && (!best || best->outranks(*p))) best = p;
  }
  return best;
}

void Scheduler::preempt(Sequence* s) {
  if (s->phase == SeqPhase::Prefilling) {
    prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), s));
    // Admission may displace a sequence whose chunk is already planned this step.
    auto& p = plan_.prefill;
    p.erase(std::remove_if(p.begin(), p.end(),
                           [&](const PlannedPrefill& c) { return c.seq_id == s->id; }),
            p.end());
  } else {
    auto it = std::find(running_.begin(), running_.end(), s);
    assert(it != running_.end());
    running_.erase(it);
    // Admission may displace a sequence already planned to decode this step.
    auto& d = plan_.decode;
    d.erase(std::remove_if(d.begin(), d.end(),
                           [&](const PlannedDecode& p) { return p.seq_id == s->id; }),
            d.end());
  }
  alloc_.release(s->block_table);
  s->n_computed = 0;
  s->n_preemptions += 1;
  plan_.preempted.push_back(s->id);
  insert_waiting(s);
}

void Scheduler::force_finish(Sequence* s, FinishReason reason) {
  plan_.finished.push_back({s->id, reason});
  erase(s);
}

void Scheduler::erase(Sequence* s) {
  auto& list = s->phase == SeqPhase::Waiting      ? waiting_
               : s->phase == SeqPhase::Prefilling ? prefilling_
                                                  : running_;
  auto it = std::find(list.begin(), list.end(), s);
  assert(it != list.end());
  list.erase(it);
  alloc_.release(s->block_table);
  seqs_.erase(s->id);
}

void Scheduler::insert_waiting(Sequence* s) {
  s->phase = SeqPhase::Waiting;
  auto it = std::upper_bound(waiting_.begin(), waiting_.end(), s,
                             [](const Sequence* a, const Sequence* b) { return a->outranks(*b); });
  waiting_.insert(it, s);
}

void Scheduler::fill_decode_batch(DecodeBatch& batch) const {
  const size_t m = plan_.decode.size();
  batch.seqs.resize(m);
  batch.tokens.resize(m);
  for (size_t i = 0; i < m; ++i) {
    const PlannedDecode& p = plan_.decode[i];
    const Sequence* s = find(p.seq_id);
    assert(s);
    SeqState& st = batch.seqs[i];
    st.seq_id = s->id;
    st.block_table = s->block_table;
    st.n_past = p.n_past;
    st.sampling = s->sampling;
    st.history = s->sampling.has_penalties() ? s->history(s->sampling.penalty_last_n)
                                             : std::span<const int32_t>();
    st.sample_index = static_cast<uint64_t>(s->n_generated());
    batch.tokens[i] = p.input_token;
  }
}

PrefillChunk Scheduler::prefill_chunk(size_t i) const {
  assert(i < plan_.prefill.size());
  const PlannedPrefill& p = plan_.prefill[i];
  const Sequence* s = find(p.seq_id);
  assert(s);
  PrefillChunk c;
  c.seq.seq_id = s->id;
  c.seq.block_table = s->block_table;
  c.seq.n_past = p.n_past;
  c.seq.sampling = s->sampling;
  const std::span<const int32_t> upto =
      std::span<const int32_t>(s->tokens).first(static_cast<size_t>(p.n_past + p.n_tokens));
  if (s->sampling.has_penalties()) {
    const size_t n_hist = std::min(upto.size(), static_cast<size_t>(
                                                    std::max(0, s->sampling.penalty_last_n)));
    c.seq.history = upto.last(n_hist);
  }
  c.seq.sample_index = 0;
  c.tokens = upto.subspan(static_cast<size_t>(p.n_past));
  c.output = p.samples_first_token ? PrefillChunk::Output::SampleLast : PrefillChunk::Output::None;
  return c;
}

void Scheduler::apply_decode(std::span<const int32_t> decode_tokens) {
  assert(decode_tokens.size() == plan_.decode.size());
  for (size_t i = 0; i < plan_.decode.size(); ++i) {
    Sequence* s = find_mut(plan_.decode[i].seq_id);
    if (!s) continue;  // removed after the step ran (cancel or error)
    s->n_computed += 1;
    s->tokens.push_back(decode_tokens[i]);
  }
}

void Scheduler::apply_prefill(std::span<const int32_t> sampled_tokens) {
  assert(sampled_tokens.size() == plan_.prefill.size());
  for (size_t i = 0; i < plan_.prefill.size(); ++i) {
    const PlannedPrefill& p = plan_.prefill[i];
    Sequence* s = find_mut(p.seq_id);
    if (!s || s->phase != SeqPhase::Prefilling) continue;  // removed after the step ran
    s->n_computed += p.n_tokens;
    if (s->n_computed < s->prefill_target()) continue;
    prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), s));
    s->phase = SeqPhase::Running;
    if (p.samples_first_token) s->tokens.push_back(sampled_tokens[i]);
    auto it = std::upper_bound(running_.begin(), running_.end(), s,
                               [](const Sequence* a, const Sequence* b) { return a->outranks(*b); });
    running_.insert(it, s);
  }
}

}  // namespace chorus
