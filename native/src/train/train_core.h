// The contrastive training step of the glance head (paper §3.2, appendix C) as plain C++ (no N-API):
// loss and exact gradient of the multi-positive InfoNCE over span-mean max-sim scores, and AdamW.
//
//   q_i = normalize(W_q h_i), d_j = normalize(W_s h_j), m_i(s) = max_j <q_i, d_j>,
//   m̄(s) = mean_i m_i(s),  L_t = −log Σ_{S+} e^{τ m̄} / Σ_{S+ ∪ S−} e^{τ m̄},  L = mean_t L_t.
//
// Why by hand: ggml's only differentiable hard max (POOL_2D max) has no CUDA backward, and the
// max-sim gradient is sparse anyway (it reaches the argmax key only), which a dense autodiff graph
// would not exploit. Gradients stop at the backbone states h.
//
// Everything device-independent (batch layout, validation, AdamW's hyper-parameters, the loss's
// definition) lives here; LossAndGrad and AdamWUpdate are the CPU's compute entry points. Their CUDA
// twin (train_device.h, train_cuda.cu; a CUDA build only) keeps the weights on the device and runs
// the same step there; train_napi.cpp picks it with the constructor option device: "cuda".
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/kernels_core.h"

namespace gavel::train {

// One step's worth of tasks and skills, as it crosses the boundary (copied off the JS thread).
// Query rows of task t: qOff[t] … qOff[t+1] − 1 of q (qWidth floats each, the backbone's nEmbd).
// Rows of skill s: sOff[s] … sOff[s+1] − 1 of s (sWidth floats each: nEmbd states, or `dim`-wide
// unit keys when the keys are given, i.e. W_s frozen). Candidates of task t: cand[candOff[t] …
// candOff[t+1] − 1] (skill indices, distinct), pos[] the matching 0/1 positive flags.
struct Batch {
  std::vector<float> q;
  std::vector<int32_t> qOff;
  std::vector<float> s;
  std::vector<int32_t> sOff;
  std::vector<int32_t> candOff;
  std::vector<int32_t> cand;
  std::vector<uint8_t> pos;
  // The CUDA trainer stages q and s in its pinned host memory instead (then these point there and
  // the vectors stay empty); the CPU trainer reads the vectors.
  // A resident batch (the skills' rows held by the trainer, train_resident.h): entry e is library
  // skill refs[e], keeping its rows keep[keepOff[e] … keepOff[e+1] − 1] (sorted; none: every row);
  // sOff is derived from them and s is filled by the gather (host: GatherHost; CUDA: on the device).
  bool resident = false;
  std::vector<int32_t> refs, keepOff, keep;
  const float* qStaged = nullptr;
  const float* sStaged = nullptr;
  const float* Q() const { return qStaged != nullptr ? qStaged : q.data(); }
  const float* S() const { return sStaged != nullptr ? sStaged : s.data(); }
  int64_t nTasks() const { return static_cast<int64_t>(qOff.size()) - 1; }
  int64_t nSkills() const { return static_cast<int64_t>(sOff.size()) - 1; }
};

struct LossGrad {
  double loss = 0;
  std::vector<float> gWq;  // dim × nEmbd
  std::vector<float> gWs;  // dim × nEmbd, empty when the keys are given
  // Per (task, query row, candidate) pair, when PairOptions.keep: the max-sim score m and the argmax
  // (key index within the skill). Pair order: task t, then its rows i, then its candidates c, i.e.
  // pair = Σ_{t'<t} nq(t')·nc(t') + i·nc(t) + c.
  std::vector<float> m;
  std::vector<int32_t> argmax;
};

// Test hooks of the twins' comparison (bf16 search on the device picks keys the CPU may not pick at
// a near tie): `forceArgmax` (one key index per pair, in LossGrad's pair order) replaces the max-sim
// search, each pair then scoring its given key; `keep` returns m and argmax per pair.
struct PairOptions {
  const int32_t* forceArgmax = nullptr;
  int64_t forceCount = 0;
  bool keep = false;
};

// Pairs of the batch (Σ_t nq(t)·nc(t)) and each task's first pair (nTasks + 1 entries).
std::vector<int64_t> PairOffsets(const Batch& b);

// Loss (mean over tasks) and its gradient with respect to W_q and (unless keysGiven) W_s. The
// batch's shapes must already be valid (see train_napi.cpp); values are checked here: non-finite
// states or weights throw Failure(Code::INVALID_ARGUMENT). Max-sim ties go to the lowest key index (the
// glance kernel's rule), so the subgradient at a tie is that key's. A zero projection (W h = 0) has
// no direction: its unit vector is 0 and it passes no gradient. Deterministic for a given thread
// count and ISA (every reduction runs in a fixed order).
// forceArgmax entries out of a skill's range throw Failure(INVALID_ARGUMENT).
LossGrad LossAndGrad(const Batch& b, const float* Wq, const float* Ws, int64_t nEmbd, int64_t dim, double tau,
                     bool keysGiven, kernels::Isa isa, unsigned threads, const PairOptions& pairs = {});

struct AdamWParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
};

// One AdamW update at step t (1-based) with decoupled weight decay (Loshchilov & Hutter; PyTorch's
// AdamW): w ← w − lr·wd·w − lr · m̂ / (√v̂ + eps), m̂ and v̂ bias-corrected. fp32 state, math in double.
void AdamWUpdate(float* w, float* m, float* v, const float* g, int64_t n, int64_t t, const AdamWParams& p,
                 unsigned threads);

}  // namespace gavel::train
