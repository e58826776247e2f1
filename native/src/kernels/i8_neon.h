// The int8 products of the glance's prefilter (kernels/i8_glance.cpp, stage 1) and of the key IVF's list
// codes (kivf/kivf_i8.cpp, ListScores8) on arm64: NEON, in two copies, ARMv8.0-A's Advanced SIMD (every
// AArch64 CPU) and ARMv8.2's dot product (sdot, FEAT_DotProd, where the CPU reports it:
// common/arm_features.h). Off arm64 only DotCompiled / DotUsable are defined (both false).
//
// Both read keys coded as k_q + 128 (u8, k_q ∈ [-127, 127]) in groups of 4 dimensions: at group d4, 16
// consecutive keys are 64 bytes (key after key, 4 bytes each), and the next group of the same keys is
// `stride` bytes on (64 in a list's tiles, rows·4 in a skill's codes). Each key's bytes are taken back
// to k_q by flipping their top bit (XOR 0x80), and the integer sum is Σ_d k_q[d]·q_q[d] itself, which
// is the plain loops' −corr + Σ_d (k_q[d] + 128)·q_q[d] exactly when corr = 128·Σ_d q_q[d] (as
// QuantizeQueries makes it): the NEON kernels do not read corr. Queries are s8 in [-127, 127]
// (I8QueryMax 127). The ARMv8.0 copy multiplies in int16 (vmull_s8: |k·q| ≤ 127·127), adds adjacent
// pairs in int16 (≤ 2·127·127 = 32,258 < 2¹⁵, no saturation) and pairs of those into int32
// (vpadalq_s16); the dot-product copy sums 4 products into each int32 lane (sdot). Both are exact,
// so every int32 sum is the plain loops' and every float after it is the same operations in the same
// order: the results are the plain loops' bit for bit.
#pragma once
#include <cstdint>

// 1 where the NEON kernels are compiled (arm64 with GCC or clang), else 0.
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define GAVEL_I8_NEON 1
#else
#define GAVEL_I8_NEON 0
#endif

namespace gavel::kernels::neon {

// Whether the dot-product copy was compiled (GCC 8+, clang 16+, or a baseline with the feature).
bool DotCompiled();
// DotCompiled() and this CPU runs sdot.
bool DotUsable();

// TileScores and SkillMax exist where GAVEL_I8_NEON is 1.
// ListScores8 over a list's tiles (16 keys each, stride 64): P[r·ldP + 16t + l] =
// fl(fl(Σ)·scale[16t + l])·b[r] for every tile t < tiles and lane l, for the nr rows q[r] (dim4·4
// bytes each). dot: the dot-product copy (only where DotUsable()).
void TileScores(bool dot, const uint8_t* tiles, const float* scale, int64_t tiles_n, int64_t dim4,
                const int8_t* const* q, const float* b, int64_t nr, float* P, int64_t ldP);

// Stage 1 of one skill: out[a·ostride] = (max over its `rows` keys j of fl(fl(Σ)·scale[j]))·b[a] for
// the nq rows q0 + a·rowBytes; keys in I8Skill's layout (d4-major, rows·4 bytes a group), rows ≥ 1.
void SkillMax(bool dot, const uint8_t* keys, const float* scale, int64_t rows, int64_t dim4, const int8_t* q0,
              int64_t rowBytes, int64_t nq, const float* b, float* out, int64_t ostride);

}  // namespace gavel::kernels::neon
