#include "model/generate.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/failure.h"
#include "model/engine_detail.h"
#include "model/logprob_reducer.h"

namespace gavel {

using engine_detail::Batch;

Generation::Generation(std::shared_ptr<Engine> engine, int layer, const SamplerParams& p, bool final_state)
    : engine_(std::move(engine)), layer_(layer), final_state_(final_state) {
  const ModelInfo& info = engine_->Info();
  if (layer < 0 || layer >= info.n_layer) {
    throw Failure(Code::LAYER_OUT_OF_RANGE, "layer " + std::to_string(layer) + " is out of range: the model has " +
                                            std::to_string(info.n_layer) + " layers");
  }
  // llama.cpp asserts on some of these: the same ranges as src/model/generate-options.ts.
  if (!(p.temperature >= 0 && std::isfinite(p.temperature)) || p.top_k < 0 || !(p.top_p > 0 && p.top_p <= 1) ||
      !(p.min_p >= 0 && p.min_p <= 1) || p.penalty_last_n < 0 || !(p.repeat_penalty > 0 && std::isfinite(p.repeat_penalty)) ||
      !std::isfinite(p.frequency_penalty) || !std::isfinite(p.presence_penalty)) {
    throw Failure(Code::INVALID_ARGUMENT, "sampler parameters out of range");
  }
  llama_sampler_chain_params cp = llama_sampler_chain_default_params();
  cp.no_perf = true;
  sampler_ = llama_sampler_chain_init(cp);
  if (p.penalty_last_n > 0) {
    llama_sampler_chain_add(sampler_, llama_sampler_init_penalties(info.n_vocab, p.penalty_last_n, p.repeat_penalty,
                                                                   p.frequency_penalty, p.presence_penalty));
  }
  if (p.temperature == 0) {
    llama_sampler_chain_add(sampler_, llama_sampler_init_greedy());
  } else {
    if (p.top_k > 0) llama_sampler_chain_add(sampler_, llama_sampler_init_top_k(p.top_k));
    if (p.top_p < 1) llama_sampler_chain_add(sampler_, llama_sampler_init_top_p(p.top_p, 1));
    if (p.min_p > 0) llama_sampler_chain_add(sampler_, llama_sampler_init_min_p(p.min_p, 1));
    llama_sampler_chain_add(sampler_, llama_sampler_init_temp(p.temperature));
    llama_sampler_chain_add(sampler_, llama_sampler_init_dist(p.seed));
  }
}

Generation::~Generation() {
  try {
    Close();
  } catch (...) {
  }
  if (sampler_ != nullptr) llama_sampler_free(sampler_);
}

bool Generation::IsEog(int32_t token) const {
  engine_->CheckTokens({token}, "token");
  return llama_vocab_is_eog(engine_->vocab_, token);
}

// The sequence: one of the engine's cached-prefix sequences, held until Close (the LRU evicts a
// cached prefix when none is free). Caller holds the mutex.
void Generation::Reserve() {
  Engine& e = *engine_;
  if (e.free_seqs_.empty() && !e.EvictOne({})) {
    throw Failure(Code::CONTEXT_OVERFLOW, "no sequence is free for a generation; load the model with more sequences");
  }
  seq_ = e.free_seqs_.back();
  e.free_seqs_.pop_back();
  e.RemoveSeq(seq_);
  // A Score may have left a log-prob sampler on it: this sequence's decodes need raw logits.
  if (e.logprobs_) e.logprobs_->Detach(seq_);
}

void Generation::Close() {
  if (closed_) return;
  closed_ = true;
  if (seq_ < 0 || !engine_->Loaded()) return;
  std::lock_guard<std::mutex> lock(engine_->mutex);
  engine_->RemoveSeq(seq_);
  engine_->free_seqs_.push_back(seq_);
  seq_ = -1;
}

GenerationStep Generation::Append(const std::vector<int32_t>& tokens) {
  std::lock_guard<std::mutex> lock(engine_->mutex);
  Engine& e = *engine_;
  if (closed_) throw Failure(Code::DISPOSED, "this generation was closed");
  if (!e.Loaded()) throw Failure(Code::DISPOSED, "the model was disposed");
  if (tokens.empty()) throw Failure(Code::INVALID_ARGUMENT, "append needs at least one token");
  e.CheckTokens(tokens, "tokens");
  if (size_t(n_past_) + tokens.size() > size_t(e.info_.context_size)) {
    throw Failure(Code::CONTEXT_OVERFLOW, std::to_string(n_past_ + tokens.size()) + " tokens exceed the context size " +
                                          std::to_string(e.info_.context_size));
  }
  e.abort_flag = false;
  if (seq_ < 0) Reserve();
  const int n_embd = e.info_.n_embd;
  const int last_layer = e.info_.n_layer - 1;
  // Past the last block llama.cpp keeps only the rows it outputs: ask for every row there.
  const bool all_outputs = layer_ == last_layer;
  // The final state: the last block's output, captured beside ℓ* from the same graph. Only the rows
  // llama.cpp outputs reach it (the last token's; every row when ℓ* is the last layer itself).
  const bool final_separate = final_state_ && !all_outputs;
  e.capture_index_.clear();
  e.capture_index_.emplace("l_out-" + std::to_string(layer_), 0);
  if (final_separate) e.capture_index_.emplace("l_out-" + std::to_string(last_layer), 1);
  e.capture_rows_.assign(final_separate ? 2 : 1, {});
  e.capture_error_.clear();
  e.exit_after_ = -1;  // the logits are needed for sampling
  e.pinned_.clear();
  GenerationStep out;
  const size_t n = tokens.size();
  int last_index = -1;
  e.capture_active_ = true;
  try {
    Batch batch(e.n_batch_);
    for (size_t start = 0; start < n; start += size_t(e.n_batch_)) {
      const size_t cnt = std::min(size_t(e.n_batch_), n - start);
      batch.b.n_tokens = 0;
      for (size_t i = 0; i < cnt; ++i) batch.Add(tokens[start + i], int32_t(n_past_ + start + i), seq_, all_outputs || start + i == n - 1);
      e.DecodeWithEviction(batch.b, e.pinned_);
      last_index = int(cnt) - 1;
    }
  } catch (...) {
    e.capture_active_ = false;
    // A partial append leaves the sequence in an unknown state: drop what this call decoded.
    llama_memory_seq_rm(llama_get_memory(e.ctx_), seq_, n_past_, -1);
    throw;
  }
  e.capture_active_ = false;
  n_past_ += int(n);
  if (!e.capture_error_.empty()) throw Failure(Code::HIDDEN_STATES_UNAVAILABLE, e.capture_error_);
  if (e.capture_rows_[0].size() != n * size_t(n_embd)) {
    throw Failure(Code::HIDDEN_STATES_UNAVAILABLE, "the graph did not expose l_out-" + std::to_string(layer_) + " for every token");
  }
  if (final_separate) {
    // One row (the output token's) when the architecture drops the other rows before its last block,
    // every row when it does not: the last one is the last token's either way.
    const size_t rows = e.capture_rows_[1].size() / size_t(n_embd);
    if (e.capture_rows_[1].size() % size_t(n_embd) != 0 || (rows != 1 && rows != n)) {
      throw Failure(Code::HIDDEN_STATES_UNAVAILABLE, "the graph did not expose l_out-" + std::to_string(last_layer) +
                                                     " for the last token (got " + std::to_string(rows) + " rows)");
    }
    out.final_state.assign(e.capture_rows_[1].end() - n_embd, e.capture_rows_[1].end());
  }
  out.states = std::move(e.capture_rows_[0]);
  if (final_state_ && !final_separate) out.final_state.assign(out.states.end() - n_embd, out.states.end());
  e.capture_rows_.clear();
  // llama_sampler_sample accepts the token it draws: when that token is what is appended next, the
  // chain already holds it and accepting it again would count it twice in the penalties.
  const size_t from = (pending_ >= 0 && tokens[0] == pending_) ? 1 : 0;
  for (size_t i = from; i < n; ++i) llama_sampler_accept(sampler_, tokens[i]);
  // The logits of the batch's last token (index last_index of the last ubatch).
  out.next = llama_sampler_sample(sampler_, e.ctx_, last_index);
  pending_ = out.next;
  return out;
}

}  // namespace gavel
