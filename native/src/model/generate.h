// Generation: streaming decode over one engine sequence of its own, with llama.cpp's sampler chain,
// capturing the residual stream after block ℓ* ("l_out-ℓ*", the tensor hiddenStates reads) for every
// token it decodes (prompt prefill and each generated token) from the same forward passes: no
// second pass. With final_state, also the last block's output ("l_out-<n_layer-1>") of each append's
// last token: the one row llama.cpp computes past the last block anyway (the row whose logits are
// sampled), so no extra output row is requested and the LM head still runs for that token only.
// The sequence is taken from the engine's pool of cached-prefix sequences for the generation's
// lifetime, so hiddenStates, score and logits calls between steps leave it intact.
// No N-API here: generate_napi.cpp wraps it. Every method takes the engine's mutex itself.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "llama.h"
#include "model/engine.h"

namespace gavel {

// Checked in TS first (src/model/generate-options.ts); re-checked here because llama.cpp aborts on
// some bad values.
struct SamplerParams {
  float temperature;     // 0: greedy (argmax after the penalties)
  int top_k;             // 0: off
  float top_p;           // 1: off
  float min_p;           // 0: off
  uint32_t seed;
  int penalty_last_n;    // 0: no penalty
  float repeat_penalty;  // 1: off
  float frequency_penalty;
  float presence_penalty;
};

struct GenerationStep {
  std::vector<float> states;       // decoded tokens × nEmbd, the ℓ* rows
  std::vector<float> final_state;  // nEmbd: the last block's output at the last decoded token (empty unless asked)
  int32_t next = -1;               // the token sampled after the last decoded one
};

class Generation {
 public:
  Generation(std::shared_ptr<Engine> engine, int layer, const SamplerParams& params, bool final_state = false);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Decodes `tokens` after everything decoded so far (the first call is the prompt), captures their
  // ℓ* rows (and, with final_state, the last block's row of the last token) and samples the next
  // token from the last one's logits. The tokens enter the repeat penalty's window.
  GenerationStep Append(const std::vector<int32_t>& tokens);
  // Frees the sequence's cells and returns it to the engine's pool. Idempotent.
  void Close();
  bool IsEog(int32_t token) const;
  int Position() const { return n_past_; }

 private:
  void Reserve();
  std::shared_ptr<Engine> engine_;
  int layer_;
  bool final_state_;
  llama_sampler* sampler_ = nullptr;
  int seq_ = -1;
  int n_past_ = 0;
  int32_t pending_ = -1;  // the last sampled token (already accepted by the chain)
  bool closed_ = false;
};

}  // namespace gavel
