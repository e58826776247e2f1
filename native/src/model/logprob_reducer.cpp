#include "model/logprob_reducer.h"

#include <algorithm>
#include <cstring>

#include "common/parallel.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "kernels/kernels_core.h"
#include "model/logprobs_device.h"

namespace gavel {
namespace {

// One sampler a sequence: llama.cpp calls the backend hooks on it, they forward to the reducer.
struct SamplerState {
  LogprobReducer* reducer;
  int seq;
};

SamplerState* StateOf(const llama_sampler* s) { return static_cast<SamplerState*>(s->ctx); }

const char* Name(const llama_sampler*) { return "gavel-logprobs"; }
// The CPU sampling hook is required by the interface but never reached: the engine reads the reduced
// rows and never asks llama.cpp to sample.
void ApplyOnHost(llama_sampler*, llama_token_data_array*) {}
void Free(llama_sampler* s) { delete StateOf(s); }
bool BackendInit(llama_sampler*, ggml_backend_buffer_type_t, uint32_t) { return true; }
void BackendApply(llama_sampler* s, ggml_context*, ggml_cgraph*, llama_sampler_data* data) {
  StateOf(s)->reducer->Apply(StateOf(s)->seq, data);
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

LogprobReducer::LogprobReducer(llama_context* ctx, unsigned threads) : ctx_(ctx), threads_(threads < 1 ? 1 : threads) {}

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

void LogprobReducer::Detach(int seq) {
  auto it = chains_.find(seq);
  if (it == chains_.end()) return;
  llama_set_sampler(ctx_, seq, nullptr);
  llama_sampler_free(it->second);
  chains_.erase(it);
}

void LogprobReducer::Begin(int k) {
  k_ = k < 1 ? 1 : k;
  seqs_.clear();
  error_.clear();
}

size_t LogprobReducer::Push(int seq, const int32_t* targets) {
  SeqRows& s = seqs_[seq];
  s.targets.insert(s.targets.end(), targets, targets + k_);
  s.results.resize(s.targets.size(), 0.f);
  return s.targets.size() / size_t(k_) - 1;
}

const float* LogprobReducer::Result(int seq, size_t i) const {
  auto s = seqs_.find(seq);
  if (s == seqs_.end() || (i + 1) * size_t(k_) > s->second.results.size()) return nullptr;
  return s->second.results.data() + i * size_t(k_);
}

void LogprobReducer::Apply(int seq, llama_sampler_data* data) {
  ggml_tensor* x = data->logits;
  // No output of ours in the graph: what matters is that this sequence has a backend sampler (so the
  // raw logits stay on the device) and which rows are its.
  data->logits = nullptr;
  if (x == nullptr || x->view_src == nullptr) return;  // llama.cpp's probe at attach time: a lone row
  const ggml_tensor* src = x->view_src;
  if (matrix_ != src) {
    matrix_ = src;
    rows_.clear();
    owner_.assign(size_t(src->ne[1]), {-1, 0});
  }
  rows_[seq].push_back(int64_t(x->view_offs / src->nb[1]));
}

void LogprobReducer::SetInput(int seq) {
  auto rows = rows_.find(seq);
  if (rows == rows_.end()) return;
  SeqRows& s = seqs_[seq];
  const size_t k = size_t(k_);
  // k may differ from the last call's while llama.cpp reuses the graph (its shape does not depend on k)
  if (targets_.size() != k * owner_.size()) targets_.assign(k * owner_.size(), 0);
  for (const int64_t r : rows->second) {
    if (size_t(r) >= owner_.size() || (s.cursor + 1) * k > s.targets.size()) {
      error_ = "sequence " + std::to_string(seq) + " has more output rows than targets pushed";
      continue;
    }
    std::memcpy(targets_.data() + size_t(r) * k, s.targets.data() + s.cursor * k, k * sizeof(int32_t));
    owner_[size_t(r)] = {seq, s.cursor};
    ++s.cursor;
  }
}

void LogprobReducer::ResetBuild() {
  matrix_ = nullptr;
  rows_.clear();
}

void LogprobReducer::OnLogits(const ggml_tensor* t) {
  const int64_t nv = t->ne[0];
  const int64_t n = t->ne[1];
  const size_t k = size_t(k_);
  if (n == 0) return;
  if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t) || t->ne[2] != 1 || t->ne[3] != 1 || size_t(n) > owner_.size()) {
    error_ = "the logits tensor has an unexpected type or shape";
    return;
  }
  for (int64_t r = 0; r < n; ++r) {
    if (owner_[size_t(r)].first < 0) {
      error_ = "output row " + std::to_string(r) + " of a ubatch has no sequence";
      return;
    }
    for (size_t j = 0; j < k; ++j) {
      const int32_t id = targets_[size_t(r) * k + j];
      if (id < 0 || id >= nv) {
        error_ = "a target id is outside the vocabulary";
        return;
      }
    }
  }
  out_.resize(k * size_t(n));
  const bool on_host = t->buffer == nullptr || ggml_backend_buffer_is_host(t->buffer);
  if (on_host || !logprobs_device::RowLogProbs(static_cast<const float*>(t->data), nv, n, targets_.data(), k_, out_.data())) {
    const float* logits = static_cast<const float*>(t->data);
    if (!on_host) {
      host_.resize(size_t(nv) * size_t(n));
      ggml_backend_tensor_get(t, host_.data(), 0, host_.size() * sizeof(float));
      logits = host_.data();
    }
    HostLogProbs([&](int64_t r) { return logits + r * nv; }, n, nv, targets_.data(), k, out_.data(), threads_);
  }
  for (int64_t r = 0; r < n; ++r) {
    const auto [seq, i] = owner_[size_t(r)];
    std::memcpy(seqs_[seq].results.data() + i * k, out_.data() + size_t(r) * k, k * sizeof(float));
  }
}

void HostLogProbs(const std::function<const float*(int64_t)>& row, int64_t n, int64_t nv, const int32_t* targets, size_t k,
                  float* out, unsigned threads) {
  const kernels::Isa isa = kernels::CurrentIsa();
  // a thread per 2^18 logits at least: short rows of a short batch are not worth a thread
  const unsigned workers = unsigned(std::max<int64_t>(1, std::min<int64_t>(threads, (n * nv) / (1 << 18) + 1)));
  Parallel(workers, [&](unsigned w) {
    for (int64_t r = n * w / workers; r < n * (w + 1) / workers; ++r) {
      const float* x = row(r);
      const double lse = kernels::LogSumExp(x, nv, isa);
      for (size_t j = 0; j < k; ++j) out[size_t(r) * k + j] = float(double(x[targets[size_t(r) * k + j]]) - lse);
    }
  });
}

}  // namespace gavel
