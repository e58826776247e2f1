// The exact glance through an int8 prefilter: the same g (and the same m / argmax for the columns
// asked for) as kernels::Glance, bit for bit, computing the float32 max-sim only for the (row, skill)
// pairs an int8 bound cannot rule out of the row's top-k.
//
// Quantisation (symmetric, per vector): a key k (float32, or the f32 value of an f16 key) gets the
// scale a = max|k_d| / 127 and k_q[d] = round(k_d / a) ∈ [-127, 127]; k̃ = a·k_q and e_k = k − k̃.
// A query row q gets b = max|q_d| / QMAX (QMAX = 127, or 64 where the int8 product runs on AVX2's
// vpmaddubsw, whose 16-bit pair sums must not saturate), q̃ = b·q_q, e_q = q − q̃.
//
// The bound. For every query row q and key k,
//   q·k − q̃·k̃ = q·(k − k̃) + (q − q̃)·k̃ = q·e_k + e_q·k̃,
// so by Cauchy–Schwarz |q·k − q̃·k̃| ≤ ‖q‖·‖e_k‖ + ‖e_q‖·‖k̃‖. q̃·k̃ = a·b·Σ_d q_q[d]·k_q[d], and that
// sum is exact in int32 (|Σ| ≤ 127·127·dim < 2³¹ for dim < 133K; the unsigned offset of the VNNI
// operand, +128, is taken off exactly in int32). What the f32 glance computes is not q·k but an f32
// FMA chain, within γ_dim·Σ|q_d k_d| ≤ γ_dim·‖q‖·‖k‖ of it (γ_n = n·u / (1 − n·u), u = 2⁻²⁴, any
// summation order). The approximation P = fl(fl(fl(Σ)·a)·b) is within 3u·|q̃·k̃| ≤ 3u·‖q̃‖·‖k̃‖ of
// a·b·Σ. With N = ‖q‖ + ‖e_q‖ (≥ ‖q‖, ‖q̃‖) and K = ‖k‖ + ‖e_k‖ (≥ ‖k‖, ‖k̃‖):
//   |fl32(q·k) − P| ≤ ‖q‖·‖e_k‖ + ‖e_q‖·K + c·N·K,   c = 1.01·(dim + 8)·u,
// where c covers γ_dim (≤ 1.01·dim·u for dim·u < 0.0099), P's 3u and the rounding of the bound's
// own sum and difference (≤ 4u·(|P| + E)); the norms are taken in double and rounded up, and the
// bound E computed in float is scaled by 1 + 2⁻¹⁰. Over a skill (max of the per-key ‖e_k‖ and K):
//   L_i(s) = max_k P_ik − E_i(s) ≤ m_i(s) ≤ max_k P_ik + E_i(s) = U_i(s).
// Per row, with τ_i the k-th largest L_i(s), a skill with U_i(s) < τ_i scores strictly below k
// skills and is outside the exact top-k whatever the tie rule; the others (U_i(s) ≥ τ_i, ties
// kept) are recomputed with the glance's own f32 max-sim and ranked exactly as Vote ranks them.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "kernels/kernels_core.h"

namespace gavel::kernels {

// The quantiser and the query side of the bound, shared with the key IVF's int8 list codes
// (kivf/kivf_i8.cpp).
struct Quantized {
  float scale = 0.f;
  float errNorm = 0.f;  // ‖v − scale·v_q‖, rounded up
  float norm = 0.f;     // ‖v‖, rounded up
  bool finite = true;
};
// v (dim floats) → q (dim int8 in [-qmax, qmax]) with its scale and error norm.
Quantized QuantizeVector(const float* v, int64_t dim, int qmax, int8_t* q);
// x rounded up to a float (≥ x).
float UpFloat(double x);
// Groups of 4 dimensions (dim padded with zeros to a multiple of 4).
int64_t Dim4(int64_t dim);

// The queries of the active rows, quantised: rows of dim4·4 int8 (zero-padded), and per row the
// VNNI / maddubs offset correction 128·Σ q_q, the scale b, α = ‖q‖ and β = ‖e_q‖ + c·N.
struct I8Queries {
  std::vector<int8_t> q;
  std::vector<int32_t> corr;
  std::vector<float> b, alpha, beta, norm;  // norm: N = ‖q‖ + ‖e_q‖
  int64_t n = 0, rowBytes = 0;
};
// rows: the query rows to quantise (in that order); qmax: I8QueryMax of the product's instruction set.
I8Queries QuantizeQueries(const float* queries, const std::vector<int64_t>& rows, int64_t dim, int qmax);

// One skill's keys in int8, d4-major: for each group of 4 dimensions (dim padded with zeros to a
// multiple of 4), every key's 4 bytes, key after key: byte (d4·rows + j)·4 + t is key j's dimension
// 4·d4 + t, as k_q + 128 (the unsigned operand of vpdpbusd / vpmaddubsw). A row of 16 keys at one
// d4 is one 64-byte vector.
struct I8Skill {
  std::vector<uint8_t> keys;  // dim4 × rows × 4
  std::vector<float> scale;   // rows: a per key
  int64_t rows = 0;
  float maxErr = 0.f;   // max over keys of ‖e_k‖ (rounded up)
  float maxNorm = 0.f;  // max over keys of ‖k‖ + ‖e_k‖ (rounded up)
  bool finite = true;   // false: a key holds NaN/Inf (the glance then takes the exact path, which says so)
  int64_t Bytes() const { return static_cast<int64_t>(keys.capacity() + scale.capacity() * sizeof(float)) + 32; }
};

// Quantises one skill's `rows` keys (float32 from `f32`, or f16 bits from `half` when set).
I8Skill QuantizeSkill(const float* f32, const uint16_t* half, int64_t rows, int64_t dim);

// The int8 product's instruction set: VNNI's vpdpbusd on AVX-512, vpmaddubsw on AVX2, scalar
// otherwise on x86-64; picked from the kernels' Isa (capped like them) and the CPU's VNNI. On arm64,
// NEON (kernels/i8_neon.h) whatever the Isa (arm64 has one kernels level, generic, whose float loops
// are NEON too): ARMv8.2's sdot where the CPU reports it (NeonDot), else ARMv8.0's vmull / vpadal.
enum class I8Isa { Scalar = 0, Avx2 = 1, Avx512Vnni = 2, Neon = 3, NeonDot = 4 };
I8Isa SelectI8Isa(Isa isa);
const char* I8IsaName(I8Isa isa);
// The largest query code the product allows: 64 on AVX2 (vpmaddubsw's int16 pair sums), else 127.
inline int I8QueryMax(I8Isa isa) { return isa == I8Isa::Avx2 ? 64 : 127; }

struct I8Stats {
  int64_t pairs = 0;       // (row with weight > 0) × skill
  int64_t recomputed = 0;  // pairs whose f32 max-sim was computed
  double quantMs = 0, stage1Ms = 0, stage2Ms = 0, voteMs = 0;
  bool exactFallback = false;  // the plain exact glance ran instead (k ≥ skills, non-finite keys, full m asked)
  I8Isa isa = I8Isa::Scalar;
};

// The glance through the prefilter. `i8` holds one I8Skill per skill of `keys` (same order).
// detail < 0: the full m and argmax are asked, which the prefilter cannot give: the exact Glance
// runs. detail ≥ 0: r.g over every skill, and r.m / r.argmax (nq × columns.size()) for `columns`,
// the `detail` best columns by g (TopColumns). Same contract and failures as Glance.
GlanceResult GlanceI8(const float* queries, int64_t nq, const SkillKeys& keys, const I8Skill* const* i8, int64_t dim,
                      const float* weights, int64_t k, int64_t detail, Isa isa, unsigned threads,
                      std::vector<int64_t>& columns, I8Stats* stats = nullptr,
                      const std::atomic<bool>* stop = nullptr);

// Stage 1 of one skill alone, through `isa`'s kernel (which this CPU must run), for tests
// (native/test/i8_neon_check.cpp): out[a·ostride] = P of row a of Q against `sk` (-1 where sk has no
// keys).
void I8SkillMax(I8Isa isa, const I8Queries& Q, const I8Skill& sk, int64_t dim, float* out, int64_t ostride);

// Stage 1 alone, for tests: L and U (nq × nSkills, row-major) of every row and skill. Skills
// without keys get L = U = -1 (their m).
void I8Bounds(const float* queries, int64_t nq, const SkillKeys& keys, const I8Skill* const* i8, int64_t dim,
              I8Isa isa, unsigned threads, std::vector<float>& lower, std::vector<float>& upper);

}  // namespace gavel::kernels
