// The NEON int8 kernels (kernels/i8_neon.h): i8_neon_body.inc once for ARMv8.0-A and, where the
// compiler can target ARMv8.2's dot product without the build's baseline having it, once more for that
// target; the dot-product copy runs only where the CPU reports the feature (common/arm_features.h).
// Nothing here is compiled off arm64.
#include "kernels/i8_neon.h"

#if GAVEL_I8_NEON
#include <arm_neon.h>

#include <cstring>
#include <limits>
#include <vector>

#include "common/arm_features.h"

// The dot-product copy: always where the baseline has the feature; else through a target region
// (ARMv8.2-A + dot product: FEAT_DotProd is an ARMv8.2 extension, so every CPU with it is one), which
// GCC 8+ gives arm_neon.h's vdotq_s32 to, and clang from 16 (Apple clang 15), whose arm_neon.h gates
// its intrinsics by target attribute instead of by the baseline's macros. Nothing in the copy uses
// atomics or another ARMv8.1 / 8.2 instruction the region would allow.
#if defined(__ARM_FEATURE_DOTPROD)
#define GAVEL_I8_NEON_HAVE_DOT 1
#define GAVEL_I8_NEON_DOT_REGION 0
#elif defined(__clang__) && ((defined(__apple_build_version__) && __clang_major__ >= 15) || \
                             (!defined(__apple_build_version__) && __clang_major__ >= 16))
#define GAVEL_I8_NEON_HAVE_DOT 1
#define GAVEL_I8_NEON_DOT_REGION 1
#elif !defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8
#define GAVEL_I8_NEON_HAVE_DOT 1
#define GAVEL_I8_NEON_DOT_REGION 1
#else
#define GAVEL_I8_NEON_HAVE_DOT 0
#define GAVEL_I8_NEON_DOT_REGION 0
#endif

#define GAVEL_I8_NEON_DOT 0
#define GAVEL_I8_NEON_NS base
#include "kernels/i8_neon_body.inc"

#if GAVEL_I8_NEON_HAVE_DOT
#if GAVEL_I8_NEON_DOT_REGION
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")  // what arm_neon.h defines vdotq_s32 under
#endif
#endif
#define GAVEL_I8_NEON_DOT 1
#define GAVEL_I8_NEON_NS dot
#include "kernels/i8_neon_body.inc"
#if GAVEL_I8_NEON_DOT_REGION
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
#endif

namespace gavel::kernels::neon {

bool DotCompiled() { return GAVEL_I8_NEON_HAVE_DOT != 0; }

bool DotUsable() { return DotCompiled() && arm::HasDotProd(); }

void TileScores(bool dot, const uint8_t* tiles, const float* scale, int64_t tiles_n, int64_t dim4,
                const int8_t* const* q, const float* b, int64_t nr, float* P, int64_t ldP) {
#if GAVEL_I8_NEON_HAVE_DOT
  if (dot) return dot::TileScores(tiles, scale, tiles_n, dim4, q, b, nr, P, ldP);
#endif
  (void)dot;
  base::TileScores(tiles, scale, tiles_n, dim4, q, b, nr, P, ldP);
}

void SkillMax(bool dot, const uint8_t* keys, const float* scale, int64_t rows, int64_t dim4, const int8_t* q0,
              int64_t rowBytes, int64_t nq, const float* b, float* out, int64_t ostride) {
#if GAVEL_I8_NEON_HAVE_DOT
  if (dot) return dot::SkillMax(keys, scale, rows, dim4, q0, rowBytes, nq, b, out, ostride);
#endif
  (void)dot;
  base::SkillMax(keys, scale, rows, dim4, q0, rowBytes, nq, b, out, ostride);
}

}  // namespace gavel::kernels::neon

#else

namespace gavel::kernels::neon {
bool DotCompiled() { return false; }
bool DotUsable() { return false; }
}  // namespace gavel::kernels::neon

#endif
