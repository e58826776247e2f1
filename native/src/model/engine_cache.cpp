// Engine's prefix cache and scorer: each prefix's KV kept resident in a sequence of the unified KV
// cache (LRU, evicted when the cache is full, never while the current call uses it), and Score over it.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/failure.h"
#include "common/parallel.h"
#include "model/engine.h"
#include "model/engine_detail.h"

namespace gavel {

using engine_detail::Batch;
using engine_detail::LogSumExp;

void Engine::RemoveSeq(int seq) { llama_memory_seq_rm(llama_get_memory(ctx_), seq, -1, -1); }

bool Engine::EvictOne(const std::vector<int>& pinned) {
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    const int seq = *it;
    if (std::find(pinned.begin(), pinned.end(), seq) != pinned.end()) continue;
    RemoveSeq(seq);
    auto stem = seq_to_stem_.find(seq);
    cached_tokens_ -= static_cast<long long>(stem->second.size());
    slots_.erase(stem->second);
    seq_to_stem_.erase(stem);
    lru_.erase(std::next(it).base());
    free_seqs_.push_back(seq);
    return true;
  }
  return false;
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

int Engine::EnsureSlot(const std::vector<int32_t>& stem) {
  auto it = slots_.find(stem);
  if (it != slots_.end()) {
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    pinned_.push_back(it->second.seq);
    return it->second.seq;
  }
  ++misses_;
  while (free_seqs_.empty()) {
    if (!EvictOne(pinned_)) {
      throw Failure(Code::CONTEXT_OVERFLOW, "more distinct prefixes at once than the context has sequences for; "
                                        "load the model with more sequences");
    }
  }
  const int seq = free_seqs_.back();
  free_seqs_.pop_back();
  pinned_.push_back(seq);
  try {
    RemoveSeq(seq);
    DecodeSequence(stem, seq, 0, false, nullptr);
  } catch (...) {
    RemoveSeq(seq);
    pinned_.pop_back();
    free_seqs_.push_back(seq);
    throw;
  }
  lru_.push_front(seq);
  Slot slot;
  slot.stem = stem;
  slot.seq = seq;
  slot.lru = lru_.begin();
  slots_.emplace(stem, std::move(slot));
  seq_to_stem_[seq] = stem;
  cached_tokens_ += static_cast<long long>(stem.size());
  return seq;
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
  const int nv = info_.n_vocab;
  llama_memory_t mem = llama_get_memory(ctx_);

  // Requests go in waves, one working sequence each: at most n_work_ of them, and no more than the
  // KV cache holds at once (their prefixes' cached stems, which are pinned for the wave, plus every
  // continuation). A lone request always fits: it was checked against the context size above.
  std::vector<size_t> wave_ends;
  {
    size_t start = 0;
    long long cells = 0;
    std::vector<const std::vector<int32_t>*> stems;
    for (size_t r = 0; r < requests.size(); ++r) {
      const auto& p = requests[r].prefix;
      long long need = static_cast<long long>(requests[r].continuation.size()) + 1;
      bool shared = false;
      for (size_t q = start; q < r; ++q) {
        const auto& pq = requests[q].prefix;
        if (pq.size() == p.size() && std::equal(pq.begin(), pq.end() - 1, p.begin())) shared = true;
      }
      if (!shared) need += static_cast<long long>(p.size()) - 1;
      if (r > start && (r - start >= size_t(n_work_) || cells + need > info_.context_size)) {
        wave_ends.push_back(r);
        start = r;
        cells = static_cast<long long>(requests[r].continuation.size()) + static_cast<long long>(p.size());
      } else {
        cells += need;
      }
    }
    wave_ends.push_back(requests.size());
  }
  size_t w0 = 0;
  for (const size_t w1 : wave_ends) {
    pinned_.clear();
    try {
      // 1. Every prefix's stem (all but its last token) resident in a cached sequence.
      std::vector<int> slot(w1 - w0, -1);
      for (size_t r = w0; r < w1; ++r) {
        const auto& p = requests[r].prefix;
        if (p.size() > 1) slot[r - w0] = EnsureSlot(std::vector<int32_t>(p.begin(), p.end() - 1));
      }
      // 2. Working sequence r starts as a (cell-sharing) copy of its prefix's sequence.
      for (size_t r = w0; r < w1; ++r) {
        const int ws = int(r - w0);
        RemoveSeq(ws);
        if (slot[r - w0] >= 0) llama_memory_seq_cp(mem, slot[r - w0], ws, -1, -1);
        results[r].logprobs.resize(requests[r].continuation.size());
        results[r].final.resize(read_ids.size());
      }
      // 3. Decode [last prefix token, continuation...] of every request, packed into full batches.
      struct Out { size_t r; size_t j; };  // position j predicts continuation[j] (or the read ids at the end)
      Batch batch(n_batch_);
      std::vector<Out> outs;
      auto flush = [&]() {
        if (batch.b.n_tokens == 0) return;
        DecodeWithEviction(batch.b, pinned_);
        const int nt = batch.b.n_tokens;
        std::vector<const float*> rows(size_t(nt), nullptr);
        for (int i = 0; i < nt; ++i) {
          rows[size_t(i)] = llama_get_logits_ith(ctx_, i);
          if (rows[size_t(i)] == nullptr) throw Failure(Code::INTERNAL, "no logits for an output position");
        }
        // The log-normalisers, rows split over the context's threads (the decode has finished, so
        // they are idle): a long continuation has a vocabulary-wide sum per position.
        std::vector<double> lses(static_cast<size_t>(nt), 0.0);
        const unsigned workers = std::max(1u, std::min(threads_, unsigned((int64_t(nt) * nv) / (1 << 18) + 1)));
        Parallel(workers, [&](unsigned t) {
          for (int i = int(int64_t(nt) * t / workers); i < int(int64_t(nt) * (t + 1) / workers); ++i) lses[size_t(i)] = LogSumExp(rows[size_t(i)], nv);
        });
        for (int i = 0; i < nt; ++i) {
          const float* row = rows[size_t(i)];
          const double lse = lses[size_t(i)];
          const Out& o = outs[size_t(i)];
          const auto& cont = requests[o.r].continuation;
          if (o.j < cont.size()) {
            results[o.r].logprobs[o.j] = float(double(row[cont[o.j]]) - lse);
          } else {
            for (size_t k = 0; k < read_ids.size(); ++k) results[o.r].final[k] = float(double(row[read_ids[k]]) - lse);
          }
        }
        batch.b.n_tokens = 0;
        outs.clear();
      };
      for (size_t r = w0; r < w1; ++r) {
        const auto& q = requests[r];
        const int ws = int(r - w0);
        const size_t n = q.continuation.size() + 1;
        for (size_t j = 0; j < n; ++j) {
          const int32_t tok = j == 0 ? q.prefix.back() : q.continuation[j - 1];
          batch.Add(tok, int32_t(q.prefix.size() - 1 + j), ws, true);
          outs.push_back({r, j});
          if (batch.b.n_tokens == n_batch_) flush();
        }
      }
      flush();
    } catch (...) {
      for (size_t r = w0; r < w1; ++r) RemoveSeq(int(r - w0));
      throw;
    }
    for (size_t r = w0; r < w1; ++r) RemoveSeq(int(r - w0));
    w0 = w1;
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
  return s;
}

}  // namespace gavel
