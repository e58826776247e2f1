// Internal helpers of Engine's two source files (engine.cpp, engine_cache.cpp): not part of its API.
#pragma once
#include <algorithm>
#include <cmath>
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

// log Σ exp over a logits row. Each term is exp of a float argument ≤ 0 (relative error ~1e-7) and
// the sum is kept in double, so the result is good to ~1e-7 nats, far inside what callers compare
// (1e-4), at a fraction of the cost of double exps: the scorer runs this over every vocabulary entry
// of every scored position.
inline double LogSumExp(const float* row, int n) {
  float mx = row[0];
  for (int i = 1; i < n; ++i) mx = std::max(mx, row[i]);
  double s = 0;
  for (int i = 0; i < n; ++i) s += double(std::exp(row[i] - mx));
  return double(mx) + std::log(s);
}

}  // namespace gavel::engine_detail
