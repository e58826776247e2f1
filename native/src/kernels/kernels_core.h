// The router's numeric kernels as plain C++ (no N-API): the farthest-first ε-cover, the glance
// (max-sim + top-k vote) and the install-time projection (y = normalize(W h)). kernels_napi.cpp
// validates JS arguments and calls these; they trust their inputs apart from the finiteness of the
// keys (see Glance) and of the projection's operands (see ProjectNormalize).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/settings.h"

namespace gavel::kernels {

// Instruction sets the inner loops are compiled for; the best one the CPU supports is picked at run
// time, so one prebuilt addon serves every x86-64 machine.
enum class Isa { Generic = 0, Avx2 = 1, Avx512 = 2 };

// Best supported ISA, capped by `cap` (settings::IsaCap::kNone: no cap). The cap is the
// GAVEL_KERNEL_ISA setting (common/settings.h), which lets tests and benches run every code path.
Isa SelectIsa(settings::IsaCap cap);
const char* IsaName(Isa isa);

// SelectIsa capped by the current GAVEL_KERNEL_ISA setting (read at each call).
Isa CurrentIsa();

// The one GEMM driver of the addon (the projection's and the trainer's): C (n × m) = A (n × k) · Bᵀ
// (B is m × k), all row-major, through the packed micro-kernel of simd_body.inc (B packed into
// column panels, register tiles), threaded over A's rows or over B's panels when A has few rows;
// one thread below ~4 MFLOP (threads = 0: every core). Products accumulate in float32 per 512-wide
// k-block. Trusts its inputs.
void MatMulABt(const float* A, int64_t n, int64_t k, const float* B, int64_t m, float* C, Isa isa, unsigned threads);

// The key IVF's centroid scores, MatMulABt's C bit for bit without its clearing, packing or copies:
// PackQueryPanels packs the nq × dim queries once (into Qp, resized), then each ScorePanels call
// writes S[i·ldS + j] = <Q_i, B_j> for the nb rows of B (row-major, dim floats each), every element of
// that nq × nb block and nothing else; scratch is the caller's (one per thread). One thread each.
void PackQueryPanels(const float* Q, int64_t nq, int64_t dim, Isa isa, std::vector<float>& Qp);
void ScorePanels(const float* Qp, int64_t nq, int64_t dim, const float* B, int64_t nb, float* S, int64_t ldS, Isa isa,
                 std::vector<float>& scratch);

// Farthest-first traversal of the n × dim row-major keys: retained indices, key 0 first, until every
// key lies within eps of a retained one. Distances are computed in float32, so "within eps" holds up
// to float rounding (≈1e-6 for unit keys); retained keys are pairwise > eps apart up to the same.
std::vector<int32_t> CoverFarthestFirst(const float* keys, int64_t n, int64_t dim, double eps, Isa isa);

// log Σ exp(row[i]) over n floats (the verdict's log-normaliser of one vocabulary-wide logits row):
// a vectorised exp with float lanes summed into double per block, within ~1e-6 of a float64
// logsumexp of the same floats (simd_body.inc says why). -inf for n = 0.
double LogSumExp(const float* row, int64_t n, Isa isa);

// x[i] rounded to f16 in place and its bits in half[i] (round to nearest even: FloatToHalf's bits for
// every non-NaN value), and f16 bits back to float32 (exact): the states cache's f16 entries, F16C
// where the ISA has it.
void RoundToHalf(float* x, uint16_t* half, int64_t n, Isa isa);
void HalfToFloats(const uint16_t* half, float* x, int64_t n, Isa isa);
// x's f16 bits into half while every value fits f16 (finite, |x| < 65520): the index of the first
// that does not, else -1. The device glance's queries and float32 keys, on the host.
int64_t FloatsToHalf(const float* x, uint16_t* half, int64_t n, Isa isa);

struct GlanceResult {
  std::vector<float> g;         // nSkills
  std::vector<float> m;         // nq × nSkills
  std::vector<int32_t> argmax;  // nq × nSkills
};

// Where each skill's keys live. Skill s has rows offsets[s] … offsets[s+1] − 1 in a global
// numbering, stored contiguously (dim floats per row) from base[s]; skills need not be adjacent in
// memory. One flat bank is the special case base[s] = bank + offsets[s]·dim; a NativeBank hands
// one buffer per skill. offsets has nSkills + 1 entries, 0 = offsets[0] ≤ … ≤ offsets[nSkills].
// When `half` is set the keys are IEEE f16 bit patterns (common/half.h) from half[s] and `base` is
// not read: a KeyBank with 16-bit keys. The max-sim converts each key panel to float32 as it packs
// it (F16C on AVX2 / AVX-512), so the products and their order are those of the float32 path over
// the rounded keys.
struct SkillKeys {
  const float* const* base;
  const int64_t* offsets;
  int64_t nSkills;
  const uint16_t* const* half = nullptr;
};

// The glance. weights are finite, ≥ 0 and sum to > 0; k ≥ 1 (k ≥ nSkills puts every skill in every
// top-k). A skill with no keys scores m = -1 (the least inner product of unit vectors) with argmax
// -1, and takes part in the top-k like any other skill. Top-k ties go to the lower skill index,
// argmax ties to the lower key index.
// Throws gavel::Failure(Code::INVALID_ARGUMENT) if a score comes out non-finite (NaN/Inf in the keys).
// `stop`, when given, is polled between blocks of keys (≈64 KiB each) and between query rows of the
// vote; once it reads true the call throws gavel::Failure(Code::ABORTED).
GlanceResult Glance(const float* queries, int64_t nq, const SkillKeys& keys, int64_t dim, const float* weights,
                    int64_t k, Isa isa, unsigned threads, const std::atomic<bool>* stop = nullptr);

// The glance's max-sim alone, for the skills [s0, s1) of `keys`: m[i·keys.nSkills + s] and argmax as
// Glance computes them (m must hold -inf there on entry; skills without keys are left alone). Each
// score is one float32 FMA chain over the dimension whatever the rows around it, so a subset of the
// query rows gets the same bits as the whole glance (the int8 prefilter's stage 2, i8_glance.h).
// Returns false if a score came out non-finite.
bool MaxSimSkills(const float* queries, int64_t nq, const SkillKeys& keys, int64_t s0, int64_t s1, int64_t dim,
                  float* m, int32_t* argmax, Isa isa);

// Columns `pick` (positions among nAll skills) of a glance's m and argmax (nq × nAll) into out.m
// and out.argmax (nq × nPick, in pick order): a glance asked for the `detail` of a few columns.
void GatherSkills(const float* m, const int32_t* argmax, int64_t nq, int64_t nAll, const int64_t* pick, int64_t nPick,
                  GlanceResult& out);

// The `n` best columns of g (larger g first, ties to the lower column), n ≤ g.size(): the columns a
// glance asked for `detail` reports m and argmax of.
std::vector<int64_t> TopColumns(const std::vector<float>& g, int64_t n);

// The glance's second half, for a caller that computed r.m and r.argmax itself: skills without
// keys get m = -1, then the top-k vote fills r.g. Same contract as Glance.
void Vote(GlanceResult& r, int64_t nq, const int64_t* offsets, int64_t nSkills, const float* weights, int64_t k,
          unsigned threads, const std::atomic<bool>* stop = nullptr);

// The same over one flat bank (rows offsets[s] … offsets[s+1] − 1 of `bank` for skill s, offsets
// ending at the bank's row count).
GlanceResult Glance(const float* queries, int64_t nq, const float* bank, const int32_t* offsets, int64_t nSkills,
                    int64_t dim, const float* weights, int64_t k, Isa isa, unsigned threads,
                    const std::atomic<bool>* stop = nullptr);

// Y = rows of normalize(W h) for each row h of H: H is n × inDim, W outDim × inDim (row-major, the
// paper's W_q / W_s), Y n × outDim: MatMulABt (k-blocks in L1, W panels in L2, register tiles),
// threaded over rows (or over W's rows when n is small). Products accumulate in float32 per
// 512-wide k-block; the norm is taken in double. A row whose product is exactly zero stays zero
// (no direction to normalise to). Throws Failure(Code::INVALID_ARGUMENT) if H or W holds NaN/Inf or a
// product overflows float32.
std::vector<float> ProjectNormalize(const float* H, int64_t n, int64_t inDim, const float* W, int64_t outDim, Isa isa,
                                    unsigned threads);

// Checks of a glance's caller-given inputs, shared by the flat glance and the bank's (both N-API
// surfaces); each throws Failure(INVALID_ARGUMENT) with a message naming the argument.
// Query tokens nq (≥ 1) of qlen = nq × dim finite floats.
int64_t CheckQueries(const float* queries, int64_t qlen, int64_t dim);
// nq weights, finite, ≥ 0, with a positive sum.
void CheckWeights(const float* weights, int64_t wlen, int64_t nq);
// nq × nSkills fits one result array.
void CheckResultSize(int64_t nq, int64_t nSkills);

}  // namespace gavel::kernels
