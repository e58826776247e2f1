// The live accumulator's host half, as plain C++ (no N-API, no CUDA): src/route/live.ts's fold of a
// live context, kept natively so an append is one call.
//
// After n appended rows the scores are g(s) = A(s) / W with
//   A(s) = Σ_i w_i v_i(s),  W = Σ_i w_i,  w_i = 2^(−(n−1−i)/64),
// v_i(s) = m_i(s) when s is among row i's top-k columns, else 0. They are kept decayed per batch of
// b rows: A ← A·2^(−b/64) + Σ_j w_j v_j and W ← W·2^(−b/64) + Σ_j w_j, with the batch's own weights
// w_j = 2^(−(b−1−j)/64) rounded to float32 (decayWeights(b) in src/kernels/kernels.ts). A and W are
// float64 held with a common scale: what is stored is A/scale and W/scale, scale shrinks by
// 2^(−b/64) per batch, and below 2^−400 it is folded into A and W and reset to 1 (float64 keeps
// ~2^−1000), so a batch adds w_j·v_j/scale and nothing is multiplied per batch but the scale.
//
// Columns follow the library: each batch names its columns by handle; kept skills keep their A,
// new ones start at 0, removed ones are dropped (Remap).
//
// A lives here for the CPU path (Fold) and on the device for the CUDA path (live_device.h); the
// scale, W, the token count and the columns' handles are kept here either way (W depends on the
// batch sizes alone).
#pragma once
#include <cstdint>
#include <vector>

namespace gavel::live {

// Rows per glance: one batch's float32 decay weights stay far from underflow (2^−32 at most), as
// src/route/live.ts's batches.
constexpr int64_t kBatchRows = 2048;
// Below this common scale the accumulators are renormalised.
constexpr double kRenormBelow = 0x1p-400;

// The float32 decay weights of a batch of b rows: w_j = 2^(−(b−1−j)/64), j < b.
std::vector<float> DecayWeights(int64_t b);
// Σ_j w_j in float64, in row order (the fold's Σw of a batch).
double WeightSum(const std::vector<float>& w);

// What one batch does to the scale: the renormalisation factor to multiply the stored A and W by
// first (1: none), and the factor 1/scale its terms are multiplied by.
struct Step {
  double renorm = 1;
  double inv = 1;
};

class Accumulator {
 public:
  // Makes the columns `handles` (n of them, in this order). Kept skills keep their A, new ones start
  // at 0, removed ones are dropped. False (and nothing changes) when they are the current columns;
  // else true, with from[c] the former column of new column c (-1: new). A held here (Fold's) is
  // remapped too.
  bool Remap(const int32_t* handles, int64_t n, std::vector<int32_t>& from);
  // The scale's step for a batch of b rows with Σw = wb: W takes its share here, the caller applies
  // renorm and inv to A (Fold does, for A held here).
  Step Advance(int64_t b, double wb);
  // A batch on the host: A ← A·renorm + g·wb·inv, where g is the batch's glance (Σ_j w_j v_j / wb),
  // one float per current column. Advance first.
  void Fold(const Step& st, const float* g, double wb);
  // g = A / W per current column (0s before any row): A given (the device's), or the host's.
  std::vector<double> Scores(const std::vector<double>* deviceA = nullptr) const;
  void Reset();
  // Forgets A on the host (a device path keeps it there).
  void DropHostA() { acc_.clear(); hostA_ = false; }

  const std::vector<int32_t>& handles() const { return handles_; }
  int64_t tokens() const { return tokens_; }
  double wsum() const { return wsum_; }

 private:
  std::vector<int32_t> handles_;
  std::vector<double> acc_;  // A / scale per column (host path)
  bool hostA_ = true;
  double wsum_ = 0, scale_ = 1;
  int64_t tokens_ = 0;
};

}  // namespace gavel::live
