#include "model/logprob_reducer.h"

#include <cstring>

#include "ggml-backend.h"
#include "ggml.h"

namespace gavel {
namespace {

// One sampler a sequence: llama.cpp calls the backend hooks on it, they forward to the reducer.
struct SamplerState {
  LogprobReducer* reducer;
  int seq;
};

SamplerState* StateOf(const llama_sampler* s) { return static_cast<SamplerState*>(s->ctx); }

const char* Name(const llama_sampler*) { return "gavel-logprobs"; }
// The CPU sampling hook is required by the interface but never reached: the engine reads the
// reduced rows and never asks llama.cpp to sample.
void ApplyOnHost(llama_sampler*, llama_token_data_array*) {}
void Free(llama_sampler* s) { delete StateOf(s); }
bool BackendInit(llama_sampler*, ggml_backend_buffer_type_t, uint32_t) { return true; }
void BackendApply(llama_sampler* s, ggml_context* ctx, ggml_cgraph*, llama_sampler_data* data) {
  StateOf(s)->reducer->Apply(StateOf(s)->seq, ctx, data);
}
void BackendSetInput(llama_sampler* s) { StateOf(s)->reducer->SetInput(StateOf(s)->seq); }
void BackendReset(llama_sampler* s) { StateOf(s)->reducer->ResetBuild(); }

llama_sampler_i kInterface = {
    /*.name =*/Name,
    /*.accept =*/nullptr,
    /*.apply =*/ApplyOnHost,
    /*.reset =*/nullptr,
    /*.clone =*/nullptr,
    /*.free =*/Free,
    /*.backend_init =*/BackendInit,
    /*.backend_accept =*/nullptr,
    /*.backend_apply =*/BackendApply,
    /*.backend_set_input =*/BackendSetInput,
    /*.backend_reset =*/BackendReset,
    /*.copy_state =*/nullptr,
};

}  // namespace

LogprobReducer::LogprobReducer(llama_context* ctx, int k) : ctx_(ctx), k_(k < 1 ? 1 : k) {}

LogprobReducer::~LogprobReducer() {
  // Detach first: the context must not keep a pointer to a freed chain.
  for (auto& [seq, chain] : chains_) {
    llama_set_sampler(ctx_, seq, nullptr);
    llama_sampler_free(chain);
  }
}

bool LogprobReducer::Attach(int seq) {
  if (chains_.count(seq) != 0) return true;
  llama_sampler* chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
  llama_sampler_chain_add(chain, llama_sampler_init(&kInterface, new SamplerState{this, seq}));
  if (!llama_set_sampler(ctx_, seq, chain)) {
    llama_sampler_free(chain);
    return false;
  }
  chains_[seq] = chain;
  return true;
}

void LogprobReducer::Begin() {
  targets_.clear();
  failed_ = false;
}

void LogprobReducer::Push(int seq, const int32_t* targets) {
  auto& t = targets_[seq].ids;
  t.insert(t.end(), targets, targets + k_);
}

void LogprobReducer::Rewind() {
  for (auto& [seq, t] : targets_) t.cursor = 0;
  failed_ = false;
}

ggml_tensor* LogprobReducer::Reduce(ggml_context* ctx, ggml_tensor* m, ggml_tensor* targets) const {
  const int64_t nv = m->ne[0];
  const int64_t n = m->ne[1];
  // m as n batches of nv one-element rows, so that get_rows picks one element per output row.
  ggml_tensor* m3 = ggml_reshape_3d(ctx, m, 1, nv, n);
  ggml_tensor* argmax = ggml_argmax(ctx, m);
  ggml_tensor* mx = ggml_reshape_2d(ctx, ggml_get_rows(ctx, m3, ggml_reshape_2d(ctx, argmax, 1, n)), 1, n);
  // logsumexp shifted by each row's max, so exp never overflows
  ggml_tensor* lse = ggml_add(ctx, ggml_log(ctx, ggml_sum_rows(ctx, ggml_exp(ctx, ggml_sub(ctx, m, mx)))), mx);
  ggml_tensor* picked = ggml_reshape_2d(ctx, ggml_get_rows(ctx, m3, targets), k_, n);
  ggml_tensor* out = ggml_sub(ctx, picked, lse);
  ggml_set_name(out, "gavel_logprobs");
  return out;
}

void LogprobReducer::Apply(int seq, ggml_context* ctx, llama_sampler_data* data) {
  ggml_tensor* x = data->logits;
  if (x == nullptr) return;
  ggml_tensor* src = x->view_src;
  if (src == nullptr || ggml_n_dims(src) != 2 || src->ne[0] != x->ne[0] || !ggml_is_contiguous(src) || src->type != GGML_TYPE_F32) {
    // llama.cpp's probe at attach time (a lone row, to count nodes): the same ops on that row alone,
    // recorded nowhere (the probe never runs).
    ggml_tensor* in = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, k_, 1);
    ggml_set_input(in);
    data->logits = Reduce(ctx, ggml_reshape_2d(ctx, x, x->ne[0], 1), in);
    return;
  }
  if (matrix_ != src) {
    // The first row of a new graph: the reduction over the whole matrix, once.
    matrix_ = src;
    rows_.clear();
    input_ = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, k_, src->ne[1]);
    ggml_set_name(input_, "gavel_logprob_targets");
    ggml_set_input(input_);
    result_ = Reduce(ctx, src, input_);
    staging_.assign(size_t(k_) * size_t(src->ne[1]), 0);
  }
  const int64_t r = int64_t(x->view_offs / src->nb[1]);
  rows_[seq].push_back(r);
  data->logits = ggml_view_1d(ctx, result_, k_, size_t(r) * result_->nb[1]);
}

void LogprobReducer::SetInput(int seq) {
  auto rows = rows_.find(seq);
  if (rows == rows_.end() || input_ == nullptr || input_->buffer == nullptr) return;
  SeqTargets& t = targets_[seq];
  const size_t k = size_t(k_);
  for (const int64_t r : rows->second) {
    int32_t* dst = staging_.data() + size_t(r) * k;
    if (size_t(r) * k + k > staging_.size() || (t.cursor + 1) * k > t.ids.size()) {
      // More rows than pushed: never return log-probs of the wrong tokens (the engine throws).
      failed_ = true;
      if (size_t(r) * k + k <= staging_.size()) std::memset(dst, 0, k * sizeof(int32_t));
      continue;
    }
    std::memcpy(dst, t.ids.data() + t.cursor * k, k * sizeof(int32_t));
    ++t.cursor;
  }
  ggml_backend_tensor_set(input_, staging_.data(), 0, staging_.size() * sizeof(int32_t));
}

void LogprobReducer::ResetBuild() {
  matrix_ = nullptr;
  input_ = nullptr;
  result_ = nullptr;
  rows_.clear();
}

}  // namespace gavel
