// The router's numeric kernels as plain C++ (no N-API): the farthest-first ε-cover and the glance
// (max-sim + top-k vote). kernels_napi.cpp validates JS arguments and calls these; they trust their
// inputs apart from the finiteness of the bank (see Glance).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gavel::kernels {

// Instruction sets the inner loops are compiled for; the best one the CPU supports is picked at run
// time, so one prebuilt addon serves every x86-64 machine.
enum class Isa { Generic = 0, Avx2 = 1, Avx512 = 2 };

// Best supported ISA, capped by `cap` ("generic" | "avx2" | "avx512", or null for no cap). The cap
// comes from the GAVEL_KERNEL_ISA environment variable, which lets tests run every code path.
Isa SelectIsa(const char* cap);
const char* IsaName(Isa isa);

// Farthest-first traversal of the n × dim row-major keys: retained indices, key 0 first, until every
// key lies within eps of a retained one. Distances are computed in float32, so "within eps" holds up
// to float rounding (≈1e-6 for unit keys); retained keys are pairwise > eps apart up to the same.
std::vector<int32_t> CoverFarthestFirst(const float* keys, int64_t n, int64_t dim, double eps, Isa isa);

struct GlanceResult {
  std::vector<float> g;         // nSkills
  std::vector<float> m;         // nq × nSkills
  std::vector<int32_t> argmax;  // nq × nSkills
};

// The glance. offsets has nSkills + 1 entries, 0 = offsets[0] ≤ … ≤ offsets[nSkills] = bank rows;
// weights are finite, ≥ 0 and sum to > 0; k ≥ 1 (k ≥ nSkills puts every skill in every top-k).
// A skill with no keys scores m = -1 (the least inner product of unit vectors) with argmax -1, and
// takes part in the top-k like any other skill. Top-k ties go to the lower skill index.
// Throws gavel::Failure("INVALID_ARGUMENT") if a score comes out non-finite (NaN/Inf in the bank).
GlanceResult Glance(const float* queries, int64_t nq, const float* bank, const int32_t* offsets,
                    int64_t nSkills, int64_t dim, const float* weights, int64_t k, Isa isa,
                    unsigned threads);

}  // namespace gavel::kernels
