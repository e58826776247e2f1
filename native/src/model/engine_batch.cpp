// Engine::HiddenStatesMany: the residual stream of several tasks from shared llama_decode calls, each
// task in a sequence of its own, so a server with many waiting tasks runs a few wide forward passes
// instead of one narrow pass per task. Each task's rows are those HiddenStates gives for it alone, up to
// float summation order (attention only ever reads the task's own sequence).
//
// Where a captured row comes from: the l_out-ℓ tensor of a ubatch holds its tokens in the order
// llama.cpp's batch splitter put them, and the eval callback sees only the tensor. So every decode
// here is laid out so that the split is known: with one KV pool (kv_unified) llama.cpp splits in
// batch order (split_simple), so a batch of whole per-sequence runs of tokens, n_batch at most, is one
// ubatch in batch order; with a stream per sequence it splits by equal counts over consecutive sequence
// ids (split_equal, sequential), so a batch holds the same count t of tokens from each of a run of
// consecutive sequence ids (a task that ends sooner padded past its end), n_batch at most, which is
// again one ubatch in batch order. Each decode's captured rows are checked to be exactly the tokens it
// carried.
#include <algorithm>

#include "common/failure.h"
#include "model/engine.h"
#include "model/engine_detail.h"
#include "model/logprob_reducer.h"

namespace gavel {

using engine_detail::Batch;

bool Engine::SetCapture(const std::vector<int>& layers, const char* verb) {
  if (layers.empty()) throw Failure(Code::INVALID_ARGUMENT, std::string(verb) + " needs at least one layer");
  bool last = false;
  long deepest = -1;
  capture_index_.clear();
  for (size_t i = 0; i < layers.size(); ++i) {
    const int layer = layers[i];
    if (layer < 0 || layer >= info_.n_layer) {
      throw Failure(Code::LAYER_OUT_OF_RANGE, "layer " + std::to_string(layer) + " is out of range: the model has " +
                                              std::to_string(info_.n_layer) + " layers (0.." + std::to_string(info_.n_layer - 1) + ")");
    }
    if (!capture_index_.emplace("l_out-" + std::to_string(layer), i).second) {
      throw Failure(Code::INVALID_ARGUMENT, "layer " + std::to_string(layer) + " is asked for twice");
    }
    // Past the last block llama.cpp keeps only the rows it outputs, so every row is output there.
    last = last || layer == info_.n_layer - 1;
    if (deepest < 0 || layer > layers[size_t(deepest)]) deepest = long(i);
  }
  // Early exit only when no logits are read: with the last layer asked for, every row is output.
  exit_after_ = last ? -1 : deepest;
  return last;
}

std::vector<int> Engine::BatchSeqs(size_t want) {
  // Usable ids: the scratch sequence 0, free ones, and (unless sequences are kept for batched passes:
  // LoadParams.batch_sequences) cached prefixes, dropped; a generation's sequence is neither free nor
  // cached, and is never touched.
  std::vector<char> usable(size_t(n_seq_), 0), cached(size_t(n_seq_), 0);
  usable[0] = 1;
  for (const int s : free_seqs_) usable[size_t(s)] = 1;
  if (batch_reserve_ == 0)
    for (const auto& kv : seq_to_stem_) usable[size_t(kv.first)] = cached[size_t(kv.first)] = 1;
  // The longest run of usable ids (up to want), and among those the one that drops the fewest
  // cached prefixes (the verdict's, which it would decode again).
  size_t best_a = 0, best_len = 0, best_cached = 0;
  for (size_t a = 0; a < usable.size(); ++a) {
    if (!usable[a]) continue;
    size_t len = 0, c = 0;
    while (a + len < usable.size() && usable[a + len] && len < want) c += size_t(cached[a + len++]);
    if (len > best_len || (len == best_len && c < best_cached)) best_a = a, best_len = len, best_cached = c;
  }
  std::vector<int> seqs;
  for (size_t i = 0; i < best_len; ++i) {
    const int s = int(best_a + i);
    if (cached[size_t(s)]) {
      DropSlot(s);  // back on free_seqs_: free again once this call ends
      ++batch_drops_;
    }
    // A Score may have left a log-prob sampler on it: these decodes read the graph, not samplers.
    if (logprobs_ && s != 0) logprobs_->Detach(s);
    seqs.push_back(s);
  }
  return seqs;
}

// long function: one wave's decode loop and its scatter of the captured rows share its state
void Engine::StatesWave(const std::vector<std::vector<int32_t>>& tasks, size_t t0, const std::vector<int>& seqs, bool last,
                        std::vector<std::vector<std::vector<float>>>* out) {
  const size_t k = seqs.size();
  const size_t n_embd = size_t(info_.n_embd);
  const size_t n_layers = capture_index_.size();
  std::vector<size_t> done(k, 0);
  for (const int s : seqs) RemoveSeq(s);
  Batch batch(n_batch_);
  struct Segment { size_t j, from, count; };  // wave task j's tokens [from, from + count)
  std::vector<Segment> segs;
  for (;;) {
    segs.clear();
    size_t total = 0;
    if (kv_unified_) {
      // one pool: whole runs of any sequences, in batch order, up to n_batch tokens
      for (size_t j = 0; j < k && total < size_t(n_batch_); ++j) {
        const size_t left = tasks[t0 + j].size() - done[j];
        if (left == 0) continue;
        const size_t c = std::min(left, size_t(n_batch_) - total);
        segs.push_back({j, done[j], c});
        total += c;
      }
    } else {
      // a stream per sequence: the same count t from each of the consecutive ids with tokens left
      // (see StatesWave's caller: lengths descend with the ids, so those are a prefix); a task with
      // fewer than t left is padded past its end (its last token repeated): later positions are
      // never attended to by earlier ones, and their rows are dropped. Without padding, every
      // distinct length would end a decode, and short tasks would fragment into narrow decodes.
      size_t m = 0;
      while (m < k && done[m] < tasks[t0 + m].size()) ++m;
      if (m > 0) {
        const size_t t = std::min(tasks[t0].size() - done[0], std::max<size_t>(1, size_t(n_batch_) / m));
        for (size_t j = 0; j < m; ++j) segs.push_back({j, done[j], t});
        total = t * m;
      }
    }
    if (segs.empty()) break;
    batch.b.n_tokens = 0;
    for (const Segment& g : segs) {
      const auto& toks = tasks[t0 + g.j];
      for (size_t i = g.from; i < g.from + g.count; ++i) batch.Add(toks[std::min(i, toks.size() - 1)], int32_t(i), seqs[g.j], last);
    }
    capture_rows_.assign(n_layers, {});
    DecodeWithEviction(batch.b, pinned_);
    if (!capture_error_.empty()) throw Failure(Code::HIDDEN_STATES_UNAVAILABLE, capture_error_);
    for (size_t l = 0; l < n_layers; ++l) {
      const std::vector<float>& rows = capture_rows_[l];
      if (rows.size() != total * n_embd) {
        throw Failure(Code::HIDDEN_STATES_UNAVAILABLE, "a batched decode of " + std::to_string(total) + " tokens captured " +
                                                       std::to_string(rows.size() / n_embd) + " rows of a layer");
      }
      size_t r = 0;
      for (const Segment& g : segs) {
        auto& dst = (*out)[t0 + g.j][l];
        const size_t real = std::min(g.count, tasks[t0 + g.j].size() - g.from);  // the rest is padding
        dst.insert(dst.end(), rows.begin() + std::ptrdiff_t(r * n_embd), rows.begin() + std::ptrdiff_t((r + real) * n_embd));
        r += g.count;
      }
    }
    for (const Segment& g : segs) done[g.j] = std::min(done[g.j] + g.count, tasks[t0 + g.j].size());
  }
  for (const int s : seqs) RemoveSeq(s);
}

std::vector<std::vector<std::vector<float>>> Engine::HiddenStatesMany(const std::vector<std::vector<int32_t>>& tasks,
                                                                      const std::vector<int>& layers) {
  if (tasks.empty()) throw Failure(Code::INVALID_ARGUMENT, "hiddenStatesMany needs at least one task");
  for (size_t t = 0; t < tasks.size(); ++t) {
    const std::string what = "tasks[" + std::to_string(t) + "]";
    if (tasks[t].empty()) throw Failure(Code::INVALID_ARGUMENT, what + " has no token");
    CheckTokens(tasks[t], what.c_str());
    if (tasks[t].size() > size_t(info_.context_size)) {
      throw Failure(Code::CONTEXT_OVERFLOW, what + ": " + std::to_string(tasks[t].size()) + " tokens exceed the context size " +
                                            std::to_string(info_.context_size));
    }
  }
  const bool last = SetCapture(layers, "hiddenStatesMany");
  abort_flag = false;
  // Longest first (ties in call order): a wave then holds tasks of similar lengths, and with a stream
  // per sequence the tasks still running are always the wave's first ones (StatesWave).
  std::vector<size_t> order(tasks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tasks[a].size() > tasks[b].size(); });
  std::vector<std::vector<int32_t>> sorted(tasks.size());
  for (size_t i = 0; i < order.size(); ++i) sorted[i] = tasks[order[i]];
  std::vector<std::vector<std::vector<float>>> out(tasks.size(), std::vector<std::vector<float>>(layers.size()));
  capture_error_.clear();
  capture_active_ = true;
  pinned_.clear();
  std::vector<int> seqs;
  try {
    for (size_t t0 = 0; t0 < sorted.size();) {
      CheckAbort();
      // A wave: as many tasks as there are sequences to put them in (and tokens a decode holds); with
      // one pool, no more tokens than it has cells (cached prefixes are evicted as the decode needs).
      size_t want = std::min({sorted.size() - t0, size_t(n_seq_), size_t(n_batch_)});
      if (kv_unified_) {
        size_t n = 0, cells = 0;
        while (n < want && (n == 0 || cells + sorted[t0 + n].size() <= size_t(info_.context_size))) cells += sorted[t0 + n++].size();
        want = n;
      }
      seqs = BatchSeqs(want);
      if (seqs.empty()) throw Failure(Code::CONTEXT_OVERFLOW, "no sequence is free for hidden states");
      StatesWave(sorted, t0, seqs, last, &out);
      t0 += seqs.size();
      seqs.clear();
    }
  } catch (...) {
    capture_active_ = false;
    for (const int s : seqs) RemoveSeq(s);
    capture_rows_.clear();
    throw;
  }
  capture_active_ = false;
  capture_rows_.clear();
  std::vector<std::vector<std::vector<float>>> result(tasks.size());
  for (size_t i = 0; i < order.size(); ++i) result[order[i]] = std::move(out[i]);
  return result;
}

}  // namespace gavel
