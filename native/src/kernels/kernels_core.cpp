// Dispatch, threading and the top-k vote around the ISA-specific inner loops of simd_body.inc.
#include "kernels/kernels_core.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <thread>
#include <vector>

#include "common/errors.h"

// ---- the inner loops, once per instruction set -------------------------------------------------
// Each copy lives in its own namespace and is compiled for its own target, so a baseline x86-64
// build still runs AVX-512 code on CPUs that have it (chosen at run time by SelectIsa).

#define GAVEL_ISA_NS isa_generic
#define GAVEL_VW 4
#define GAVEL_TR 2
#define GAVEL_TC 4
#include "kernels/simd_body.inc"
#undef GAVEL_ISA_NS
#undef GAVEL_VW
#undef GAVEL_TR
#undef GAVEL_TC

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GAVEL_HAVE_X86_DISPATCH 1

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
// 16 ymm registers: a 3×4 tile (12 accumulators) leaves room for the loaded operands.
#define GAVEL_ISA_NS isa_avx2
#define GAVEL_VW 8
#define GAVEL_TR 3
#define GAVEL_TC 4
#include "kernels/simd_body.inc"
#undef GAVEL_ISA_NS
#undef GAVEL_VW
#undef GAVEL_TR
#undef GAVEL_TC
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")
#endif
// 32 zmm registers: a 4×4 tile (16 accumulators) plus 4 query and 4 key vectors.
#define GAVEL_ISA_NS isa_avx512
#define GAVEL_VW 16
#define GAVEL_TR 4
#define GAVEL_TC 4
#include "kernels/simd_body.inc"
#undef GAVEL_ISA_NS
#undef GAVEL_VW
#undef GAVEL_TR
#undef GAVEL_TC
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // x86-64

namespace gavel::kernels {

Isa SelectIsa(const char* cap) {
  Isa best = Isa::Generic;
#ifdef GAVEL_HAVE_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = Isa::Avx2;
  if (best == Isa::Avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    best = Isa::Avx512;
#endif
  if (cap != nullptr) {
    Isa limit = best;
    if (std::strcmp(cap, "generic") == 0) limit = Isa::Generic;
    else if (std::strcmp(cap, "avx2") == 0) limit = Isa::Avx2;
    else if (std::strcmp(cap, "avx512") == 0) limit = Isa::Avx512;
    best = std::min(best, limit);
  }
  return best;
}

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

namespace {

bool MaxSimRange(Isa isa, const float* q, int64_t nq, const float* bank, const int32_t* offsets, int64_t s0,
                 int64_t s1, int64_t nSkills, int64_t dim, float* m, int32_t* argmax) {
  switch (isa) {
#ifdef GAVEL_HAVE_X86_DISPATCH
    case Isa::Avx512: return isa_avx512::MaxSim(q, nq, bank, offsets, s0, s1, nSkills, dim, m, argmax);
    case Isa::Avx2: return isa_avx2::MaxSim(q, nq, bank, offsets, s0, s1, nSkills, dim, m, argmax);
#endif
    default: return isa_generic::MaxSim(q, nq, bank, offsets, s0, s1, nSkills, dim, m, argmax);
  }
}

// Runs fn(t) for t in [0, n) on n threads (t = 0 on the caller's), rethrowing the first exception:
// an exception escaping a std::thread would terminate the process.
template <typename Fn>
void Parallel(unsigned n, Fn fn) {
  if (n <= 1) {
    fn(0u);
    return;
  }
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> pool;
  pool.reserve(n - 1);
  auto guarded = [&](unsigned t) {
    try {
      fn(t);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(guarded, t);
  guarded(0);
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
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

}  // namespace

GlanceResult Glance(const float* queries, int64_t nq, const float* bank, const int32_t* offsets,
                    int64_t nSkills, int64_t dim, const float* weights, int64_t k, Isa isa,
                    unsigned threads) {
  GlanceResult r;
  const size_t cells = static_cast<size_t>(nq * nSkills);
  r.g.assign(static_cast<size_t>(nSkills), 0.f);
  r.m.assign(cells, -std::numeric_limits<float>::infinity());
  r.argmax.assign(cells, -1);
  if (nSkills == 0 || nq == 0) return r;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());

  // Max-sim, split by skill range with about the same number of keys per thread. Below ~4 MFLOP a
  // thread costs more to start than it saves.
  const int64_t keys = offsets[nSkills];
  const double flops = 2.0 * double(nq) * double(keys) * double(dim);
  unsigned nt = flops < 4e6 ? 1u : static_cast<unsigned>(std::min<int64_t>(threads, nSkills));
  std::vector<int64_t> cut(nt + 1, 0);
  cut[nt] = nSkills;
  for (unsigned t = 1; t < nt; ++t) {
    const int64_t target = keys * t / nt;
    cut[t] = std::lower_bound(offsets, offsets + nSkills + 1, target) - offsets;
    cut[t] = std::max(cut[t], cut[t - 1]);
  }
  std::vector<char> finite(nt, 1);
  if (keys > 0)
    Parallel(nt, [&](unsigned t) {
      finite[t] = MaxSimRange(isa, queries, nq, bank, offsets, cut[t], cut[t + 1], nSkills, dim, r.m.data(),
                              r.argmax.data());
    });
  for (char f : finite)
    if (!f) throw Failure("INVALID_ARGUMENT", "glance: a score came out non-finite; the bank holds NaN, Inf or overflowing values");

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
    for (int64_t i = nq * t / rt; i < nq * (t + 1) / rt; ++i)
      TopK(r.m.data() + i * nSkills, nSkills, kk, top.data() + i * kk, scratch);
  });

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
  return r;
}

}  // namespace gavel::kernels
