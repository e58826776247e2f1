// The exact glance through an int8 prefilter (i8_glance.h says what is computed and why it is exact).
#include "common/cores.h"
#include "kernels/i8_glance.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "common/failure.h"
#include "common/half.h"
#include "common/parallel.h"
#include "common/x86_features.h"
#include "kernels/i8_neon.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GAVEL_I8_X86 1
#else
#define GAVEL_I8_X86 0
#endif

namespace gavel::kernels {
namespace {

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

constexpr double kU = 1.0 / 16777216.0;  // 2^-24, float32's unit roundoff

// x rounded up to a float (≥ x).
float UpFloat(double x) {
  float f = static_cast<float>(x);
  if (static_cast<double>(f) < x) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

int64_t Dim4(int64_t dim) { return (dim + 3) / 4; }


// v (dim floats) → q (dim int8 in [-qmax, qmax]) with its scale and error norm. Each pass keeps
// kLanes independent accumulators (lane l takes the dimensions ≡ l mod kLanes), a shape the compiler
// turns into vector code without reassociating anything.
Quantized QuantizeVector(const float* v, int64_t dim, int qmax, int8_t* q) {
  constexpr int kLanes = 16;
  Quantized r;
  const int64_t body = dim - dim % kLanes;
  // max |v_d|, and a NaN lane where some v_d is not finite (∞·0 and NaN·0 are NaN, 0 otherwise)
  float mx[kLanes] = {}, bad[kLanes] = {};
  for (int64_t d = 0; d < body; d += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float x = v[d + l], ax = std::fabs(x);
      mx[l] = mx[l] < ax ? ax : mx[l];
      bad[l] += x * 0.f;
    }
  float maxAbs = 0.f, nan = 0.f;
  for (int l = 0; l < kLanes; ++l) {
    maxAbs = std::max(maxAbs, mx[l]);
    nan += bad[l];
  }
  for (int64_t d = body; d < dim; ++d) {
    maxAbs = std::max(maxAbs, std::fabs(v[d]));
    nan += v[d] * 0.f;
  }
  if (nan != 0.f) {  // NaN compares unequal to 0
    r.finite = false;
    return r;
  }
  const float a = maxAbs / static_cast<float>(qmax);
  // Any integer choice is sound (the error is measured below); v·(1/a) rounded to nearest is close
  // to the best.
  const float inv = a > 0.f ? 1.f / a : 0.f, lim = static_cast<float>(qmax);
  // Rounded to nearest (ties to even) by adding and taking off 1.5·2²³ (exact for |x| ≤ 2²²), clamped:
  // float adds the compiler vectorises (a float → int conversion with a sign test per value did not).
  for (int64_t d = 0; d < dim; ++d) {
    const float x = std::min(lim, std::max(-lim, v[d] * inv));
    q[d] = static_cast<int8_t>(static_cast<int>((x + 12582912.f) - 12582912.f));
  }
  // Independent double sums (exact products: a·q_q needs 31 bits, v² 48).
  constexpr int kD = 8;
  double e2[kD] = {}, n2[kD] = {};
  const int64_t bodyD = dim - dim % kD;
  const double ad = a;
  for (int64_t d = 0; d < bodyD; d += kD)
    for (int l = 0; l < kD; ++l) {
      const double x = v[d + l], e = x - ad * double(q[d + l]);
      e2[l] += e * e;
      n2[l] += x * x;
    }
  double err2 = 0, norm2 = 0;
  for (int l = 0; l < kD; ++l) {
    err2 += e2[l];
    norm2 += n2[l];
  }
  for (int64_t d = bodyD; d < dim; ++d) {
    const double x = v[d], e = x - ad * double(q[d]);
    err2 += e * e;
    norm2 += x * x;
  }
  r.scale = a;
  // The double sums are within dim·2⁻⁵³ (relative) of the real ones: 1 + 1e-9 covers them.
  r.errNorm = UpFloat(std::sqrt(err2) * (1.0 + 1e-9));
  r.norm = UpFloat(std::sqrt(norm2) * (1.0 + 1e-9));
  if (!std::isfinite(r.norm)) r.finite = false;
  return r;
}

I8Queries QuantizeQueries(const float* queries, const std::vector<int64_t>& rows, int64_t dim, int qmax) {
  I8Queries Q;
  Q.n = static_cast<int64_t>(rows.size());
  Q.rowBytes = Dim4(dim) * 4;
  Q.q.assign(static_cast<size_t>(Q.n * Q.rowBytes), 0);
  Q.corr.resize(rows.size());
  Q.b.resize(rows.size());
  Q.alpha.resize(rows.size());
  Q.beta.resize(rows.size());
  Q.norm.resize(rows.size());
  const double c = 1.01 * double(dim + 8) * kU;
  for (int64_t a = 0; a < Q.n; ++a) {
    int8_t* q = Q.q.data() + a * Q.rowBytes;
    const Quantized z = QuantizeVector(queries + rows[a] * dim, dim, qmax, q);  // queries are finite (checked)
    int32_t sum = 0;
    for (int64_t d = 0; d < dim; ++d) sum += q[d];
    Q.corr[a] = 128 * sum;
    Q.b[a] = z.scale;
    const double N = double(z.norm) + double(z.errNorm);
    Q.alpha[a] = z.norm;
    Q.beta[a] = UpFloat(double(z.errNorm) + c * N);
    Q.norm[a] = UpFloat(N);
  }
  return Q;
}

namespace {

// ---- stage 1: per (row, skill) P = max over the skill's keys of fl(fl(Σ)·a)·b ----------------------
// Q: the active rows' int8 (rowBytes each), out[a·ostride] for each row a.

void Stage1Scalar(const I8Queries& Q, const I8Skill& sk, int64_t dim4, float* out, int64_t ostride) {
  const int64_t rows = sk.rows, ks = rows * 4;
  for (int64_t a = 0; a < Q.n; ++a) {
    const int8_t* q = Q.q.data() + a * Q.rowBytes;
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < rows; ++j) {
      int32_t acc = -Q.corr[a];
      const uint8_t* kp = sk.keys.data() + j * 4;
      for (int64_t d4 = 0; d4 < dim4; ++d4)
        for (int t = 0; t < 4; ++t) acc += int32_t(kp[d4 * ks + t]) * int32_t(q[d4 * 4 + t]);
      best = std::max(best, static_cast<float>(acc) * sk.scale[j]);
    }
    out[a * ostride] = best * Q.b[a];
  }
}

#if GAVEL_I8_X86
inline int32_t Load32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// AVX2: vpmaddubsw (u8 key × s8 query, pairs summed in int16: |2·255·64| < 2¹⁵ as queries are in
// [-64, 64]) then vpmaddwd by ones. 4 rows × 16 keys (two ymm) per tile.
__attribute__((target("avx2,fma"))) void Stage1Avx2(const I8Queries& Q, const I8Skill& sk, int64_t dim4, float* out,
                                                     int64_t ostride) {
  constexpr int R = 4;
  const int64_t rows = sk.rows, ks = rows * 4;
  const uint8_t* K = sk.keys.data();
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t r0 = 0; r0 < Q.n; r0 += R) {
    const int nr = static_cast<int>(std::min<int64_t>(R, Q.n - r0));
    const int8_t* qp[R];
    __m256i c[R];
    __m256 vmax[R];
    for (int r = 0; r < R; ++r) {
      const int64_t a = r < nr ? r0 + r : r0;
      qp[r] = Q.q.data() + a * Q.rowBytes;
      c[r] = _mm256_set1_epi32(-Q.corr[a]);
      vmax[r] = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    }
    for (int64_t g = 0; g < rows; g += 16) {
      const int n0 = static_cast<int>(std::min<int64_t>(8, rows - g));
      const int n1 = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(8, rows - g - 8)));
      const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n0), lane);
      const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n1), lane);
      __m256i acc0[R], acc1[R];
      for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = c[r];
      const uint8_t* kp = K + g * 4;
      for (int64_t d4 = 0; d4 < dim4; ++d4) {
        const int* p = reinterpret_cast<const int*>(kp + d4 * ks);
        const __m256i k0 = _mm256_maskload_epi32(p, m0);
        const __m256i k1 = n1 > 0 ? _mm256_maskload_epi32(p + 8, m1) : _mm256_setzero_si256();
        for (int r = 0; r < R; ++r) {
          const __m256i qb = _mm256_set1_epi32(Load32(qp[r] + d4 * 4));
          acc0[r] = _mm256_add_epi32(acc0[r], _mm256_madd_epi16(_mm256_maddubs_epi16(k0, qb), ones));
          acc1[r] = _mm256_add_epi32(acc1[r], _mm256_madd_epi16(_mm256_maddubs_epi16(k1, qb), ones));
        }
      }
      const __m256 s0 = _mm256_maskload_ps(sk.scale.data() + g, m0);
      const __m256 s1 = n1 > 0 ? _mm256_maskload_ps(sk.scale.data() + g + 8, m1) : _mm256_setzero_ps();
      const __m256 f0 = _mm256_castsi256_ps(m0), f1 = _mm256_castsi256_ps(m1);
      for (int r = 0; r < R; ++r) {
        const __m256 p0 = _mm256_mul_ps(_mm256_cvtepi32_ps(acc0[r]), s0);
        const __m256 p1 = _mm256_mul_ps(_mm256_cvtepi32_ps(acc1[r]), s1);
        vmax[r] = _mm256_blendv_ps(vmax[r], _mm256_max_ps(vmax[r], p0), f0);
        vmax[r] = _mm256_blendv_ps(vmax[r], _mm256_max_ps(vmax[r], p1), f1);
      }
    }
    for (int r = 0; r < nr; ++r) {
      alignas(32) float v[8];
      _mm256_store_ps(v, vmax[r]);
      float best = v[0];
      for (int l = 1; l < 8; ++l) best = std::max(best, v[l]);
      out[(r0 + r) * ostride] = best * Q.b[r0 + r];
    }
  }
}

// AVX-512 VNNI: vpdpbusd (u8 key × s8 query, 4 products per int32 lane, exact). 12 rows × 32 keys.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))) void Stage1Vnni(const I8Queries& Q,
                                                                                          const I8Skill& sk,
                                                                                          int64_t dim4, float* out,
                                                                                          int64_t ostride) {
  constexpr int R = 12;
  const int64_t rows = sk.rows, ks = rows * 4;
  const uint8_t* K = sk.keys.data();
  for (int64_t r0 = 0; r0 < Q.n; r0 += R) {
    const int nr = static_cast<int>(std::min<int64_t>(R, Q.n - r0));
    const int8_t* qp[R];
    int32_t c[R];
    __m512 vmax[R];
    for (int r = 0; r < R; ++r) {
      const int64_t a = r < nr ? r0 + r : r0;
      qp[r] = Q.q.data() + a * Q.rowBytes;
      c[r] = -Q.corr[a];
      vmax[r] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    }
    for (int64_t g = 0; g < rows; g += 32) {
      const int64_t n0 = std::min<int64_t>(16, rows - g), n1 = std::max<int64_t>(0, std::min<int64_t>(16, rows - g - 16));
      const __mmask16 m0 = static_cast<__mmask16>(n0 == 16 ? 0xFFFFu : (1u << n0) - 1u);
      const __mmask16 m1 = static_cast<__mmask16>(n1 == 16 ? 0xFFFFu : (1u << n1) - 1u);
      const uint8_t* kp = K + g * 4;
      const __m512 s0 = _mm512_maskz_loadu_ps(m0, sk.scale.data() + g);
      if (n1 > 0) {
        __m512i acc0[R], acc1[R];
        for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_set1_epi32(c[r]);
        for (int64_t d4 = 0; d4 < dim4; ++d4) {
          const uint8_t* p = kp + d4 * ks;
          const __m512i k0 = _mm512_maskz_loadu_epi32(m0, p);
          const __m512i k1 = _mm512_maskz_loadu_epi32(m1, p + 64);
          for (int r = 0; r < R; ++r) {
            const __m512i qb = _mm512_set1_epi32(Load32(qp[r] + d4 * 4));
            acc0[r] = _mm512_dpbusd_epi32(acc0[r], k0, qb);
            acc1[r] = _mm512_dpbusd_epi32(acc1[r], k1, qb);
          }
        }
        const __m512 s1 = _mm512_maskz_loadu_ps(m1, sk.scale.data() + g + 16);
        for (int r = 0; r < R; ++r) {
          vmax[r] = _mm512_mask_max_ps(vmax[r], m0, vmax[r], _mm512_mul_ps(_mm512_cvtepi32_ps(acc0[r]), s0));
          vmax[r] = _mm512_mask_max_ps(vmax[r], m1, vmax[r], _mm512_mul_ps(_mm512_cvtepi32_ps(acc1[r]), s1));
        }
      } else {
        __m512i acc0[R];
        for (int r = 0; r < R; ++r) acc0[r] = _mm512_set1_epi32(c[r]);
        for (int64_t d4 = 0; d4 < dim4; ++d4) {
          const __m512i k0 = _mm512_maskz_loadu_epi32(m0, kp + d4 * ks);
          for (int r = 0; r < R; ++r)
            acc0[r] = _mm512_dpbusd_epi32(acc0[r], k0, _mm512_set1_epi32(Load32(qp[r] + d4 * 4)));
        }
        for (int r = 0; r < R; ++r)
          vmax[r] = _mm512_mask_max_ps(vmax[r], m0, vmax[r], _mm512_mul_ps(_mm512_cvtepi32_ps(acc0[r]), s0));
      }
    }
    for (int r = 0; r < nr; ++r) out[(r0 + r) * ostride] = _mm512_reduce_max_ps(vmax[r]) * Q.b[r0 + r];
  }
}
#endif

void Stage1Skill(I8Isa isa, const I8Queries& Q, const I8Skill& sk, int64_t dim4, float* out, int64_t ostride) {
  switch (isa) {
#if GAVEL_I8_X86
    case I8Isa::Avx512Vnni: return Stage1Vnni(Q, sk, dim4, out, ostride);
    case I8Isa::Avx2: return Stage1Avx2(Q, sk, dim4, out, ostride);
#endif
#if GAVEL_I8_NEON
    case I8Isa::NeonDot:
    case I8Isa::Neon:
      return neon::SkillMax(isa == I8Isa::NeonDot, sk.keys.data(), sk.scale.data(), sk.rows, dim4, Q.q.data(),
                            Q.rowBytes, Q.n, Q.b.data(), out, ostride);
#endif
    default: return Stage1Scalar(Q, sk, dim4, out, ostride);
  }
}

unsigned Threads(unsigned threads) { return threads == 0 ? CoresAvailable() : threads; }

// Skills split over nt threads by keys (cut has nt + 1 entries).
std::vector<int64_t> CutByWork(const std::vector<double>& prefix, unsigned nt) {
  const int64_t n = static_cast<int64_t>(prefix.size()) - 1;
  std::vector<int64_t> cut(nt + 1, 0);
  cut[nt] = n;
  for (unsigned t = 1; t < nt; ++t) {
    const double target = prefix[n] * t / nt;
    cut[t] = std::lower_bound(prefix.begin(), prefix.end(), target) - prefix.begin();
    cut[t] = std::min(n, std::max(cut[t], cut[t - 1]));
  }
  return cut;
}

// P (Q.n × nSkills) of stage 1, threaded over skills. Skills without keys get -1 (their m).
void Stage1(I8Isa isa, const I8Queries& Q, const SkillKeys& keys, const I8Skill* const* i8, int64_t dim,
            unsigned nt, float* P, const std::atomic<bool>* stop) {
  const int64_t nSkills = keys.nSkills, dim4 = Dim4(dim);
  std::vector<double> prefix(static_cast<size_t>(nSkills) + 1, 0.0);
  for (int64_t s = 0; s < nSkills; ++s) prefix[s + 1] = prefix[s] + double(i8[s]->rows) + 1.0;
  const std::vector<int64_t> cut = CutByWork(prefix, nt);
  Parallel(nt, [&](unsigned t) {
    for (int64_t s = cut[t]; s < cut[t + 1]; ++s) {
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) return;
      if (i8[s]->rows == 0) {
        for (int64_t a = 0; a < Q.n; ++a) P[a * nSkills + s] = -1.f;
      } else {
        Stage1Skill(isa, Q, *i8[s], dim4, P + s, nSkills);
      }
    }
  });
}

// E_i(s): the bound's half-width (0 for a skill without keys, whose m is exactly -1).
inline float HalfWidth(const I8Queries& Q, int64_t a, const I8Skill& sk) {
  if (sk.rows == 0) return 0.f;
  const float e = Q.alpha[a] * sk.maxErr + Q.beta[a] * sk.maxNorm;
  return e * (1.f + 1.f / 1024.f);
}

bool Stopped(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(std::memory_order_relaxed); }

// Skill s of `keys` as a one-skill bank (its m then indexed [row·1 + 0]).
SkillKeys OneSkill(const SkillKeys& keys, int64_t s) {
  return SkillKeys{keys.base != nullptr ? keys.base + s : nullptr, keys.offsets + s, 1,
                   keys.half != nullptr ? keys.half + s : nullptr};
}

void FinishColumns(GlanceResult& r, const float* queries, int64_t nq, const SkillKeys& keys, int64_t dim,
                   int64_t detail, Isa isa, std::vector<int64_t>& columns) {
  columns = TopColumns(r.g, detail);
  const int64_t n = static_cast<int64_t>(columns.size());
  r.m.assign(static_cast<size_t>(nq * n), -1.f);
  r.argmax.assign(r.m.size(), -1);
  std::vector<float> m(static_cast<size_t>(nq));
  std::vector<int32_t> am(static_cast<size_t>(nq));
  for (int64_t j = 0; j < n; ++j) {
    const int64_t s = columns[j];
    if (keys.offsets[s + 1] == keys.offsets[s]) continue;  // m = -1, argmax -1, as Vote leaves them
    std::fill(m.begin(), m.end(), -std::numeric_limits<float>::infinity());
    std::fill(am.begin(), am.end(), -1);
    if (!MaxSimSkills(queries, nq, OneSkill(keys, s), 0, 1, dim, m.data(), am.data(), isa))
      throw Failure(Code::INVALID_ARGUMENT, "glance: a score came out non-finite; the bank holds NaN, Inf or overflowing values");
    for (int64_t i = 0; i < nq; ++i) {
      r.m[i * n + j] = m[i];
      r.argmax[i * n + j] = am[i];
    }
  }
}

}  // namespace

I8Skill QuantizeSkill(const float* f32, const uint16_t* half, int64_t rows, int64_t dim) {
  I8Skill sk;
  sk.rows = rows;
  const int64_t dim4 = Dim4(dim);
  sk.keys.assign(static_cast<size_t>(dim4 * rows * 4), 128);
  sk.scale.resize(static_cast<size_t>(rows));
  std::vector<float> v(static_cast<size_t>(dim));
  std::vector<int8_t> q(static_cast<size_t>(dim));
  for (int64_t j = 0; j < rows; ++j) {
    const float* src = f32 != nullptr ? f32 + j * dim : nullptr;
    if (half != nullptr) {
      for (int64_t d = 0; d < dim; ++d) v[d] = HalfToFloat(half[j * dim + d]);
      src = v.data();
    }
    const Quantized z = QuantizeVector(src, dim, 127, q.data());
    if (!z.finite) {
      sk.finite = false;
      return sk;
    }
    sk.scale[j] = z.scale;
    sk.maxErr = std::max(sk.maxErr, z.errNorm);
    sk.maxNorm = std::max(sk.maxNorm, UpFloat(double(z.norm) + double(z.errNorm)));
    for (int64_t d = 0; d < dim; ++d) sk.keys[static_cast<size_t>(((d / 4) * rows + j) * 4 + d % 4)] = uint8_t(q[d] + 128);
  }
  return sk;
}

I8Isa SelectI8Isa(Isa isa) {
#if GAVEL_I8_X86
  GAVEL_CPU_INIT();
  if (isa == Isa::Avx512 && GAVEL_CPU_SUPPORTS("avx512vnni")) return I8Isa::Avx512Vnni;
  if (isa == Isa::Avx512 || isa == Isa::Avx2) return I8Isa::Avx2;
#endif
#if GAVEL_I8_NEON
  // arm64's one kernels level (Isa::Generic, whatever GAVEL_KERNEL_ISA says) is NEON: the int8
  // product too, with sdot where the CPU has it
  (void)isa;
  return neon::DotUsable() ? I8Isa::NeonDot : I8Isa::Neon;
#else
  (void)isa;
  return I8Isa::Scalar;
#endif
}

const char* I8IsaName(I8Isa isa) {
  switch (isa) {
    case I8Isa::Avx512Vnni: return "avx512-vnni";
    case I8Isa::Avx2: return "avx2";
    case I8Isa::NeonDot: return "neon-dotprod";
    case I8Isa::Neon: return "neon";
    default: return "scalar";
  }
}

void I8SkillMax(I8Isa isa, const I8Queries& Q, const I8Skill& sk, int64_t dim, float* out, int64_t ostride) {
  if (sk.rows == 0) {
    for (int64_t a = 0; a < Q.n; ++a) out[a * ostride] = -1.f;
    return;
  }
  Stage1Skill(isa, Q, sk, Dim4(dim), out, ostride);
}

void I8Bounds(const float* queries, int64_t nq, const SkillKeys& keys, const I8Skill* const* i8, int64_t dim,
              I8Isa isa, unsigned threads, std::vector<float>& lower, std::vector<float>& upper) {
  const int64_t nSkills = keys.nSkills;
  std::vector<int64_t> rows(static_cast<size_t>(nq));
  for (int64_t i = 0; i < nq; ++i) rows[i] = i;
  const I8Queries Q = QuantizeQueries(queries, rows, dim, isa == I8Isa::Avx2 ? 64 : 127);
  std::vector<float> P(static_cast<size_t>(nq * nSkills));
  Stage1(isa, Q, keys, i8, dim, Threads(threads), P.data(), nullptr);
  lower.resize(P.size());
  upper.resize(P.size());
  for (int64_t a = 0; a < nq; ++a)
    for (int64_t s = 0; s < nSkills; ++s) {
      const float e = HalfWidth(Q, a, *i8[s]), p = P[a * nSkills + s];
      lower[a * nSkills + s] = p - e;
      upper[a * nSkills + s] = p + e;
    }
}

GlanceResult GlanceI8(const float* queries, int64_t nq, const SkillKeys& keys, const I8Skill* const* i8, int64_t dim,
                      const float* weights, int64_t k, int64_t detail, Isa isa, unsigned threads,
                      std::vector<int64_t>& columns, I8Stats* stats, const std::atomic<bool>* stop) {
  I8Stats local;
  I8Stats& st = stats != nullptr ? *stats : local;
  st = I8Stats{};
  const int64_t nSkills = keys.nSkills;
  const unsigned nt = Threads(threads);
  columns.clear();

  // The exact glance where the prefilter cannot help or cannot vouch for its bound.
  auto exact = [&]() {
    st.exactFallback = true;
    GlanceResult r = Glance(queries, nq, keys, dim, weights, k, isa, nt, stop);
    if (detail >= 0) {
      columns = TopColumns(r.g, detail);
      GlanceResult all = std::move(r);
      r.g = std::move(all.g);
      GatherSkills(all.m.data(), all.argmax.data(), nq, nSkills, columns.data(), static_cast<int64_t>(columns.size()), r);
    }
    return r;
  };
  if (detail < 0 || nSkills == 0 || nq == 0 || k >= nSkills) return exact();
  float maxNorm = 0.f;
  for (int64_t s = 0; s < nSkills; ++s) {
    if (!i8[s]->finite) return exact();  // NaN/Inf in the keys: the exact glance reports it
    maxNorm = std::max(maxNorm, i8[s]->maxNorm);
  }

  auto t0 = Clock::now();
  st.isa = SelectI8Isa(isa);
  std::vector<int64_t> active;  // rows with weight > 0 (the vote skips the others)
  for (int64_t i = 0; i < nq; ++i)
    if (weights[i] != 0.f) active.push_back(i);
  const I8Queries Q = QuantizeQueries(queries, active, dim, st.isa == I8Isa::Avx2 ? 64 : 127);
  float maxQ = 0.f;
  for (float v : Q.norm) maxQ = std::max(maxQ, v);
  // |every f32 score| ≤ 1.01·N·K: far below FLT_MAX here, so no score of the exact glance overflows
  // (beyond, the exact glance runs and says whether one does).
  if (!(double(maxQ) * double(maxNorm) < 1e36)) return exact();
  const int64_t na = Q.n;
  st.quantMs = MsSince(t0);
  st.pairs = na * nSkills;

  // Stage 1.
  t0 = Clock::now();
  std::vector<float> P(static_cast<size_t>(na * nSkills));
  Stage1(st.isa, Q, keys, i8, dim, nt, P.data(), stop);
  if (Stopped(stop)) throw Failure(Code::ABORTED, "glance aborted");

  // Per row: τ = the k-th largest L, candidates = skills with U ≥ τ (ascending).
  const int64_t kk = k;  // < nSkills here
  std::vector<std::vector<int32_t>> cand(static_cast<size_t>(na));
  std::vector<char> bad(nt, 0);
  const unsigned rt = static_cast<unsigned>(std::min<int64_t>(nt, std::max<int64_t>(na, 1)));
  Parallel(rt, [&](unsigned t) {
    std::vector<float> L(static_cast<size_t>(nSkills)), E(static_cast<size_t>(nSkills));
    for (int64_t a = na * t / rt; a < na * (t + 1) / rt; ++a) {
      const float* p = P.data() + a * nSkills;
      for (int64_t s = 0; s < nSkills; ++s) {
        E[s] = HalfWidth(Q, a, *i8[s]);
        L[s] = p[s] - E[s];
        if (!std::isfinite(L[s]) || !std::isfinite(p[s] + E[s])) bad[t] = 1;
      }
      if (bad[t]) return;
      std::vector<float> sel(L);
      std::nth_element(sel.begin(), sel.begin() + (kk - 1), sel.end(), std::greater<float>());
      const float tau = sel[kk - 1];
      std::vector<int32_t>& c = cand[a];
      for (int64_t s = 0; s < nSkills; ++s)
        if (p[s] + E[s] >= tau) c.push_back(static_cast<int32_t>(s));
    }
  });
  for (char b : bad)
    if (b) return exact();
  st.stage1Ms = MsSince(t0);

  // Stage 2: the f32 max-sim of the candidate pairs, skill by skill over the rows that need it.
  t0 = Clock::now();
  std::vector<int64_t> off(static_cast<size_t>(nSkills) + 1, 0);
  for (int64_t a = 0; a < na; ++a)
    for (int32_t s : cand[a]) ++off[s + 1];
  for (int64_t s = 0; s < nSkills; ++s) off[s + 1] += off[s];
  const int64_t total = off[nSkills];
  st.recomputed = total;
  std::vector<int32_t> candRow(static_cast<size_t>(total));
  std::vector<std::vector<int64_t>> pos(static_cast<size_t>(na));
  {
    std::vector<int64_t> fill(off.begin(), off.end() - 1);
    for (int64_t a = 0; a < na; ++a) {  // rows ascending within each skill
      pos[a].resize(cand[a].size());
      for (size_t j = 0; j < cand[a].size(); ++j) {
        const int32_t s = cand[a][j];
        pos[a][j] = fill[s];
        candRow[fill[s]++] = static_cast<int32_t>(a);
      }
    }
  }
  std::vector<float> candM(static_cast<size_t>(total), -1.f);
  std::vector<double> work(static_cast<size_t>(nSkills) + 1, 0.0);
  for (int64_t s = 0; s < nSkills; ++s)
    work[s + 1] = work[s] + double(off[s + 1] - off[s]) * (double(keys.offsets[s + 1] - keys.offsets[s]) + 4.0);
  const std::vector<int64_t> cut = CutByWork(work, nt);
  std::vector<char> finite(nt, 1);
  Parallel(nt, [&](unsigned t) {
    std::vector<float> Qs, m;
    std::vector<int32_t> am;
    for (int64_t s = cut[t]; s < cut[t + 1]; ++s) {
      const int64_t n = off[s + 1] - off[s];
      if (n == 0 || keys.offsets[s + 1] == keys.offsets[s]) continue;  // no keys: m = -1 already
      if (Stopped(stop)) return;
      Qs.resize(static_cast<size_t>(n * dim));
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(Qs.data() + j * dim, queries + active[candRow[off[s] + j]] * dim, sizeof(float) * dim);
      m.assign(static_cast<size_t>(n), -std::numeric_limits<float>::infinity());
      am.assign(static_cast<size_t>(n), -1);
      if (!MaxSimSkills(Qs.data(), n, OneSkill(keys, s), 0, 1, dim, m.data(), am.data(), isa)) finite[t] = 0;
      std::copy(m.begin(), m.end(), candM.begin() + off[s]);
    }
  });
  if (Stopped(stop)) throw Failure(Code::ABORTED, "glance aborted");
  for (char f : finite)
    if (!f) throw Failure(Code::INVALID_ARGUMENT, "glance: a score came out non-finite; the bank holds NaN, Inf or overflowing values");
  st.stage2Ms = MsSince(t0);

  // The top-k of each row over its candidates (higher m, ties to the lower skill: Vote's order), then
  // the vote in double and in row order, as Vote sums it.
  t0 = Clock::now();
  std::vector<int32_t> top(static_cast<size_t>(na * kk));
  std::vector<float> topM(top.size());
  Parallel(rt, [&](unsigned t) {
    std::vector<int32_t> idx;
    for (int64_t a = na * t / rt; a < na * (t + 1) / rt; ++a) {
      const std::vector<int32_t>& c = cand[a];
      const int64_t n = static_cast<int64_t>(c.size());
      idx.resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) idx[j] = static_cast<int32_t>(j);
      const auto mOf = [&](int32_t j) { return candM[pos[a][j]]; };
      // c is ascending in skill, so the position order is the skill order.
      std::nth_element(idx.begin(), idx.begin() + (kk - 1), idx.end(), [&](int32_t x, int32_t y) {
        const float mx = mOf(x), my = mOf(y);
        return mx > my || (mx == my && x < y);
      });
      for (int64_t j = 0; j < kk; ++j) {
        top[a * kk + j] = c[idx[j]];
        topM[a * kk + j] = mOf(idx[j]);
      }
    }
  });
  GlanceResult r;
  double W = 0.0;
  for (int64_t i = 0; i < nq; ++i) W += weights[i];
  std::vector<double> acc(static_cast<size_t>(nSkills), 0.0);
  for (int64_t a = 0; a < na; ++a) {
    const double w = weights[active[a]];
    for (int64_t j = 0; j < kk; ++j) acc[top[a * kk + j]] += w * double(topM[a * kk + j]);
  }
  r.g.resize(static_cast<size_t>(nSkills));
  for (int64_t s = 0; s < nSkills; ++s) r.g[s] = static_cast<float>(acc[s] / W);
  FinishColumns(r, queries, nq, keys, dim, detail, isa, columns);
  st.voteMs = MsSince(t0);
  return r;
}

}  // namespace gavel::kernels
