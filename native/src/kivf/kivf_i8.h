// The key IVF's int8 list codes (Glance's i8): each list's keys quantised to int8 in tiles, scored
// against int8 task rows, and a proven bound that leaves only the (row, key) pairs that may change a
// row's top k to the float32 scan. The bound is the exact glance prefilter's (kernels/i8_glance.h):
// for a row q and a key k of list c,
//   |fl32(q·k) − P| ≤ α_q·maxErr(c) + β_q·maxNorm(c)   (then scaled by 1 + 2⁻¹⁰)
// with P = fl(fl(Σ q_q·k_q)·a_k)·b_q, α_q = ‖q‖, β_q = ‖e_q‖ + c·N, and maxErr / maxNorm the largest
// ‖e_k‖ and ‖k‖ + ‖e_k‖ over the list's keys. Whatever f32 product chain computes q·k (the scan's
// included) lies within it.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/i8_glance.h"

namespace gavel::kivf {

// Keys a tile holds: one 64-byte vector per group of 4 dimensions.
constexpr int64_t kCodeTile = 16;

// One list's codes: key j (the list's j-th key id) is lane j % 16 of tile j / 16; byte
// (t·dim4 + d4)·64 + lane·4 + u of `tiles` is its dimension 4·d4 + u, as k_q + 128 (the unsigned
// operand of vpdpbusd / vpmaddubsw). A key that was dead when coded, and the lanes past the list's
// end, are zeros with scale 0. They cover the list's first `n` keys (lists only grow between
// compactions, which drop every list's codes).
//
// Each key's residual e_k = k − k̃ is also coded, in 4 bits (`fine`, key-major: key j's dimension d is
// the low (even d) or high (odd d) nibble of byte j·dim4·2 + d/2, as r_q + 8), with its own scale a2 =
// max|e_k,d| / 7: k̂ = a·k_q + a2·r_q is within ‖k − k̂‖ (about a fifteenth of ‖e_k‖) of the key. A key
// that passes the int8 bound is refined against its float32 row before the float32 scan reads it
// (RefinedScore, RefinedBound).
struct ListCodes {
  std::vector<uint8_t> tiles;
  std::vector<float> scale;  // a per key, padded to whole tiles with 0
  std::vector<uint8_t> fine;  // the residuals' 4-bit codes, dim4·2 bytes a key
  std::vector<float> scale2;  // a2 per key
  int64_t n = 0;
  float maxErr = 0.f;    // max ‖e_k‖ over the coded keys (rounded up)
  float maxNorm = 0.f;   // max ‖k‖ + ‖e_k‖ (rounded up)
  float maxErr2 = 0.f;   // max ‖k − k̂‖ (rounded up)
  float maxNorm2 = 0.f;  // max ‖k‖ + ‖a·k_q‖ + ‖a2·r_q‖ (rounded up)
  bool finite = true;    // false: a key holds NaN/Inf (the list is then scanned in float32 only)
  int64_t Bytes() const {
    return static_cast<int64_t>(tiles.capacity() + fine.capacity() + (scale.capacity() + scale2.capacity()) * sizeof(float)) + 40;
  }
};

// Codes key j of a list from its float32 values (dim floats), growing the tiles as needed. dead:
// writes the zero code. Widens maxErr / maxNorm; a non-finite key clears `finite`. scratch: Dim4(dim)·4
// bytes.
void CodeKey(ListCodes& lc, int64_t j, const float* key, int64_t dim, bool dead, int8_t* scratch);

// P[r·ldP + j] = fl(fl(Σ_d q_r[d]·k_j[d])·a_j)·b_r for the list's coded keys j < tiles·16 and nr
// query rows q_r (int8, dim4·4 bytes each, quantised for `isa`'s I8QueryMax), corr_r = 128·Σ q_r,
// b_r their scales. ldP ≥ tiles·16. On arm64 (NEON, kernels/i8_neon.h) corr is not read: the key bytes
// are flipped back to k_q and the sum taken directly, which is the same integer for that corr.
// The refined score of coded key j against a float32 row q (Dim4(dim)·4 floats, zero past dim):
// R = fl(a·Σ_d q_d·k_q[d]) + fl(a2·Σ_d q_d·r_q[d]), the sums in any order. For the float32 scan's
// score of the same pair, |fl32(q·k) − R| ≤ ‖q‖·‖k − k̂‖ + |q·k̂ − R| + |fl32(q·k) − q·k|
//   ≤ ‖q‖·maxErr2 + (γ_dim + 4u)·N·maxNorm2 (+ u·|R + E| for the test R + E < floor),
// N ≥ ‖q‖; RefinedBound returns ‖q‖·maxErr2 + 2c·N·maxNorm2 (c = 1.01·(dim + 8)·u ≥ γ_dim + 8u, as in
// the int8 bound), scaled by 1 + 2⁻¹⁰ for its own rounding: a key with R + E below the floor cannot
// reach it.
float RefinedScore(kernels::I8Isa isa, const ListCodes& lc, int64_t j, const float* q, int64_t dim4);
float RefinedBound(float alpha, float norm, const ListCodes& lc, int64_t dim);

// Appends to `out`, ascending, every j < n with !(p[j] + hw < low) (fl32 sums; a NaN passes): the keys
// of a row's int8 scores p that the bound hw cannot rule out against its floor `low`.
void PassingKeys(kernels::I8Isa isa, const float* p, int64_t n, float hw, float low, std::vector<int32_t>& out);

void ListScores8(kernels::I8Isa isa, const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr,
                 const float* b, int64_t nr, float* P, int64_t ldP);

}  // namespace gavel::kivf
