// Engine's prefix cache and scorer: each prefix's KV kept resident in a sequence of the KV cache (one
// pool or a stream per sequence; LRU, evicted when the cache is full, never while the current call
// uses it), and Score over it.
#include <algorithm>

#include "common/failure.h"
#include "model/engine.h"
#include "model/engine_detail.h"
#include "model/logprob_reducer.h"

namespace gavel {

using engine_detail::Batch;

void Engine::RemoveSeq(int seq) { llama_memory_seq_rm(llama_get_memory(ctx_), seq, -1, -1); }

bool Engine::EvictOne(const std::vector<int>& pinned) {
  const auto unpinned = [&](int seq) { return std::find(pinned.begin(), pinned.end(), seq) == pinned.end(); };
  auto victim = std::find_if(lru_.rbegin(), lru_.rend(), unpinned);
  if (victim == lru_.rend()) return false;
  std::list<int>::iterator at = std::next(victim).base();
  // Within a Score call the prefixes it used are at the front of lru_, in the order it acquired
  // them (the last first). When the least recently used unpinned one is one of them, every unpinned
  // one is: evict the one acquired last. LRU would evict the call's first prefix, which the next
  // call with the same candidates reads first, and evicts its second to make room, and so on: a
  // call with more distinct prefixes than the cache holds would miss every one of them every time.
  if (scoring_ && slots_.find(seq_to_stem_.at(*at))->second.call == score_call_) {
    at = std::find_if(lru_.begin(), lru_.end(), unpinned);
  }
  const int seq = *at;
  RemoveSeq(seq);
  auto stem = seq_to_stem_.find(seq);
  cached_tokens_ -= static_cast<long long>(stem->second.size());
  slots_.erase(stem->second);
  seq_to_stem_.erase(stem);
  lru_.erase(at);
  free_seqs_.push_back(seq);
  return true;
}

void Engine::DecodeWithEviction(llama_batch& batch, const std::vector<int>& pinned) {
  for (;;) {
    CheckAbort();
    const int32_t rc = llama_decode(ctx_, batch);
    if (rc == 0) return;
    if (rc == 1) {
      // No free KV cells: make room by dropping the least recently used cached prefix.
      if (EvictOne(pinned)) continue;
      throw Failure(Code::CONTEXT_OVERFLOW, "the context (" + std::to_string(info_.context_size) +
                                            " cells) cannot hold this work; load the model with a larger contextSize");
    }
    if (rc == 2) throw Failure(Code::ABORTED, "the operation was aborted");
    throw Failure(Code::DECODE_FAILED, "llama_decode returned " + std::to_string(rc) + ": " + LastLlamaErrors());
  }
}

int Engine::AcquireSlot(const std::vector<int32_t>& stem, bool* cold) {
  auto it = slots_.find(stem);
  if (it != slots_.end()) {
    ++hits_;
    *cold = false;
    it->second.call = score_call_;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    pinned_.push_back(it->second.seq);
    return it->second.seq;
  }
  ++misses_;
  // With sequences kept for batched passes, the cache stays within its cap: the least recently used
  // prefix not in this call makes room; when every cached one is (a wave of more distinct prefixes
  // than the cap), a free sequence is taken anyway and TrimCache gives it back after the call.
  while (free_seqs_.empty() || (batch_reserve_ > 0 && int(slots_.size()) >= CacheCap())) {
    if (EvictOne(pinned_)) continue;
    if (!free_seqs_.empty()) break;
    throw Failure(Code::CONTEXT_OVERFLOW, "more distinct prefixes at once than the context has sequences for; "
                                      "load the model with more sequences");
  }
  // The lowest free id: a wave's new sequences then tend to be consecutive (see ScoreWave).
  const auto lowest = std::min_element(free_seqs_.begin(), free_seqs_.end());
  const int seq = *lowest;
  free_seqs_.erase(lowest);
  RemoveSeq(seq);
  pinned_.push_back(seq);
  lru_.push_front(seq);
  Slot slot;
  slot.stem = stem;
  slot.seq = seq;
  slot.lru = lru_.begin();
  slot.call = score_call_;
  slots_.emplace(stem, std::move(slot));
  seq_to_stem_[seq] = stem;
  cached_tokens_ += static_cast<long long>(stem.size());
  *cold = true;
  return seq;
}

void Engine::TrimCache() {
  if (batch_reserve_ == 0) return;
  while (int(slots_.size()) > CacheCap() && EvictOne({})) {
  }
}

void Engine::DropSlot(int seq) {
  auto stem = seq_to_stem_.find(seq);
  if (stem == seq_to_stem_.end()) return;
  RemoveSeq(seq);
  cached_tokens_ -= static_cast<long long>(stem->second.size());
  auto slot = slots_.find(stem->second);
  lru_.erase(slot->second.lru);
  slots_.erase(slot);
  seq_to_stem_.erase(stem);
  free_seqs_.push_back(seq);
}

// long function: one wave's slots, its packed decode and its read-out share the wave's state
void Engine::ScoreWave(const std::vector<ScoreRequest>& requests, size_t w0, size_t w1, const std::vector<int32_t>& read_ids,
                       std::vector<ScoreResult>* results) {
  const int nv = info_.n_vocab;
  llama_memory_t mem = llama_get_memory(ctx_);
  pinned_.clear();
  std::vector<int> seqs;
  std::vector<char> colds;
  try {
    // 1. Each request's sequence: its prefix's stem (all but the last token) cached, or a new sequence
    //    whose stem is decoded below, alone.
    for (size_t r = w0; r < w1; ++r) {
      const auto& p = requests[r].prefix;
      bool cold = false;
      seqs.push_back(AcquireSlot(std::vector<int32_t>(p.begin(), p.end() - 1), &cold));
      colds.push_back(cold ? 1 : 0);
      (*results)[r].logprobs.resize(requests[r].continuation.size());
      (*results)[r].final.resize(read_ids.size());
    }
    // 2. Decode each cold stem alone (its own batches, no outputs), then [last prefix token,
    //    continuation...] of every request into its own sequence, packed into full batches; outputs
    //    from the last prefix token on. A stem decoded beside other sequences' tokens would get KV
    //    that depends on them: llama.cpp's CUDA kernels round with the ubatch's shape. Decoded alone, a stem's KV is the same whether this wave decodes it or a
    //    cached copy is read, so a verdict does not move with the prefix cache's state.
    struct Out { size_t r; size_t j; int i; };  // batch index i; position j predicts continuation[j] (or the read ids at the end)
    // logprobsInGraph: the log-probs read where the logits are (logprob_reducer.h), k floats a row
    // back instead of the vocabulary's logits. The samplers stay attached across calls (attaching
    // makes llama.cpp re-reserve its graph); the host path when llama.cpp will not attach them.
    const int k = std::max(1, int(read_ids.size()));
    LogprobReducer* reducer = nullptr;
    if (logprobs_) {
      bool attached = true;
      for (const int seq : seqs) attached = attached && logprobs_->Attach(seq);
      if (attached) {
        reducer = logprobs_.get();
      } else {
        logprobs_.reset();  // detaches every sequence: from now on, the host path
      }
    }
    Batch batch(n_batch_);
    std::vector<Out> outs;
    std::vector<int32_t> targets;  // k a output: its continuation token k times, or the read ids (padded with 0)
    std::vector<float> lp;         // k a output: their log-probs
    // The log-probs of outs' targets from the decoded batch: in the graph through the reducer, or
    // from the logits llama.cpp copied out, with the same host arithmetic (HostLogProbs).
    auto read_reduced = [&]() {
      std::vector<size_t> index(outs.size());
      reducer->Begin(k);
      for (size_t i = 0; i < outs.size(); ++i) index[i] = reducer->Push(seqs[outs[i].r - w0], targets.data() + i * size_t(k));
      reducer_ = reducer;
      try {
        DecodeWithEviction(batch.b, pinned_);
      } catch (...) {
        reducer_ = nullptr;
        throw;
      }
      reducer_ = nullptr;
      if (!reducer->Error().empty()) throw Failure(Code::INTERNAL, "log-probs in the graph: " + reducer->Error());
      for (size_t i = 0; i < outs.size(); ++i) {
        const float* r = reducer->Result(seqs[outs[i].r - w0], index[i]);
        if (r == nullptr) throw Failure(Code::INTERNAL, "no reduced log-probs for an output position");
        std::copy(r, r + k, lp.begin() + std::ptrdiff_t(i * size_t(k)));
      }
    };
    auto read_copied = [&]() {
      DecodeWithEviction(batch.b, pinned_);
      std::vector<const float*> rows(outs.size(), nullptr);
      for (size_t i = 0; i < outs.size(); ++i) {
        rows[i] = llama_get_logits_ith(ctx_, outs[i].i);
        if (rows[i] == nullptr) throw Failure(Code::INTERNAL, "no logits for an output position");
      }
      // the decode has finished, so the context's threads are idle
      HostLogProbs([&](int64_t i) { return rows[size_t(i)]; }, int64_t(outs.size()), nv, targets.data(), size_t(k), lp.data(), threads_);
    };
    auto flush = [&]() {
      if (batch.b.n_tokens == 0) return;
      targets.resize(outs.size() * size_t(k));
      lp.resize(targets.size());
      for (size_t i = 0; i < outs.size(); ++i) {
        const Out& o = outs[i];
        const auto& cont = requests[o.r].continuation;
        int32_t* t = targets.data() + i * size_t(k);
        for (size_t q = 0; q < size_t(k); ++q) t[q] = o.j < cont.size() ? cont[o.j] : q < read_ids.size() ? read_ids[q] : 0;
      }
      if (reducer) {
        read_reduced();
      } else {
        read_copied();
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        const Out& o = outs[i];
        const float* v = lp.data() + i * size_t(k);
        ScoreResult& res = (*results)[o.r];
        if (o.j < requests[o.r].continuation.size()) {
          res.logprobs[o.j] = v[0];
        } else {
          std::copy(v, v + read_ids.size(), res.final.begin());
        }
      }
      batch.b.n_tokens = 0;
      outs.clear();
    };
    // In ascending sequence ids: with per-sequence streams llama.cpp puts only consecutive ids in
    // one ubatch (split_equal, sequential), in the order it meets them in the batch.
    std::vector<size_t> order(w1 - w0);
    for (size_t i = 0; i < order.size(); ++i) order[i] = w0 + i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seqs[a - w0] < seqs[b - w0]; });
    for (const size_t r : order) {
      if (!colds[r - w0]) continue;
      const auto& p = requests[r].prefix;
      for (size_t pos = 0; pos + 1 < p.size(); ++pos) {
        batch.Add(p[pos], int32_t(pos), seqs[r - w0], false);
        if (batch.b.n_tokens == n_batch_) flush();
      }
      flush();
    }
    for (const size_t r : order) {
      const auto& q = requests[r];
      const int seq = seqs[r - w0];
      const size_t stem = q.prefix.size() - 1;
      const size_t n = q.prefix.size() + q.continuation.size();
      for (size_t pos = stem; pos < n; ++pos) {
        const int32_t tok = pos < q.prefix.size() ? q.prefix[pos] : q.continuation[pos - q.prefix.size()];
        const bool out = pos >= stem;
        if (out) outs.push_back({r, pos - stem, batch.b.n_tokens});
        batch.Add(tok, int32_t(pos), seq, out);
        if (batch.b.n_tokens == n_batch_) flush();
      }
    }
    flush();
  } catch (...) {
    // A cold stem may be half decoded: drop it; a cached one loses what was decoded after it.
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (colds[i]) {
        DropSlot(seqs[i]);
      } else {
        llama_memory_seq_rm(mem, seqs[i], llama_pos(requests[w0 + i].prefix.size() - 1), -1);
      }
    }
    pinned_.clear();
    TrimCache();
    throw;
  }
  // 3. Trim each sequence back to its stem: the cache keeps the prefix, not the continuation.
  for (size_t i = 0; i < seqs.size(); ++i) llama_memory_seq_rm(mem, seqs[i], llama_pos(requests[w0 + i].prefix.size() - 1), -1);
  pinned_.clear();
  TrimCache();
}

std::vector<ScoreResult> Engine::Score(const std::vector<ScoreRequest>& requests, const std::vector<int32_t>& read_ids) {
  CheckTokens(read_ids, "readIds");
  for (size_t r = 0; r < requests.size(); ++r) {
    const auto& q = requests[r];
    if (q.prefix.empty()) throw Failure(Code::INVALID_ARGUMENT, "request " + std::to_string(r) + ": the prefix is empty");
    CheckTokens(q.prefix, "prefix");
    CheckTokens(q.continuation, "continuation");
    if (q.prefix.size() + q.continuation.size() > size_t(info_.context_size)) {
      throw Failure(Code::CONTEXT_OVERFLOW, "request " + std::to_string(r) + ": " + std::to_string(q.prefix.size() + q.continuation.size()) +
                                            " tokens exceed the context size " + std::to_string(info_.context_size));
    }
  }
  abort_flag = false;
  std::vector<ScoreResult> results(requests.size());
  ++score_call_;
  scoring_ = true;
  struct Done {
    bool* flag;
    ~Done() { *flag = false; }
  } done{&scoring_};

  // Requests go in waves: distinct stems (each request decodes into its stem's sequence), at most
  // the cache's sequences, and with one pool (kv_unified) no more cells than it holds (stems plus
  // continuations; cached stems outside the wave are evicted as needed). Per-sequence streams hold
  // any one request (checked above). A lone request always fits.
  const size_t max_seqs = size_t(n_seq_ - 1);
  size_t start = 0;
  long long cells = 0;
  for (size_t r = 0; r <= requests.size(); ++r) {
    bool cut = r == requests.size();
    long long need = 0;
    if (!cut) {
      const auto& p = requests[r].prefix;
      need = static_cast<long long>(p.size() + requests[r].continuation.size());
      bool repeat = false;
      for (size_t q = start; q < r && !repeat; ++q) {
        const auto& pq = requests[q].prefix;
        repeat = pq.size() == p.size() && std::equal(pq.begin(), pq.end() - 1, p.begin());
      }
      cut = r > start && (repeat || r - start >= max_seqs || (kv_unified_ && cells + need > info_.context_size));
    }
    if (cut && r > start) {
      ScoreWave(requests, start, r, read_ids, &results);
      start = r;
      cells = 0;
    }
    cells += need;
  }
  return results;
}

void Engine::ClearCache() {
  for (const auto& kv : seq_to_stem_) RemoveSeq(kv.first);
  for (const auto& kv : seq_to_stem_) free_seqs_.push_back(kv.first);
  slots_.clear();
  seq_to_stem_.clear();
  lru_.clear();
  cached_tokens_ = 0;
}

CacheStats Engine::Stats() const {
  CacheStats s;
  s.entries = int(slots_.size());
  s.tokens = cached_tokens_;
  s.hits = hits_;
  s.misses = misses_;
  s.batch_drops = batch_drops_;
  return s;
}

}  // namespace gavel
