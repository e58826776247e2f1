// The key IVF's int8 list codes (kivf_i8.h): coding a key, and the int8 scores of a list's tiles.
#include "kivf/kivf_i8.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GAVEL_KIVF8_X86 1
#else
#define GAVEL_KIVF8_X86 0
#endif

namespace gavel::kivf {

using kernels::I8Isa;

void CodeKey(ListCodes& lc, int64_t j, const float* key, int64_t dim, bool dead, int8_t* scratch) {
  const int64_t dim4 = kernels::Dim4(dim);
  const int64_t tiles = j / kCodeTile + 1;
  if (static_cast<int64_t>(lc.scale.size()) < tiles * kCodeTile) {
    lc.tiles.resize(static_cast<size_t>(tiles * dim4 * 64), 128);
    lc.scale.resize(static_cast<size_t>(tiles * kCodeTile), 0.f);
  }
  const int64_t t = j / kCodeTile, lane = j % kCodeTile;
  uint8_t* base = lc.tiles.data() + t * dim4 * 64 + lane * 4;
  if (dead) {
    for (int64_t d = 0; d < dim; ++d) base[(d / 4) * 64 + d % 4] = 128;
    lc.scale[j] = 0.f;
    return;
  }
  const kernels::Quantized z = kernels::QuantizeVector(key, dim, 127, scratch);
  if (!z.finite) {
    lc.finite = false;
    return;
  }
  lc.scale[j] = z.scale;
  lc.maxErr = std::max(lc.maxErr, z.errNorm);
  lc.maxNorm = std::max(lc.maxNorm, kernels::UpFloat(double(z.norm) + double(z.errNorm)));
  // 4 dimensions at a time: k_q + 128 as a byte is k_q's two's complement with its top bit flipped
  for (int64_t d = dim; d < dim4 * 4; ++d) scratch[d] = 0;
  for (int64_t d4 = 0; d4 < dim4; ++d4) {
    uint32_t w;
    std::memcpy(&w, scratch + d4 * 4, 4);
    w ^= 0x80808080u;
    std::memcpy(base + d4 * 64, &w, 4);
  }
}

namespace {

inline int32_t Load32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void ScoresScalar(const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr, const float* b,
                  int64_t nr, float* P, int64_t ldP) {
  const int64_t tiles = static_cast<int64_t>(lc.scale.size()) / kCodeTile;
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t t = 0; t < tiles; ++t) {
      const uint8_t* T = lc.tiles.data() + t * dim4 * 64;
      for (int64_t lane = 0; lane < kCodeTile; ++lane) {
        int32_t acc = -corr[r];
        for (int64_t d4 = 0; d4 < dim4; ++d4)
          for (int u = 0; u < 4; ++u) acc += int32_t(T[d4 * 64 + lane * 4 + u]) * int32_t(q[r][d4 * 4 + u]);
        const int64_t j = t * kCodeTile + lane;
        P[r * ldP + j] = (static_cast<float>(acc) * lc.scale[j]) * b[r];
      }
    }
}

#if GAVEL_KIVF8_X86
// AVX2: vpmaddubsw (u8 key × s8 query in [-64, 64], pair sums in int16 without saturation) then
// vpmaddwd by ones; a tile is two ymm of 8 keys. R rows at once.
template <int R>
__attribute__((target("avx2,fma"))) void RowsAvx2(const ListCodes& lc, int64_t dim4, const int8_t* const* q,
                                                   const int32_t* corr, const float* b, float* P, int64_t ldP) {
  const int64_t tiles = static_cast<int64_t>(lc.scale.size()) / kCodeTile;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t t = 0; t < tiles; ++t) {
    const uint8_t* T = lc.tiles.data() + t * dim4 * 64;
    __m256i acc0[R], acc1[R];
    for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm256_set1_epi32(-corr[r]);
    for (int64_t d4 = 0; d4 < dim4; ++d4) {
      const __m256i k0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(T + d4 * 64));
      const __m256i k1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(T + d4 * 64 + 32));
      for (int r = 0; r < R; ++r) {
        const __m256i qb = _mm256_set1_epi32(Load32(q[r] + d4 * 4));
        acc0[r] = _mm256_add_epi32(acc0[r], _mm256_madd_epi16(_mm256_maddubs_epi16(k0, qb), ones));
        acc1[r] = _mm256_add_epi32(acc1[r], _mm256_madd_epi16(_mm256_maddubs_epi16(k1, qb), ones));
      }
    }
    const __m256 s0 = _mm256_loadu_ps(lc.scale.data() + t * kCodeTile);
    const __m256 s1 = _mm256_loadu_ps(lc.scale.data() + t * kCodeTile + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 br = _mm256_set1_ps(b[r]);
      _mm256_storeu_ps(P + r * ldP + t * kCodeTile, _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc0[r]), s0), br));
      _mm256_storeu_ps(P + r * ldP + t * kCodeTile + 8,
                       _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc1[r]), s1), br));
    }
  }
}

// AVX-512 VNNI: vpdpbusd (u8 key × s8 query, 4 products per int32 lane, exact); a tile is one zmm
// of 16 keys. R rows at once.
template <int R>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))) void RowsVnni(
    const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr, const float* b, float* P,
    int64_t ldP) {
  const int64_t tiles = static_cast<int64_t>(lc.scale.size()) / kCodeTile;
  for (int64_t t = 0; t < tiles; ++t) {
    const uint8_t* T = lc.tiles.data() + t * dim4 * 64;
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_set1_epi32(-corr[r]);
    for (int64_t d4 = 0; d4 < dim4; ++d4) {
      const __m512i k = _mm512_loadu_si512(T + d4 * 64);
      for (int r = 0; r < R; ++r) acc[r] = _mm512_dpbusd_epi32(acc[r], k, _mm512_set1_epi32(Load32(q[r] + d4 * 4)));
    }
    const __m512 s = _mm512_loadu_ps(lc.scale.data() + t * kCodeTile);
    for (int r = 0; r < R; ++r)
      _mm512_storeu_ps(P + r * ldP + t * kCodeTile,
                       _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[r]), s), _mm512_set1_ps(b[r])));
  }
}

void ScoresAvx2(const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr, const float* b,
                int64_t nr, float* P, int64_t ldP) {
  int64_t r = 0;
  for (; r + 4 <= nr; r += 4) RowsAvx2<4>(lc, dim4, q + r, corr + r, b + r, P + r * ldP, ldP);
  if (nr - r >= 2) {
    RowsAvx2<2>(lc, dim4, q + r, corr + r, b + r, P + r * ldP, ldP);
    r += 2;
  }
  if (r < nr) RowsAvx2<1>(lc, dim4, q + r, corr + r, b + r, P + r * ldP, ldP);
}

void ScoresVnni(const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr, const float* b,
                int64_t nr, float* P, int64_t ldP) {
  int64_t r = 0;
  for (; r + 8 <= nr; r += 8) RowsVnni<8>(lc, dim4, q + r, corr + r, b + r, P + r * ldP, ldP);
  if (nr - r >= 4) {
    RowsVnni<4>(lc, dim4, q + r, corr + r, b + r, P + r * ldP, ldP);
    r += 4;
  }
  if (nr - r >= 2) {
    RowsVnni<2>(lc, dim4, q + r, corr + r, b + r, P + r * ldP, ldP);
    r += 2;
  }
  if (r < nr) RowsVnni<1>(lc, dim4, q + r, corr + r, b + r, P + r * ldP, ldP);
}
#endif

}  // namespace

void ListScores8(I8Isa isa, const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr,
                 const float* b, int64_t nr, float* P, int64_t ldP) {
  switch (isa) {
#if GAVEL_KIVF8_X86
    case I8Isa::Avx512Vnni: return ScoresVnni(lc, dim4, q, corr, b, nr, P, ldP);
    case I8Isa::Avx2: return ScoresAvx2(lc, dim4, q, corr, b, nr, P, ldP);
#endif
    default: return ScoresScalar(lc, dim4, q, corr, b, nr, P, ldP);
  }
}

}  // namespace gavel::kivf
