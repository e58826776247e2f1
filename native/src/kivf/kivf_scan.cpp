// The key IVF's scan (kivf_scan.h): kivf_scan_body.inc stamped once per instruction set, each copy
// compiled for its own target as the kernels' (kernels/simd_variant.inc), picked at run time by the
// same Isa.
#include "kivf/kivf_scan.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#ifndef GAVEL_KIVF_PRAGMA
#define GAVEL_KIVF_PRAGMA_STR(...) _Pragma(#__VA_ARGS__)
#define GAVEL_KIVF_PRAGMA(...) GAVEL_KIVF_PRAGMA_STR(__VA_ARGS__)
#endif

// generic: the kernels' SSE2 / NEON baseline copy (NR 8, KC 512)
#define GAVEL_KIVF_NS kivf_generic
#define GAVEL_KIVF_LEVEL 0
#define GAVEL_KIVF_KC 512
#include "kivf/kivf_scan_body.inc"
#undef GAVEL_KIVF_NS
#undef GAVEL_KIVF_LEVEL
#undef GAVEL_KIVF_KC

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GAVEL_KIVF_X86 1
// AVX2 + FMA: the kernels' NR 16, KC 256
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
#define GAVEL_KIVF_NS kivf_avx2
#define GAVEL_KIVF_LEVEL 1
#define GAVEL_KIVF_KC 256
#include "kivf/kivf_scan_body.inc"
#undef GAVEL_KIVF_NS
#undef GAVEL_KIVF_LEVEL
#undef GAVEL_KIVF_KC
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
// AVX-512: the kernels' NR 32, KC 128
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c")
#endif
#define GAVEL_KIVF_NS kivf_avx512
#define GAVEL_KIVF_LEVEL 2
#define GAVEL_KIVF_KC 128
#include "kivf/kivf_scan_body.inc"
#undef GAVEL_KIVF_NS
#undef GAVEL_KIVF_LEVEL
#undef GAVEL_KIVF_KC
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

namespace gavel::kivf {

int ScanPanelRows(kernels::Isa isa, int64_t nr) {
  switch (isa) {
#ifdef GAVEL_KIVF_X86
    case kernels::Isa::Avx512: return kivf_avx512::PanelRows(nr);
    case kernels::Isa::Avx2: return kivf_avx2::PanelRows(nr);
#endif
    default: return kivf_generic::PanelRows(nr);
  }
}

void ScanPackRows(kernels::Isa isa, const float* const* rows, int64_t nr, int64_t dim, float* Rp) {
  const int P = ScanPanelRows(isa, nr);
  switch (isa) {
#ifdef GAVEL_KIVF_X86
    case kernels::Isa::Avx512: return kivf_avx512::PackRows(rows, nr, dim, P, Rp);
    case kernels::Isa::Avx2: return kivf_avx2::PackRows(rows, nr, dim, P, Rp);
#endif
    default: return kivf_generic::PackRows(rows, nr, dim, P, Rp);
  }
}

void ScanList(kernels::Isa isa, const float* const* keys, int64_t nk, const float* Rp, int64_t nr, int64_t dim,
              const float* zero, float* S) {
  switch (isa) {
#ifdef GAVEL_KIVF_X86
    case kernels::Isa::Avx512: return kivf_avx512::Scan(keys, nk, Rp, nr, dim, zero, S);
    case kernels::Isa::Avx2: return kivf_avx2::Scan(keys, nk, Rp, nr, dim, zero, S);
#endif
    default: return kivf_generic::Scan(keys, nk, Rp, nr, dim, zero, S);
  }
}

}  // namespace gavel::kivf
