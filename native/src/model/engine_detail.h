// Internal helpers of Engine's two source files (engine.cpp, engine_cache.cpp): not part of its API.
#pragma once
#include <cstdint>

#include "llama.h"

namespace gavel::engine_detail {

// RAII for llama_batch.
struct Batch {
  llama_batch b;
  explicit Batch(int n) : b(llama_batch_init(n, 0, 1)) {}
  ~Batch() { llama_batch_free(b); }
  void Add(int32_t token, int32_t pos, int32_t seq, bool output) {
    const int i = b.n_tokens++;
    b.token[i] = token;
    b.pos[i] = pos;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = seq;
    b.logits[i] = output ? 1 : 0;
  }
};

}  // namespace gavel::engine_detail
