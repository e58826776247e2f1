// Loss, gradient and AdamW of the glance head's training (see train_core.h for the maths and the
// CUDA-twin plan). The GEMMs are the kernels' one GEMM driver (kernels::MatMulABt, the projection's
// too). Max-sim + argmax per task is the glance kernel itself (kernels::Glance with k = 1).
#include "common/cores.h"
#include "train/train_core.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "common/failure.h"
#include "common/parallel.h"
#include "kernels/kernels_core.h"

namespace gavel::train {
namespace {

using kernels::Isa;

using gavel::Parallel;
using kernels::MatMulABt;

unsigned Threads(unsigned threads, double flops) {
  if (threads == 0) threads = CoresAvailable();
  return flops < 4e6 ? 1u : threads;  // below ~4 MFLOP a thread costs more to start than it saves
}

bool AllFinite(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

// Row i of Y = normalize(row i of U) in place; r[i] = ‖U_i‖ (double). Zero rows stay zero.
void NormalizeRows(float* U, int64_t n, int64_t dim, std::vector<double>& r) {
  r.assign(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    float* u = U + i * dim;
    double ss = 0;
    for (int64_t o = 0; o < dim; ++o) ss += double(u[o]) * double(u[o]);
    if (!std::isfinite(ss)) throw Failure(Code::INVALID_ARGUMENT, "W h overflows float32 (states or weights far too large)");
    if (ss == 0) {
      std::fill(u, u + dim, 0.f);
      continue;
    }
    r[i] = std::sqrt(ss);
    const double inv = 1.0 / r[i];
    for (int64_t o = 0; o < dim; ++o) u[o] = static_cast<float>(double(u[o]) * inv);
  }
}

// The backward of y = u/‖u‖: g_u = (g_y − y⟨y, g_y⟩) / ‖u‖, in place on G (rows of dim floats).
void NormalizeBackward(const float* Y, const std::vector<double>& r, float* G, int64_t n, int64_t dim) {
  for (int64_t i = 0; i < n; ++i) {
    float* g = G + i * dim;
    if (r[i] == 0) {
      std::fill(g, g + dim, 0.f);
      continue;
    }
    const float* y = Y + i * dim;
    double dot = 0;
    for (int64_t o = 0; o < dim; ++o) dot += double(y[o]) * double(g[o]);
    const double inv = 1.0 / r[i];
    for (int64_t o = 0; o < dim; ++o) g[o] = static_cast<float>((double(g[o]) - double(y[o]) * dot) * inv);
  }
}

// gW (dim × nEmbd) = Σ_i gU_iᵀ h_i over the rows i with a non-zero gU (the max-sim gradient reaches
// only argmax keys, so most skill rows drop out before the GEMM).
std::vector<float> WeightGrad(const float* gU, const float* H, int64_t n, int64_t nEmbd, int64_t dim, Isa isa,
                              unsigned threads) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < n; ++i) {
    const float* g = gU + i * dim;
    for (int64_t o = 0; o < dim; ++o)
      if (g[o] != 0.f) {
        rows.push_back(i);
        break;
      }
  }
  std::vector<float> gW(static_cast<size_t>(dim * nEmbd), 0.f);
  const int64_t k = static_cast<int64_t>(rows.size());
  if (k == 0) return gW;
  // A = gUᵀ (dim × k), B = Hᵀ (nEmbd × k): gW = A Bᵀ.
  std::vector<float> A(static_cast<size_t>(dim * k)), B(static_cast<size_t>(nEmbd * k));
  for (int64_t c = 0; c < k; ++c) {
    const float* g = gU + rows[c] * dim;
    const float* h = H + rows[c] * nEmbd;
    for (int64_t o = 0; o < dim; ++o) A[o * k + c] = g[o];
    for (int64_t e = 0; e < nEmbd; ++e) B[e * k + c] = h[e];
  }
  MatMulABt(A.data(), dim, k, B.data(), nEmbd, gW.data(), isa, threads);
  return gW;
}

// Per task, after the forward: each candidate's coefficient ∂L/∂m̄(s) / n_q and each (query, candidate)'s argmax.
struct TaskFwd {
  double loss = 0;
  std::vector<double> coef;     // nc
  std::vector<int32_t> argmax;  // nq × nc, key index within the skill
  std::vector<float> m;         // nq × nc, kept only when asked (PairOptions.keep)
};

// Max-sim of one task's unit queries against its candidates' keys at given argmax keys (the
// forceArgmax hook): m = ⟨q_i, d_key⟩ in float32, the key taken from `forced` (nq × nc).
kernels::GlanceResult ForcedMaxSim(const float* Yq, int64_t nq, const std::vector<const float*>& base,
                                   const std::vector<int64_t>& off, int64_t dim, const int32_t* forced) {
  const int64_t nc = static_cast<int64_t>(base.size());
  kernels::GlanceResult g;
  g.m.resize(static_cast<size_t>(nq * nc));
  g.argmax.assign(forced, forced + nq * nc);
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t c = 0; c < nc; ++c) {
      const int32_t k = forced[i * nc + c];
      if (k < 0 || k >= off[c + 1] - off[c]) throw Failure(Code::INVALID_ARGUMENT, "forceArgmax names a key outside its skill");
      const float* q = Yq + i * dim;
      const float* d = base[c] + int64_t(k) * dim;
      float acc = 0.f;
      for (int64_t o = 0; o < dim; ++o) acc += q[o] * d[o];
      g.m[i * nc + c] = acc;
    }
  return g;
}

}  // namespace

std::vector<int64_t> PairOffsets(const Batch& b) {
  const int64_t nTasks = b.nTasks();
  std::vector<int64_t> off(static_cast<size_t>(nTasks) + 1, 0);
  for (int64_t t = 0; t < nTasks; ++t)
    off[t + 1] = off[t] + int64_t(b.qOff[t + 1] - b.qOff[t]) * int64_t(b.candOff[t + 1] - b.candOff[t]);
  return off;
}

// long function: the step's phases in order, each commented, sharing the batch's locals.
LossGrad LossAndGrad(const Batch& b, const float* Wq, const float* Ws, int64_t nEmbd, int64_t dim, double tau,
                     bool keysGiven, Isa isa, unsigned threads, const PairOptions& pairs) {
  const int64_t nTasks = b.nTasks(), nSkills = b.nSkills();
  const int64_t nQ = b.qOff[nTasks], nS = b.sOff[nSkills];
  const int64_t sWidth = keysGiven ? dim : nEmbd;
  if (threads == 0) threads = CoresAvailable();
  if (!AllFinite(Wq, dim * nEmbd) || (!keysGiven && !AllFinite(Ws, dim * nEmbd)))
    throw Failure(Code::INVALID_ARGUMENT, "the weights hold NaN or Infinity");
  if (!AllFinite(b.q.data(), nQ * nEmbd)) throw Failure(Code::INVALID_ARGUMENT, "queryStates hold NaN or Infinity");
  if (!AllFinite(b.s.data(), nS * sWidth)) throw Failure(Code::INVALID_ARGUMENT, "skillStates hold NaN or Infinity");
  const std::vector<int64_t> pairOff = PairOffsets(b);
  if (pairs.forceArgmax != nullptr && pairs.forceCount != pairOff[nTasks])
    throw Failure(Code::INVALID_ARGUMENT, "forceArgmax must hold one key index per (task, query row, candidate) pair (" +
                                              std::to_string(pairOff[nTasks]) + ")");

  // Forward projections: unit queries Yq, unit keys Ys (given, or projected).
  std::vector<float> Yq(static_cast<size_t>(nQ * dim));
  std::vector<double> rq, rs;
  MatMulABt(b.q.data(), nQ, nEmbd, Wq, dim, Yq.data(), isa, threads);
  NormalizeRows(Yq.data(), nQ, dim, rq);
  std::vector<float> YsOwn;
  const float* Ys = b.s.data();
  if (!keysGiven) {
    YsOwn.resize(static_cast<size_t>(nS * dim));
    MatMulABt(b.s.data(), nS, nEmbd, Ws, dim, YsOwn.data(), isa, threads);
    NormalizeRows(YsOwn.data(), nS, dim, rs);
    Ys = YsOwn.data();
  }

  // Per task: max-sim with argmax (the glance kernel, one thread each; tasks spread over threads),
  // span means, the loss and ∂L/∂m̄, then the queries' gradient gYq (rows owned by the task).
  std::vector<TaskFwd> fwd(static_cast<size_t>(nTasks));
  std::vector<float> gYq(static_cast<size_t>(nQ * dim), 0.f);
  std::atomic<int64_t> next{0};
  const double invT = 1.0 / double(nTasks);
  double work = 0;
  for (int64_t t = 0; t < nTasks; ++t)
    for (int32_t c = b.candOff[t]; c < b.candOff[t + 1]; ++c)
      work += 2.0 * double(b.qOff[t + 1] - b.qOff[t]) * double(b.sOff[b.cand[c] + 1] - b.sOff[b.cand[c]]) * double(dim);
  const unsigned nt = static_cast<unsigned>(std::min<int64_t>(Threads(threads, work), nTasks));
  Parallel(nt, [&](unsigned) {
    std::vector<const float*> base;
    std::vector<int64_t> off;
    std::vector<float> ones;
    std::vector<double> mbar;
    for (int64_t t; (t = next.fetch_add(1)) < nTasks;) {
      const int64_t q0 = b.qOff[t], nq = b.qOff[t + 1] - q0;
      const int64_t c0 = b.candOff[t], nc = b.candOff[t + 1] - c0;
      base.resize(static_cast<size_t>(nc));
      off.assign(static_cast<size_t>(nc) + 1, 0);
      for (int64_t c = 0; c < nc; ++c) {
        const int32_t s = b.cand[c0 + c];
        base[c] = Ys + int64_t(b.sOff[s]) * dim;
        off[c + 1] = off[c] + (b.sOff[s + 1] - b.sOff[s]);
      }
      ones.assign(static_cast<size_t>(nq), 1.f);
      kernels::GlanceResult g =
          pairs.forceArgmax != nullptr
              ? ForcedMaxSim(Yq.data() + q0 * dim, nq, base, off, dim, pairs.forceArgmax + pairOff[t])
              : kernels::Glance(Yq.data() + q0 * dim, nq, kernels::SkillKeys{base.data(), off.data(), nc}, dim,
                                ones.data(), 1, isa, 1);
      // L_t = lse_all(τ m̄) − lse_pos(τ m̄); ∂L_t/∂m̄(s) = τ (p_all(s) − p_pos(s)).
      mbar.assign(static_cast<size_t>(nc), 0.0);
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t c = 0; c < nc; ++c) mbar[c] += g.m[i * nc + c];
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < nc; ++c) {
        mbar[c] = tau * mbar[c] / double(nq);
        mx = std::max(mx, mbar[c]);
      }
      double zAll = 0, zPos = 0;
      for (int64_t c = 0; c < nc; ++c) {
        const double e = std::exp(mbar[c] - mx);
        zAll += e;
        if (b.pos[c0 + c]) zPos += e;
      }
      TaskFwd& f = fwd[t];
      f.loss = std::log(zAll) - std::log(zPos);
      f.coef.resize(static_cast<size_t>(nc));
      for (int64_t c = 0; c < nc; ++c) {
        const double e = std::exp(mbar[c] - mx);
        const double d = tau * (e / zAll - (b.pos[c0 + c] ? e / zPos : 0.0));
        f.coef[c] = d * invT / double(nq);
      }
      f.argmax = std::move(g.argmax);
      if (pairs.keep) f.m = std::move(g.m);
      for (int64_t i = 0; i < nq; ++i) {
        float* gq = gYq.data() + (q0 + i) * dim;
        for (int64_t c = 0; c < nc; ++c) {
          const float* d = base[c] + int64_t(f.argmax[i * nc + c]) * dim;
          const float w = static_cast<float>(f.coef[c]);
          for (int64_t o = 0; o < dim; ++o) gq[o] += w * d[o];
        }
      }
    }
  });

  LossGrad out;
  for (int64_t t = 0; t < nTasks; ++t) out.loss += fwd[t].loss;
  out.loss *= invT;
  if (!std::isfinite(out.loss)) throw Failure(Code::INVALID_ARGUMENT, "the loss came out non-finite");
  if (pairs.keep) {
    out.m.reserve(static_cast<size_t>(pairOff[nTasks]));
    out.argmax.reserve(static_cast<size_t>(pairOff[nTasks]));
    for (const TaskFwd& f : fwd) {
      out.m.insert(out.m.end(), f.m.begin(), f.m.end());
      out.argmax.insert(out.argmax.end(), f.argmax.begin(), f.argmax.end());
    }
  }

  NormalizeBackward(Yq.data(), rq, gYq.data(), nQ, dim);
  out.gWq = WeightGrad(gYq.data(), b.q.data(), nQ, nEmbd, dim, isa, threads);
  if (keysGiven) return out;

  // The argmax keys' gradient, gYs[key] += coef · q_i. Threads own disjoint skill ranges and walk
  // tasks, candidates and queries in order, so the sums do not depend on the thread count.
  std::vector<float> gYs(static_cast<size_t>(nS * dim), 0.f);
  const unsigned ns = static_cast<unsigned>(std::min<int64_t>(Threads(threads, work), nSkills));
  Parallel(ns, [&](unsigned th) {
    const int64_t s0 = nSkills * th / ns, s1 = nSkills * (th + 1) / ns;
    for (int64_t t = 0; t < nTasks; ++t) {
      const int64_t q0 = b.qOff[t], nq = b.qOff[t + 1] - q0;
      const int64_t c0 = b.candOff[t], nc = b.candOff[t + 1] - c0;
      for (int64_t c = 0; c < nc; ++c) {
        const int32_t s = b.cand[c0 + c];
        if (s < s0 || s >= s1) continue;
        const float w = static_cast<float>(fwd[t].coef[c]);
        for (int64_t i = 0; i < nq; ++i) {
          float* gd = gYs.data() + (int64_t(b.sOff[s]) + fwd[t].argmax[i * nc + c]) * dim;
          const float* q = Yq.data() + (q0 + i) * dim;
          for (int64_t o = 0; o < dim; ++o) gd[o] += w * q[o];
        }
      }
    }
  });
  NormalizeBackward(Ys, rs, gYs.data(), nS, dim);
  out.gWs = WeightGrad(gYs.data(), b.s.data(), nS, nEmbd, dim, isa, threads);
  return out;
}

void AdamWUpdate(float* w, float* m, float* v, const float* g, int64_t n, int64_t t, const AdamWParams& p,
                 unsigned threads) {
  const double c1 = 1.0 - std::pow(p.beta1, double(t)), c2 = 1.0 - std::pow(p.beta2, double(t));
  const unsigned nt = Threads(threads, 10.0 * double(n));
  Parallel(nt, [&](unsigned th) {
    for (int64_t i = n * th / nt; i < n * (th + 1) / nt; ++i) {
      const double gi = g[i];
      const double mi = p.beta1 * m[i] + (1 - p.beta1) * gi;
      const double vi = p.beta2 * v[i] + (1 - p.beta2) * gi * gi;
      m[i] = static_cast<float>(mi);
      v[i] = static_cast<float>(vi);
      double wi = w[i];
      wi -= p.lr * p.weightDecay * wi;
      wi -= p.lr * (mi / c1) / (std::sqrt(vi / c2) + p.eps);
      w[i] = static_cast<float>(wi);
    }
  });
}

}  // namespace gavel::train
