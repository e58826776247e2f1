// Checks the int8 kernels' vector paths against the plain loops on fresh random inputs: on arm64 NEON
// (kernels/i8_neon.h) and its dot-product copy where the CPU has it, on x86-64 AVX2 and AVX-512 VNNI
// where the CPU has them. Every path must give
//  - ListScores8's P (kivf/kivf_i8.h) and stage 1's maxima (I8SkillMax, kernels/i8_glance.h) bit for
//    bit, and leave every other element of the output alone;
//  - PassingKeys's index list exactly (NaN, ±Inf and scores on the threshold included);
//  - RefinedScore within the bound its length gives: against R*, the refined score in float64,
//    |R − R*| ≤ 1.01·(dim + 1)·u·(A1 + A2) + 1.01·u·|R| (u = 2⁻²⁴; A1 = a·Σ|q_d·k_q[d]|,
//    A2 = a2·Σ|q_d·r_q[d]|: any order of the two dim-term sums, fused or not, then two products and a
//    sum), for the path and the plain loops alike; and |R − R*| within the share of RefinedBound that
//    covers rounding, 2c·N·maxNorm2 (c = 1.01·(dim + 8)·u), so the bound the key IVF skips keys by
//    still holds for the path's order;
//  - the glance through the prefilter (GlanceI8, which picks the path by SelectI8Isa) the exact
//    Glance's g, and m / argmax of its columns, bit for bit.
// Inputs: dims 1 to 800 (many off multiples of 4 and 16), 1 to 100 keys a list or skill (off whole
// tiles), dead keys, all-zero keys, keys and queries at the code limits (±127, ±64 on AVX2), f16 keys.
// Exit 1 on any difference.
// Run: npm run test:i8-neon (built for arm64 with aarch64-linux-gnu-g++ and run under qemu-aarch64 with
// -cpu cortex-a53, no dot product, and -cpu max, which has it; then built and run natively).
// Usage: i8_neon_check [cases per check, default 300] [seed] (GAVEL_TEST_SEED also gives the seed)
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "kernels/i8_glance.h"
#include "kernels/i8_neon.h"
#include "kernels/kernels_core.h"
#include "kivf/kivf_i8.h"

using gavel::kernels::I8Isa;
namespace K = gavel::kernels;
namespace V = gavel::kivf;

namespace {

std::mt19937_64 rng;
int failures = 0;
constexpr double kU = 1.0 / 16777216.0;

int64_t Uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
double Real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
double Gauss() { return std::normal_distribution<double>(0.0, 1.0)(rng); }
bool Chance(double p) { return Real(0, 1) < p; }

uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

void Fail(const std::string& what) {
  if (failures < 20) std::printf("  DIFFERENT: %s\n", what.c_str());
  ++failures;
}

// dims: the small ones, ones around multiples of 4 and 16, the model's, and any
int64_t Dim() {
  static const int64_t kDims[] = {1, 2, 3, 4, 5, 7, 8, 12, 13, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 128, 129, 130, 255, 256, 257, 384, 768};
  if (Chance(0.7)) return kDims[Uniform(0, sizeof(kDims) / sizeof(kDims[0]) - 1)];
  return Uniform(1, 800);
}

enum Shape { kGauss, kSpiky, kSparse, kScaled, kLimit, kLimitSame, kZero, kShapes };
const char* kShapeName[] = {"gauss", "spiky", "sparse", "scaled", "limit", "limit-same", "zero"};

// n vectors of dim floats. kLimit: every entry ±1 (codes at ±qmax); kLimitSame: all +1 or all -1 (the
// largest int16 pair sums of the ARMv8.0 product); kZero: zeros (scale 0).
std::vector<float> Draw(int64_t n, int64_t dim, Shape shape) {
  std::vector<float> v(static_cast<size_t>(n * dim));
  for (int64_t i = 0; i < n; ++i) {
    float* x = v.data() + i * dim;
    const double scale = shape == kScaled ? std::pow(10.0, Real(-3, 3)) : 1.0;
    const float same = Chance(0.5) ? 1.f : -1.f;
    for (int64_t d = 0; d < dim; ++d) {
      switch (shape) {
        case kLimit: x[d] = Chance(0.5) ? 1.f : -1.f; break;
        case kLimitSame: x[d] = same; break;
        case kZero: x[d] = 0.f; break;
        case kSparse: x[d] = Chance(0.8) ? 0.f : static_cast<float>(Gauss()); break;
        default: x[d] = static_cast<float>(Gauss() * scale);
      }
    }
    if (shape == kSpiky) x[Uniform(0, dim - 1)] += static_cast<float>(30 * Real(0.5, 1.5));
  }
  return v;
}

std::vector<I8Isa> VectorIsas() {
  std::vector<I8Isa> isas;
#if GAVEL_I8_NEON
  isas.push_back(I8Isa::Neon);
  if (K::neon::DotUsable()) isas.push_back(I8Isa::NeonDot);
  std::printf("arm64: NEON; dot product compiled %s, this CPU %s\n", K::neon::DotCompiled() ? "yes" : "no",
              K::neon::DotUsable() ? "has it (neon-dotprod checked)" : "lacks it (neon-dotprod not run)");
#else
  const K::Isa best = K::SelectIsa(gavel::settings::IsaCap::kNone);
  if (best >= K::Isa::Avx2) isas.push_back(I8Isa::Avx2);
  if (best >= K::Isa::Avx512 && K::SelectI8Isa(K::Isa::Avx512) == I8Isa::Avx512Vnni) isas.push_back(I8Isa::Avx512Vnni);
  std::printf("kernels' best instruction set: %s\n", K::IsaName(best));
#endif
  return isas;
}

// ---- ListScores8 and RefinedScore over one coded list ----------------------------------------------

struct Worst {
  double refined = 0, share = 0;  // the largest |R − R*| over its bound, and over RefinedBound's share
};

void CheckList(I8Isa isa, int64_t c, Worst& worst) {
  const int64_t dim = Dim(), dim4 = K::Dim4(dim);
  const int64_t n = Uniform(1, 100);
  const Shape keyShape = static_cast<Shape>(Uniform(0, kShapes - 1));
  std::vector<float> keys = Draw(n, dim, keyShape);
  V::ListCodes lc;
  std::vector<int8_t> scratch(static_cast<size_t>(dim4 * 4));
  const double deadRate = Chance(0.3) ? Real(0, 0.5) : 0.0;
  std::vector<char> dead(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    dead[j] = Chance(deadRate);
    V::CodeKey(lc, j, keys.data() + j * dim, dim, dead[j] != 0, scratch.data());
  }
  lc.n = n;
  const int64_t nr = Uniform(1, 20);
  const Shape rowShape = Chance(0.3) ? static_cast<Shape>(Uniform(0, kShapes - 1)) : keyShape;
  std::vector<float> rows = Draw(nr, dim, rowShape);
  std::vector<int64_t> all(static_cast<size_t>(nr));
  for (int64_t r = 0; r < nr; ++r) all[r] = r;
  const K::I8Queries Q = K::QuantizeQueries(rows.data(), all, dim, K::I8QueryMax(isa));
  std::vector<const int8_t*> qp(static_cast<size_t>(nr));
  for (int64_t r = 0; r < nr; ++r) qp[r] = Q.q.data() + r * Q.rowBytes;
  const int64_t width = static_cast<int64_t>(lc.scale.size()), ldP = width + Uniform(0, 3);
  const float sentinel = -1234.5f;
  std::vector<float> Pref(static_cast<size_t>(nr * ldP), sentinel), Pvec(Pref.size(), sentinel);
  V::ListScores8(I8Isa::Scalar, lc, dim4, qp.data(), Q.corr.data(), Q.b.data(), nr, Pref.data(), ldP);
  V::ListScores8(isa, lc, dim4, qp.data(), Q.corr.data(), Q.b.data(), nr, Pvec.data(), ldP);
  const std::string what = std::string("ListScores8 ") + K::I8IsaName(isa) + " case " + std::to_string(c) + ": dim " +
                           std::to_string(dim) + ", " + std::to_string(n) + " keys (" + kShapeName[keyShape] + "), " +
                           std::to_string(nr) + " rows (" + kShapeName[rowShape] + ")";
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t j = 0; j < ldP; ++j) {
      const float a = Pref[r * ldP + j], b = Pvec[r * ldP + j];
      if (Bits(a) != Bits(b) || (j >= width && Bits(b) != Bits(sentinel))) {
        char buf[160];
        std::snprintf(buf, sizeof(buf), " row %" PRId64 " key %" PRId64 ": %.9g (0x%08x) vs %.9g (0x%08x)", r, j, a, Bits(a), b, Bits(b));
        Fail(what + buf);
        return;
      }
    }

  // RefinedScore of every live key against the float32 rows (zero-padded to dim4·4)
  std::vector<float> qf(static_cast<size_t>(dim4 * 4), 0.f);
  const double cc = 1.01 * double(dim + 8) * kU;
  for (int64_t r = 0; r < nr; ++r) {
    std::copy(rows.begin() + r * dim, rows.begin() + (r + 1) * dim, qf.begin());
    const double share = 2 * cc * double(Q.norm[r]) * double(lc.maxNorm2);
    for (int64_t j = 0; j < n; ++j) {
      if (dead[j]) continue;
      const float Rs = V::RefinedScore(I8Isa::Scalar, lc, j, qf.data(), dim4);
      const float Rv = V::RefinedScore(isa, lc, j, qf.data(), dim4);
      const uint8_t* T = lc.tiles.data() + (j / V::kCodeTile) * dim4 * 64 + (j % V::kCodeTile) * 4;
      const uint8_t* F = lc.fine.data() + j * dim4 * 2;
      double S1 = 0, S2 = 0, A1 = 0, A2 = 0;
      for (int64_t d = 0; d < dim; ++d) {
        const double k = int(T[(d / 4) * 64 + d % 4]) - 128, e = int((F[d / 2] >> (4 * (d & 1))) & 0x0F) - 8;
        S1 += double(qf[d]) * k;
        S2 += double(qf[d]) * e;
        A1 += std::fabs(double(qf[d]) * k);
        A2 += std::fabs(double(qf[d]) * e);
      }
      A1 *= lc.scale[j];
      A2 *= lc.scale2[j];
      const double Rx = S1 * lc.scale[j] + S2 * lc.scale2[j];
      const double tiny = std::ldexp(A1 + A2, -40);  // the float64 reference's own rounding, and more
      const auto bound = [&](float R) { return 1.01 * double(dim + 1) * kU * (A1 + A2) + 1.01 * kU * std::fabs(double(R)) + tiny; };
      const double es = std::fabs(double(Rs) - Rx), ev = std::fabs(double(Rv) - Rx);
      const bool ok = std::isfinite(Rv) && es <= bound(Rs) && ev <= bound(Rv) && ev <= share + tiny &&
                      std::fabs(double(Rv) - double(Rs)) <= bound(Rs) + bound(Rv);
      if (bound(Rv) > 0) worst.refined = std::max(worst.refined, ev / bound(Rv));
      if (share > 0) worst.share = std::max(worst.share, ev / share);
      if (!ok) {
        char buf[240];
        std::snprintf(buf, sizeof(buf), " RefinedScore row %" PRId64 " key %" PRId64 ": plain %.9g, vector %.9g, float64 %.12g, bound %.3g, RefinedBound's share %.3g",
                      r, j, Rs, Rv, Rx, bound(Rv), share);
        Fail(what + buf);
        return;
      }
    }
  }
}

// ---- stage 1 (I8SkillMax) ---------------------------------------------------------------------------

void CheckSkill(I8Isa isa, int64_t c) {
  const int64_t dim = Dim();
  const int64_t rows = Chance(0.1) ? Uniform(1, 3) : Uniform(1, 100);
  const Shape keyShape = static_cast<Shape>(Uniform(0, kShapes - 1));
  std::vector<float> keys = Draw(rows, dim, keyShape);
  const bool half = Chance(0.3);
  K::I8Skill sk;
  if (half) {
    std::vector<uint16_t> h(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) h[i] = gavel::FloatToHalf(keys[i]);
    sk = K::QuantizeSkill(nullptr, h.data(), rows, dim);
  } else {
    sk = K::QuantizeSkill(keys.data(), nullptr, rows, dim);
  }
  const int64_t nq = Uniform(1, 13), ostride = Uniform(1, 3);
  const Shape rowShape = Chance(0.3) ? static_cast<Shape>(Uniform(0, kShapes - 1)) : keyShape;
  std::vector<float> q = Draw(nq, dim, rowShape);
  std::vector<int64_t> all(static_cast<size_t>(nq));
  for (int64_t a = 0; a < nq; ++a) all[a] = a;
  const K::I8Queries Q = K::QuantizeQueries(q.data(), all, dim, K::I8QueryMax(isa));
  const float sentinel = -1234.5f;
  std::vector<float> ref(static_cast<size_t>(nq * ostride), sentinel), vec(ref.size(), sentinel);
  K::I8SkillMax(I8Isa::Scalar, Q, sk, dim, ref.data(), ostride);
  K::I8SkillMax(isa, Q, sk, dim, vec.data(), ostride);
  for (size_t i = 0; i < ref.size(); ++i)
    if (Bits(ref[i]) != Bits(vec[i]) || (i % ostride != 0 && Bits(vec[i]) != Bits(sentinel))) {
      char buf[240];
      std::snprintf(buf, sizeof(buf), "stage 1 %s case %" PRId64 ": dim %" PRId64 ", %" PRId64 " %s keys (%s), %" PRId64 " rows (%s), out[%zu]: %.9g vs %.9g",
                    K::I8IsaName(isa), c, dim, rows, half ? "f16" : "f32", kShapeName[keyShape], nq, kShapeName[rowShape], i, ref[i], vec[i]);
      Fail(buf);
      return;
    }
}

// ---- PassingKeys ------------------------------------------------------------------------------------

void CheckPassing(I8Isa isa, int64_t c) {
  const int64_t n = Chance(0.05) ? 0 : Uniform(1, 200);
  std::vector<float> p(static_cast<size_t>(n));
  const double spread = std::pow(10.0, Real(-2, 2));
  for (float& x : p) x = static_cast<float>(Gauss() * spread);
  const float hw = static_cast<float>(Real(0, 1) * spread);
  float low = static_cast<float>(Gauss() * spread + 2 * spread);
  const double odd = Real(0, 0.2);
  for (int64_t j = 0; j < n; ++j) {
    if (!Chance(odd)) continue;
    switch (Uniform(0, 4)) {
      case 0: p[j] = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: p[j] = std::numeric_limits<float>::infinity(); break;
      case 2: p[j] = -std::numeric_limits<float>::infinity(); break;
      default: p[j] = low - hw;  // p + hw on (or a rounding off) the floor
    }
  }
  if (Chance(0.05)) low = -std::numeric_limits<float>::infinity();  // no floor yet: all pass
  if (Chance(0.05)) low = std::numeric_limits<float>::infinity();   // only NaN passes
  if (Chance(0.05)) low = std::numeric_limits<float>::quiet_NaN();  // every compare unordered: all pass
  std::vector<int32_t> ref{-7}, vec{-7};  // appended to
  V::PassingKeys(I8Isa::Scalar, p.data(), n, hw, low, ref);
  V::PassingKeys(isa, p.data(), n, hw, low, vec);
  if (ref != vec)
    Fail(std::string("PassingKeys ") + K::I8IsaName(isa) + " case " + std::to_string(c) + ": " + std::to_string(n) +
         " scores, " + std::to_string(ref.size() - 1) + " pass in the plain loop, " + std::to_string(vec.size() - 1) +
         " in the vector one");
}

// ---- the glance through the prefilter against the exact glance ------------------------------------------

void CheckGlance(int64_t c, I8Isa expect) {
  const int64_t dim = Dim(), nSkills = Uniform(3, 40), nq = Uniform(1, 20);
  std::vector<std::vector<float>> keys(static_cast<size_t>(nSkills));
  std::vector<const float*> base(static_cast<size_t>(nSkills));
  std::vector<int64_t> offsets(static_cast<size_t>(nSkills) + 1, 0);
  // clustered around a few directions: many skills close to each row, so the bound keeps several
  std::vector<float> centers = Draw(3, dim, kGauss);
  for (int64_t s = 0; s < nSkills; ++s) {
    const int64_t rows = Chance(0.1) ? 0 : Uniform(1, 40);
    keys[s] = Draw(rows, dim, Chance(0.8) ? kGauss : static_cast<Shape>(Uniform(0, kShapes - 1)));
    const float* ctr = centers.data() + Uniform(0, 2) * dim;
    for (int64_t j = 0; j < rows; ++j)
      for (int64_t d = 0; d < dim; ++d) keys[s][j * dim + d] += 3 * ctr[d];
    base[s] = keys[s].data();
    offsets[s + 1] = offsets[s] + rows;
  }
  std::vector<float> q = Draw(nq, dim, kGauss);
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t d = 0; d < dim; ++d) q[i * dim + d] += 3 * centers[Uniform(0, 2) * dim + d];
  std::vector<float> w(static_cast<size_t>(nq));
  for (float& x : w) x = Chance(0.2) ? 0.f : static_cast<float>(Real(0.1, 2));
  w[Uniform(0, nq - 1)] = 1.f;
  std::vector<K::I8Skill> i8(static_cast<size_t>(nSkills));
  std::vector<const K::I8Skill*> i8p(static_cast<size_t>(nSkills));
  for (int64_t s = 0; s < nSkills; ++s) {
    i8[s] = K::QuantizeSkill(keys[s].data(), nullptr, offsets[s + 1] - offsets[s], dim);
    i8p[s] = &i8[s];
  }
  const K::SkillKeys sk{base.data(), offsets.data(), nSkills, nullptr};
  const int64_t k = Uniform(1, std::min<int64_t>(5, nSkills - 1)), detail = Uniform(0, 4);
  const K::Isa isa = K::SelectIsa(gavel::settings::IsaCap::kNone);
  std::vector<int64_t> columns;
  K::I8Stats st;
  const K::GlanceResult r8 = K::GlanceI8(q.data(), nq, sk, i8p.data(), dim, w.data(), k, detail, isa, 2, columns, &st);
  const K::GlanceResult ex = K::Glance(q.data(), nq, sk, dim, w.data(), k, isa, 2);
  std::string what = "GlanceI8 case " + std::to_string(c) + ": dim " + std::to_string(dim) + ", " + std::to_string(nSkills) +
                     " skills, " + std::to_string(nq) + " rows, k " + std::to_string(k);
  if (st.exactFallback) return Fail(what + ": took the exact fallback");
  if (st.isa != expect) return Fail(what + ": ran " + K::I8IsaName(st.isa) + ", not " + K::I8IsaName(expect));
  for (int64_t s = 0; s < nSkills; ++s)
    if (Bits(r8.g[s]) != Bits(ex.g[s])) return Fail(what + ": g of skill " + std::to_string(s));
  const int64_t nc = static_cast<int64_t>(columns.size());
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t j = 0; j < nc; ++j)
      if (Bits(r8.m[i * nc + j]) != Bits(ex.m[i * nSkills + columns[j]]) || r8.argmax[i * nc + j] != ex.argmax[i * nSkills + columns[j]])
        return Fail(what + ": m / argmax of column " + std::to_string(j));
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t cases = argc > 1 ? std::max<int64_t>(1, std::atoll(argv[1])) : 300;
  uint64_t seed = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  if (const char* env = std::getenv("GAVEL_TEST_SEED")) seed = std::strtoull(env, nullptr, 10);
  if (argc > 2) seed = std::strtoull(argv[2], nullptr, 10);
  std::printf("i8_neon_check seed: %" PRIu64 " (replay: i8_neon_check %" PRId64 " %" PRIu64 ")\n", seed, cases, seed);
  const std::vector<I8Isa> isas = VectorIsas();
  const I8Isa expect = K::SelectI8Isa(K::SelectIsa(gavel::settings::IsaCap::kNone));
  if (isas.empty()) std::printf("no vector int8 path on this CPU: only the glance check runs (plain loops)\n");
  for (const I8Isa isa : isas) {
    rng.seed(seed);
    const int before = failures;
    Worst worst;
    for (int64_t c = 0; c < cases; ++c) CheckList(isa, c, worst);
    for (int64_t c = 0; c < cases; ++c) CheckSkill(isa, c);
    for (int64_t c = 0; c < 10 * cases; ++c) CheckPassing(isa, c);
    std::printf("%-13s %" PRId64 " lists (ListScores8 bit for bit, RefinedScore: worst |R - R*| %.3f of its bound, %.2e of RefinedBound's share), %" PRId64 " skills (stage 1 bit for bit), %" PRId64 " PassingKeys: %s\n",
                K::I8IsaName(isa), cases, worst.refined, worst.share, cases, 10 * cases, failures == before ? "same" : "DIFFERENT");
  }
  rng.seed(seed ^ 0x5bd1e995u);
  const int before = failures;
  const int64_t glances = std::max<int64_t>(1, cases / 5);
  for (int64_t c = 0; c < glances; ++c) CheckGlance(c, expect);
  std::printf("GlanceI8 (%s) against Glance: %" PRId64 " glances, g and the columns' m / argmax bit for bit: %s\n", K::I8IsaName(expect), glances,
              failures == before ? "same" : "DIFFERENT");
  std::printf("%s\n", failures == 0 ? "all same" : (std::to_string(failures) + " differences").c_str());
  return failures == 0 ? 0 : 1;
}
