// LogprobReducer: the verdict's log-probs reduced where the logits are computed, through llama.cpp's
// backend sampling. For every output row it computes, in the model's own graph (on the GPU when the
// output layer is there), log p(t) = x[t] - logsumexp(x) for K target ids t, so K floats a row come
// back to the host instead of the vocabulary's logits (152K floats a row on a Qwen3 vocabulary: 1.4 GB
// for a 9-candidate verdict) and no log-normaliser runs on the CPU (issue 15).
//
// llama.cpp calls a backend sampler once per output row while it builds the graph, with a view of
// that row. The first call of a build adds the reduction over the whole logits matrix (the view's
// source) once; every row's output is a view of that result. The targets are an input tensor filled
// before each graph runs, from what the engine pushed for this decode, sequence by sequence in batch
// order (a sequence's rows keep their order across the ubatches of one decode).
//
// One reducer per Score wave: Attach() gives each of the wave's sequences a sampler chain holding one
// sampler of ours, and the destructor detaches them (generation and hidden-state decodes of the same
// context then see raw logits again).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "llama.h"

struct ggml_tensor;
struct ggml_context;

namespace gavel {

class LogprobReducer {
 public:
  // k: targets a row (≥ 1; the same for every row of the wave, so the graph's shape is fixed).
  LogprobReducer(llama_context* ctx, int k);
  ~LogprobReducer();
  LogprobReducer(const LogprobReducer&) = delete;
  LogprobReducer& operator=(const LogprobReducer&) = delete;

  // Gives seq a sampler; false when llama.cpp cannot run it on the output's backend (the caller then
  // detaches everything by destroying the reducer and reads raw logits instead).
  bool Attach(int seq);
  int k() const { return k_; }

  // The targets of one decode's outputs: Begin() forgets the last decode's, Push() appends one row
  // (k ids) to seq's list, in batch order. Rewind() puts every cursor back to the start (a decode
  // that llama.cpp refused before computing anything is retried with the same batch).
  void Begin();
  void Push(int seq, const int32_t* targets);
  void Rewind();
  // Whether a graph asked for more rows of a sequence than were pushed (a bug, not an input error:
  // the engine then throws INTERNAL instead of returning log-probs of the wrong tokens).
  bool Failed() const { return failed_; }

  // llama_sampler_i's backend hooks, forwarded by the per-sequence samplers.
  void Apply(int seq, ggml_context* ctx, llama_sampler_data* data);
  void SetInput(int seq);
  void ResetBuild();

 private:
  struct SeqTargets {
    std::vector<int32_t> ids;  // k a row
    size_t cursor = 0;         // rows consumed by graphs run so far
  };
  // log p of k targets per row of m [n_vocab, n]; targets [k, n] (I32): result [k, n].
  ggml_tensor* Reduce(ggml_context* ctx, ggml_tensor* m, ggml_tensor* targets) const;

  llama_context* ctx_;
  int k_;
  std::map<int, llama_sampler*> chains_;  // seq → attached chain (owned)
  std::map<int, SeqTargets> targets_;
  bool failed_ = false;
  // The graph being built or last built: its logits matrix, targets input and result, and each
  // sequence's rows in it (in the order llama.cpp asked for them).
  ggml_tensor* matrix_ = nullptr;
  ggml_tensor* input_ = nullptr;
  ggml_tensor* result_ = nullptr;
  std::map<int, std::vector<int64_t>> rows_;
  std::vector<int32_t> staging_;  // the input's host copy: k × rows of the matrix
};

}  // namespace gavel
