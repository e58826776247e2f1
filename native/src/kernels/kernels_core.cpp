// Dispatch, threading and the top-k vote around the ISA-specific inner loops of simd_body.inc.
#include "common/cores.h"
#include "kernels/kernels_core.h"

#include "common/parallel.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <limits>
#include <thread>
#include <vector>

#include "common/failure.h"
#include "common/half.h"
#include "common/x86_features.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>  // F16C's vcvtph2ps, used by the AVX2 / AVX-512 copies only
#endif
// On arm64 the generic copy is the NEON one: its vector-extension arithmetic (4 floats) compiles to
// NEON, and the f16 conversions use NEON's fcvtn/fcvtl (ARMv8-A baseline) instead of the scalar rule.
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_neon.h>
#define GAVEL_NEON_HALF 1
#else
#define GAVEL_NEON_HALF 0
#endif

// ---- the inner loops, once per instruction set -------------------------------------------------
// Each copy lives in its own namespace and is compiled for its own target, so a baseline x86-64
// build still runs AVX-512 code on CPUs that have it (chosen at run time by SelectIsa).

#define GAVEL_ISA_LEVEL 0
#include "kernels/simd_variant.inc"
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GAVEL_HAVE_X86_DISPATCH 1
#define GAVEL_ISA_LEVEL 1
#include "kernels/simd_variant.inc"
#define GAVEL_ISA_LEVEL 2
#include "kernels/simd_variant.inc"
#endif

namespace gavel::kernels {

Isa SelectIsa(settings::IsaCap cap) {
  Isa best = Isa::Generic;
#ifdef GAVEL_HAVE_X86_DISPATCH
  GAVEL_CPU_INIT();
  if (GAVEL_CPU_SUPPORTS("avx2") && GAVEL_CPU_SUPPORTS("fma") && GAVEL_CPU_SUPPORTS("f16c"))
    best = Isa::Avx2;
  if (best == Isa::Avx2 && GAVEL_CPU_SUPPORTS("avx512f") && GAVEL_CPU_SUPPORTS("avx512vl") &&
      GAVEL_CPU_SUPPORTS("avx512bw") && GAVEL_CPU_SUPPORTS("avx512dq"))
    best = Isa::Avx512;
#endif
  switch (cap) {
    case settings::IsaCap::kGeneric: return Isa::Generic;
    case settings::IsaCap::kAvx2: return std::min(best, Isa::Avx2);
    default: return best;
  }
}

Isa CurrentIsa() { return SelectIsa(settings::IsaCap(settings::Current().isaCap.load(std::memory_order_relaxed))); }

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    default: return "generic";
  }
}

std::vector<int32_t> CoverFarthestFirst(const float* keys, int64_t n, int64_t dim, double eps, Isa isa) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::Cover(keys, n, dim, eps);
    case Isa::Avx2: return isa_avx2::Cover(keys, n, dim, eps);
#endif
    default: return isa_generic::Cover(keys, n, dim, eps);
  }
}

double LogSumExp(const float* row, int64_t n, Isa isa) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::LogSumExp(row, n);
    case Isa::Avx2: return isa_avx2::LogSumExp(row, n);
#endif
    default: return isa_generic::LogSumExp(row, n);
  }
}

void RoundToHalf(float* x, uint16_t* half, int64_t n, Isa isa) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::RoundToHalf(x, half, n);
    case Isa::Avx2: return isa_avx2::RoundToHalf(x, half, n);
#endif
    default: return isa_generic::RoundToHalf(x, half, n);
  }
}

void HalfToFloats(const uint16_t* half, float* x, int64_t n, Isa isa) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::HalfToFloats(half, x, n);
    case Isa::Avx2: return isa_avx2::HalfToFloats(half, x, n);
#endif
    default: return isa_generic::HalfToFloats(half, x, n);
  }
}

int64_t FloatsToHalf(const float* x, uint16_t* half, int64_t n, Isa isa) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::FloatsToHalf(x, half, n);
    case Isa::Avx2: return isa_avx2::FloatsToHalf(x, half, n);
#endif
    default: return isa_generic::FloatsToHalf(x, half, n);
  }
}

namespace {

using gavel::Parallel;

// The GEMM micro-kernel of simd_body.inc, per ISA: the column-panel width, the packing of B into
// panels [p0, p1), and C[r0..r1) × [c0..c1) = A · Bpᵀ over packed panels.
int64_t PanelWidth(Isa isa) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::PanelWidth();
    case Isa::Avx2: return isa_avx2::PanelWidth();
#endif
    default: return isa_generic::PanelWidth();
  }
}

void PackWRange(Isa isa, const float* W, int64_t inDim, int64_t outDim, int64_t panels, int64_t p0, int64_t p1,
                float* Wp) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::PackW(W, inDim, outDim, panels, p0, p1, Wp);
    case Isa::Avx2: return isa_avx2::PackW(W, inDim, outDim, panels, p0, p1, Wp);
#endif
    default: return isa_generic::PackW(W, inDim, outDim, panels, p0, p1, Wp);
  }
}

void ProjectRange(Isa isa, const float* H, int64_t inDim, const float* Wp, int64_t outDim, int64_t panels, int64_t r0,
                  int64_t r1, int64_t c0, int64_t c1, float* C) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::Project(H, inDim, Wp, outDim, panels, r0, r1, c0, c1, C);
    case Isa::Avx2: return isa_avx2::Project(H, inDim, Wp, outDim, panels, r0, r1, c0, c1, C);
#endif
    default: return isa_generic::Project(H, inDim, Wp, outDim, panels, r0, r1, c0, c1, C);
  }
}


bool MaxSimRange(Isa isa, const float* q, int64_t nq, const SkillKeys& keys, int64_t s0, int64_t s1, int64_t dim,
                 float* m, int32_t* argmax, const std::atomic<bool>* stop) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512:
      return isa_avx512::MaxSim(q, nq, keys.base, keys.half, keys.offsets, s0, s1, keys.nSkills, dim, m, argmax, stop);
    case Isa::Avx2:
      return isa_avx2::MaxSim(q, nq, keys.base, keys.half, keys.offsets, s0, s1, keys.nSkills, dim, m, argmax, stop);
#endif
    default:
      return isa_generic::MaxSim(q, nq, keys.base, keys.half, keys.offsets, s0, s1, keys.nSkills, dim, m, argmax, stop);
  }
}

// True when skill a ranks above skill b under row m: higher score, or equal score and lower index.
inline bool Above(const float* m, int32_t a, int32_t b) { return m[a] > m[b] || (m[a] == m[b] && a < b); }

// T_i: the k skills ranking highest in row m (order unspecified), written to out[0..k).
void TopK(const float* m, int64_t nSkills, int64_t k, int32_t* out, std::vector<int32_t>& scratch) {
  if (k >= nSkills) {
    for (int64_t s = 0; s < nSkills; ++s) out[s] = static_cast<int32_t>(s);
    return;
  }
  if (k <= 32) {
    // Sorted buffer, best first. Skills arrive in increasing index, so a newcomer that only ties
    // the current k-th loses (lower index wins): one comparison rejects most skills.
    int64_t size = 0;
    for (int64_t s = 0; s < nSkills; ++s) {
      const float v = m[s];
      if (size == k && !(v > m[out[k - 1]])) continue;
      int64_t pos = size < k ? size++ : k - 1;
      while (pos > 0 && v > m[out[pos - 1]]) {
        out[pos] = out[pos - 1];
        --pos;
      }
      out[pos] = static_cast<int32_t>(s);
    }
    return;
  }
  scratch.resize(static_cast<size_t>(nSkills));
  for (int64_t s = 0; s < nSkills; ++s) scratch[s] = static_cast<int32_t>(s);
  // Above() is a strict total order (scores are finite by now), as nth_element requires.
  std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(),
                   [m](int32_t a, int32_t b) { return Above(m, a, b); });
  std::copy(scratch.begin(), scratch.begin() + k, out);
}

bool Stopped(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(std::memory_order_relaxed); }

[[noreturn]] void Aborted() { throw Failure(Code::ABORTED, "glance aborted"); }

}  // namespace

GlanceResult Glance(const float* queries, int64_t nq, const SkillKeys& keys, int64_t dim, const float* weights,
                    int64_t k, Isa isa, unsigned threads, const std::atomic<bool>* stop) {
  GlanceResult r;
  const int64_t nSkills = keys.nSkills;
  const int64_t* offsets = keys.offsets;
  const size_t cells = static_cast<size_t>(nq * nSkills);
  r.g.assign(static_cast<size_t>(nSkills), 0.f);
  r.m.assign(cells, -std::numeric_limits<float>::infinity());
  r.argmax.assign(cells, -1);
  if (nSkills == 0 || nq == 0) return r;
  if (threads == 0) threads = CoresAvailable();

  // Max-sim, split by skill range with about the same number of keys per thread. Below ~4 MFLOP a
  // thread costs more to start than it saves.
  const int64_t rows = offsets[nSkills];
  const double flops = 2.0 * double(nq) * double(rows) * double(dim);
  unsigned nt = flops < 4e6 ? 1u : static_cast<unsigned>(std::min<int64_t>(threads, nSkills));
  std::vector<int64_t> cut(nt + 1, 0);
  cut[nt] = nSkills;
  for (unsigned t = 1; t < nt; ++t) {
    const int64_t target = rows * t / nt;
    cut[t] = std::lower_bound(offsets, offsets + nSkills + 1, target) - offsets;
    cut[t] = std::max(cut[t], cut[t - 1]);
  }
  std::vector<char> finite(nt, 1);
  if (rows > 0)
    Parallel(nt, [&](unsigned t) {
      finite[t] = MaxSimRange(isa, queries, nq, keys, cut[t], cut[t + 1], dim, r.m.data(), r.argmax.data(), stop);
    });
  if (Stopped(stop)) Aborted();
  for (char f : finite)
    if (!f) throw Failure(Code::INVALID_ARGUMENT, "glance: a score came out non-finite; the bank holds NaN, Inf or overflowing values");
  Vote(r, nq, offsets, nSkills, weights, k, nt, stop);
  return r;
}

bool MaxSimSkills(const float* queries, int64_t nq, const SkillKeys& keys, int64_t s0, int64_t s1, int64_t dim,
                  float* m, int32_t* argmax, Isa isa) {
  if (nq == 0 || keys.offsets[s1] == keys.offsets[s0]) return true;
  return MaxSimRange(isa, queries, nq, keys, s0, s1, dim, m, argmax, nullptr);
}

void GatherSkills(const float* m, const int32_t* argmax, int64_t nq, int64_t nAll, const int64_t* pick, int64_t nPick,
                  GlanceResult& out) {
  out.m.resize(static_cast<size_t>(nq * nPick));
  out.argmax.resize(out.m.size());
  for (int64_t i = 0; i < nq; ++i) {
    const float* mi = m + i * nAll;
    const int32_t* ai = argmax + i * nAll;
    float* om = out.m.data() + i * nPick;
    int32_t* oa = out.argmax.data() + i * nPick;
    for (int64_t j = 0; j < nPick; ++j) {
      om[j] = mi[pick[j]];
      oa[j] = ai[pick[j]];
    }
  }
}

std::vector<int64_t> TopColumns(const std::vector<float>& g, int64_t n) {
  n = std::min<int64_t>(n, static_cast<int64_t>(g.size()));
  const auto better = [&g](int64_t a, int64_t b) { return g[a] > g[b] || (g[a] == g[b] && a < b); };
  if (n <= 32) {  // the usual detail (a few columns): one pass, the best n kept sorted, no N-sized index
    std::vector<int64_t> best;
    best.reserve(static_cast<size_t>(n) + 1);
    for (int64_t s = 0; s < static_cast<int64_t>(g.size()) && n > 0; ++s) {
      if (static_cast<int64_t>(best.size()) == n && !better(s, best.back())) continue;
      best.insert(std::upper_bound(best.begin(), best.end(), s, better), s);
      if (static_cast<int64_t>(best.size()) > n) best.pop_back();
    }
    return best;
  }
  std::vector<int64_t> cols(g.size());
  for (size_t s = 0; s < cols.size(); ++s) cols[s] = static_cast<int64_t>(s);
  std::partial_sort(cols.begin(), cols.begin() + n, cols.end(), better);
  cols.resize(static_cast<size_t>(n));
  return cols;
}

void Vote(GlanceResult& r, int64_t nq, const int64_t* offsets, int64_t nSkills, const float* weights, int64_t k,
          unsigned threads, const std::atomic<bool>* stop) {
  if (threads == 0) threads = CoresAvailable();
  const unsigned nt = threads;
  r.g.assign(static_cast<size_t>(nSkills), 0.f);
  if (nSkills == 0 || nq == 0) return;

  // Skills without keys: m = -1, the least inner product two unit vectors can have.
  for (int64_t s = 0; s < nSkills; ++s)
    if (offsets[s + 1] == offsets[s])
      for (int64_t i = 0; i < nq; ++i) r.m[i * nSkills + s] = -1.f;

  // Top-k per query token, rows split over threads.
  const int64_t kk = std::min(k, nSkills);
  std::vector<int32_t> top(static_cast<size_t>(nq * kk));
  const unsigned rt = static_cast<unsigned>(std::min<int64_t>(nt, nq));
  Parallel(rt, [&](unsigned t) {
    std::vector<int32_t> scratch;
    for (int64_t i = nq * t / rt; i < nq * (t + 1) / rt; ++i) {
      if (Stopped(stop)) return;
      TopK(r.m.data() + i * nSkills, nSkills, kk, top.data() + i * kk, scratch);
    }
  });
  if (Stopped(stop)) Aborted();

  // The vote, in double and in token order so the result does not depend on the thread count.
  double W = 0.0;
  for (int64_t i = 0; i < nq; ++i) W += weights[i];
  std::vector<double> acc(static_cast<size_t>(nSkills), 0.0);
  for (int64_t i = 0; i < nq; ++i) {
    const double w = weights[i];
    if (w == 0.0) continue;
    for (int64_t j = 0; j < kk; ++j) {
      const int32_t s = top[i * kk + j];
      acc[s] += w * double(r.m[i * nSkills + s]);
    }
  }
  for (int64_t s = 0; s < nSkills; ++s) r.g[s] = static_cast<float>(acc[s] / W);
}

GlanceResult Glance(const float* queries, int64_t nq, const float* bank, const int32_t* offsets, int64_t nSkills,
                    int64_t dim, const float* weights, int64_t k, Isa isa, unsigned threads,
                    const std::atomic<bool>* stop) {
  std::vector<const float*> base(static_cast<size_t>(nSkills));
  std::vector<int64_t> off(static_cast<size_t>(nSkills) + 1);
  for (int64_t s = 0; s <= nSkills; ++s) off[s] = offsets[s];
  for (int64_t s = 0; s < nSkills; ++s) base[s] = bank + off[s] * dim;
  return Glance(queries, nq, SkillKeys{base.data(), off.data(), nSkills}, dim, weights, k, isa, threads, stop);
}

void MatMulABt(const float* A, int64_t n, int64_t k, const float* B, int64_t m, float* C, Isa isa, unsigned threads) {
  std::fill(C, C + n * m, 0.f);
  if (n == 0 || m == 0 || k == 0) return;
  if (threads == 0) threads = CoresAvailable();
  const unsigned nt = 2.0 * double(n) * double(m) * double(k) < 4e6 ? 1u : threads;  // below ~4 MFLOP one thread
  // B packed once into column panels (shared, read-only), in parallel.
  const int64_t NR = PanelWidth(isa);
  const int64_t panels = (m + NR - 1) / NR;
  std::vector<float> Bp(static_cast<size_t>(panels * NR * k));
  Parallel(nt, [&](unsigned t) { PackWRange(isa, B, k, m, panels, panels * t / nt, panels * (t + 1) / nt, Bp.data()); });
  // Threads take row ranges when there are enough rows for every thread to keep its micro-tiles
  // full; otherwise (a handful of rows, e.g. one query) they split the column panels instead.
  const bool byRows = n >= int64_t(nt) * 48;
  Parallel(nt, [&](unsigned t) {
    if (byRows) {
      ProjectRange(isa, A, k, Bp.data(), m, panels, n * t / nt, n * (t + 1) / nt, 0, m, C);
    } else {
      const int64_t c0 = std::min(m, panels * t / nt * NR), c1 = std::min(m, panels * (t + 1) / nt * NR);
      if (c0 < c1) ProjectRange(isa, A, k, Bp.data(), m, panels, 0, n, c0, c1, C);
    }
  });
}

void PackQueryPanels(const float* Q, int64_t nq, int64_t dim, Isa isa, std::vector<float>& Qp) {
  int64_t mr;
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: mr = isa_avx512::PanelRows(); break;
    case Isa::Avx2: mr = isa_avx2::PanelRows(); break;
#endif
    default: mr = isa_generic::PanelRows();
  }
  Qp.assign(static_cast<size_t>((nq + mr - 1) / mr * mr * dim), 0.f);
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::PackPanels(Q, nq, dim, Qp.data());
    case Isa::Avx2: return isa_avx2::PackPanels(Q, nq, dim, Qp.data());
#endif
    default: return isa_generic::PackPanels(Q, nq, dim, Qp.data());
  }
}

void ScorePanels(const float* Qp, int64_t nq, int64_t dim, const float* B, int64_t nb, float* S, int64_t ldS, Isa isa,
                 std::vector<float>& scratch) {
  scratch.resize(static_cast<size_t>(PanelWidth(isa) * dim));  // one packed panel of B: NR · dim
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::ScoreRows(Qp, nq, dim, B, nb, S, ldS, scratch.data());
    case Isa::Avx2: return isa_avx2::ScoreRows(Qp, nq, dim, B, nb, S, ldS, scratch.data());
#endif
    default: return isa_generic::ScoreRows(Qp, nq, dim, B, nb, S, ldS, scratch.data());
  }
}

std::vector<float> ProjectNormalize(const float* H, int64_t n, int64_t inDim, const float* W, int64_t outDim, Isa isa,
                                    unsigned threads) {
  std::vector<float> Y(static_cast<size_t>(n * outDim), 0.f);
  if (n == 0) return Y;
  if (threads == 0) threads = CoresAvailable();
  const double flops = 2.0 * double(n) * double(inDim) * double(outDim);
  const unsigned nt = flops < 4e6 ? 1u : threads;

  // Operands checked finite off the JS thread, in parallel (they may be hundreds of MiB).
  std::vector<char> bad(nt, 0);
  Parallel(nt, [&](unsigned t) {
    const int64_t hn = n * inDim, wn = outDim * inDim;
    for (int64_t i = hn * t / nt; i < hn * (t + 1) / nt && !bad[t]; ++i)
      if (!std::isfinite(H[i])) bad[t] = 1;
    for (int64_t i = wn * t / nt; i < wn * (t + 1) / nt && !bad[t]; ++i)
      if (!std::isfinite(W[i])) bad[t] = 2;
  });
  for (char b : bad) {
    if (b == 1) throw Failure(Code::INVALID_ARGUMENT, "states hold NaN or Infinity");
    if (b == 2) throw Failure(Code::INVALID_ARGUMENT, "W holds NaN or Infinity");
  }

  MatMulABt(H, n, inDim, W, outDim, Y.data(), isa, nt);

  // Normalise each row (norm in double); an all-zero row stays zero.
  std::vector<char> overflow(nt, 0);
  Parallel(nt, [&](unsigned t) {
    for (int64_t i = n * t / nt; i < n * (t + 1) / nt; ++i) {
      float* y = Y.data() + i * outDim;
      double ss = 0.0;
      for (int64_t o = 0; o < outDim; ++o) ss += double(y[o]) * double(y[o]);
      if (!std::isfinite(ss)) {
        overflow[t] = 1;
        return;
      }
      if (ss == 0.0) {
        std::fill(y, y + outDim, 0.f);  // also turns -0 into +0
        continue;
      }
      const double inv = 1.0 / std::sqrt(ss);
      for (int64_t o = 0; o < outDim; ++o) y[o] = static_cast<float>(double(y[o]) * inv);
    }
  });
  for (char o : overflow)
    if (o) throw Failure(Code::INVALID_ARGUMENT, "W h overflows float32 (states or W far too large)");
  return Y;
}

namespace {
[[noreturn]] void BadInput(const std::string& message) { throw Failure(Code::INVALID_ARGUMENT, message); }
}  // namespace

int64_t CheckQueries(const float* queries, int64_t qlen, int64_t dim) {
  if (qlen % dim != 0)
    BadInput("queries.length (" + std::to_string(qlen) + ") is not a multiple of dim (" + std::to_string(dim) + ")");
  const int64_t nq = qlen / dim;
  if (nq == 0) BadInput("queries hold no token");
  for (int64_t i = 0; i < qlen; ++i)
    if (!std::isfinite(queries[i])) BadInput("queries[" + std::to_string(i) + "] is not finite");
  return nq;
}

void CheckWeights(const float* weights, int64_t wlen, int64_t nq) {
  if (wlen != nq)
    BadInput("weights.length (" + std::to_string(wlen) + ") must equal the number of query tokens (" +
             std::to_string(nq) + ")");
  double wsum = 0;
  for (int64_t i = 0; i < nq; ++i) {
    const float w = weights[i];
    if (!std::isfinite(w) || w < 0)
      BadInput("weights[" + std::to_string(i) + "] must be finite and >= 0, got " + std::to_string(w));
    wsum += w;
  }
  if (!(wsum > 0)) BadInput("weights must have a positive sum");
}

void CheckResultSize(int64_t nq, int64_t nSkills) {
  if (static_cast<double>(nq) * static_cast<double>(nSkills) > double(std::numeric_limits<int32_t>::max()))
    BadInput("queries × skills is too large for one result array; split the queries");
}

}  // namespace gavel::kernels
