// LogprobReducer: the verdict's log-probs read where the logits are, instead of llama.cpp copying the
// full-vocabulary logits of every output row to the host (152K floats a row on a Qwen3 vocabulary: 1.4
// GB for a 9-candidate verdict) and the host log-normalising them.
//
// How, with llama.cpp's public hooks only:
//  - Each sequence of a Score wave gets a backend sampler of ours (in a one-sampler chain). When every
//    output row of a ubatch belongs to a sequence with a backend sampler, llama.cpp does not copy the
//    raw logits out. Our sampler adds nothing to the graph: llama.cpp calls it once per output row
//    while building the graph, which tells us each row's sequence; before the graph runs it asks each
//    active sequence to set its inputs, which is where each row gets its target ids (in batch order:
//    a sequence's rows keep their order across the ubatches of one decode).
//  - The engine's eval callback hands us the logits tensor ("result_output") once it is computed; we
//    reduce every row to log p(t) = x[t] − logsumexp(x) for its k targets: on the device with
//    logprobs_device.h's kernel when the tensor lives there, else on the host with the same float64
//    sums as Score's host path (kernels::LogSumExp).
// One reducer per engine (with logprobsInGraph): a sequence's sampler is attached at its first Score
// and stays (attaching or detaching makes llama.cpp re-reserve its graph); a generation that borrows
// the sequence detaches it first, so its decodes get raw logits. Decodes of sequence 0 (hidden states,
// plain logits) never have one. The destructor detaches them all.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "llama.h"

struct ggml_tensor;
struct ggml_context;

namespace gavel {

class LogprobReducer {
 public:
  // threads: for the host reduction.
  LogprobReducer(llama_context* ctx, unsigned threads);
  ~LogprobReducer();
  LogprobReducer(const LogprobReducer&) = delete;
  LogprobReducer& operator=(const LogprobReducer&) = delete;

  // Gives seq a sampler (nothing when it has one); false when llama.cpp will not run it (the caller
  // then destroys the reducer, which detaches everything, and reads raw logits instead).
  bool Attach(int seq);
  // Takes seq's sampler away (nothing when it has none): its decodes get raw logits again.
  void Detach(int seq);

  // The targets of one decode's outputs: Begin(k) forgets the last decode's and sets the targets a
  // row (≥ 1); Push() appends one row (k ids) to seq's list in batch order and returns its index
  // there. Result(seq, i) is that row's k log-probs once the decode has run. (A decode llama.cpp
  // refuses for lack of KV cells is refused before any graph runs, so a retry finds every cursor at 0.)
  void Begin(int k);
  size_t Push(int seq, const int32_t* targets);
  const float* Result(int seq, size_t i) const;
  // Empty, or why a decode's rows could not be reduced (a bug, not an input error: the engine throws).
  const std::string& Error() const { return error_; }

  // llama_sampler_i's backend hooks, forwarded by the per-sequence samplers.
  void Apply(int seq, llama_sampler_data* data);
  void SetInput(int seq);
  void ResetBuild();
  // The engine's eval callback, with the computed logits tensor of the current ubatch.
  void OnLogits(const ggml_tensor* t);

 private:
  struct SeqRows {
    std::vector<int32_t> targets;  // k a pushed row
    std::vector<float> results;    // k a pushed row, filled as ubatches run
    size_t cursor = 0;             // rows handed to graphs so far
  };

  llama_context* ctx_;
  int k_ = 1;
  unsigned threads_;
  std::map<int, llama_sampler*> chains_;  // seq → attached chain (owned)
  std::map<int, SeqRows> seqs_;
  std::string error_;
  // The graph being built or last built: the logits matrix its rows view, and each sequence's rows.
  const ggml_tensor* matrix_ = nullptr;
  std::map<int, std::vector<int64_t>> rows_;
  // The current ubatch: each output row's targets (k each) and where its results go (seq, row index).
  std::vector<int32_t> targets_;
  std::vector<std::pair<int, size_t>> owner_;
  std::vector<float> out_;  // k × rows, the reduction's output before it is scattered
  std::vector<float> host_;  // the logits, when they must be copied to the host first
};

// out[i·k + j] = row(i)[targets[i·k + j]] − logsumexp(row(i)) for n rows of nv logits: the host
// reduction of Score's host path and of the reducer's host branch (kernels::LogSumExp, float64 sums),
// rows split over up to `threads` threads.
void HostLogProbs(const std::function<const float*(int64_t)>& row, int64_t n, int64_t nv, const int32_t* targets, size_t k,
                  float* out, unsigned threads);

}  // namespace gavel
