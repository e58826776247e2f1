// The key IVF's int8 list codes (kivf_i8.h): coding a key, and the int8 scores of a list's tiles.
#include "kivf/kivf_i8.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "kernels/i8_neon.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GAVEL_KIVF8_X86 1
#else
#define GAVEL_KIVF8_X86 0
#endif
#if GAVEL_I8_NEON
#include <arm_neon.h>
#endif

namespace gavel::kivf {

using kernels::I8Isa;

void CodeKey(ListCodes& lc, int64_t j, const float* key, int64_t dim, bool dead, int8_t* scratch) {
  const int64_t dim4 = kernels::Dim4(dim);
  const int64_t tiles = j / kCodeTile + 1;
  if (static_cast<int64_t>(lc.scale.size()) < tiles * kCodeTile) {
    lc.tiles.resize(static_cast<size_t>(tiles * dim4 * 64), 128);
    lc.scale.resize(static_cast<size_t>(tiles * kCodeTile), 0.f);
    lc.fine.resize(static_cast<size_t>(tiles * kCodeTile * dim4 * 2), 0x88);
    lc.scale2.resize(static_cast<size_t>(tiles * kCodeTile), 0.f);
  }
  const int64_t t = j / kCodeTile, lane = j % kCodeTile;
  uint8_t* base = lc.tiles.data() + t * dim4 * 64 + lane * 4;
  uint8_t* fine = lc.fine.data() + j * dim4 * 2;
  if (dead) {
    for (int64_t d = 0; d < dim; ++d) base[(d / 4) * 64 + d % 4] = 128;
    lc.scale[j] = 0.f;
    std::memset(fine, 0x88, static_cast<size_t>(dim4 * 2));
    lc.scale2[j] = 0.f;
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
  // the residual in 4 bits (every product and difference below is exact or double-rounded, far
  // under the 1e-9 the norms are widened by)
  double emax = 0;
  for (int64_t d = 0; d < dim; ++d) emax = std::max(emax, std::fabs(double(key[d]) - double(z.scale) * scratch[d]));
  const float a2 = static_cast<float>(emax / 7);
  // any r in [-7, 7] keeps the bounds below true (they are taken from the r chosen), so e·(1/a2)
  // rounded half away from zero by truncation (no division or libm call a dimension)
  const double inv2 = a2 > 0.f ? 1.0 / double(a2) : 0.0;
  double err2 = 0, kt = 0, et = 0;
  std::memset(fine, 0x88, static_cast<size_t>(dim4 * 2));
  for (int64_t d = 0; d < dim; ++d) {
    const double kd = double(z.scale) * scratch[d], e = double(key[d]) - kd;
    const double x = e * inv2;
    const long r = std::clamp(static_cast<long>(x + (x >= 0 ? 0.5 : -0.5)), -7L, 7L);
    const double et_d = double(a2) * double(r);
    err2 += (e - et_d) * (e - et_d);
    kt += kd * kd;
    et += et_d * et_d;
    const uint8_t nib = static_cast<uint8_t>(r + 8);
    fine[d / 2] = static_cast<uint8_t>((d & 1) ? (fine[d / 2] & 0x0F) | (nib << 4) : (fine[d / 2] & 0xF0) | nib);
  }
  lc.scale2[j] = a2;
  lc.maxErr2 = std::max(lc.maxErr2, kernels::UpFloat(std::sqrt(err2) * (1 + 1e-9)));
  lc.maxNorm2 = std::max(lc.maxNorm2, kernels::UpFloat((double(z.norm) + std::sqrt(kt) + std::sqrt(et)) * (1 + 1e-9)));
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
inline int32_t Load32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

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
      _mm_prefetch(reinterpret_cast<const char*>(T + (dim4 + d4) * 64), _MM_HINT_T0);  // the next tile's line
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
// of 16 keys. R rows against T tiles at once (R·T accumulators): each query broadcast serves T
// tiles, so the loop issues T + R loads for R·T vpdpbusd. Each P entry is the same integer sum and
// the same two float products whatever R and T.
template <int R, int T>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))) void RowsVnni(
    const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr, const float* b, float* P,
    int64_t ldP, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t + T <= t1; t += T) {
    const uint8_t* Tp = lc.tiles.data() + t * dim4 * 64;
    __m512i acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int u = 0; u < T; ++u) acc[r][u] = _mm512_set1_epi32(-corr[r]);
    for (int64_t d4 = 0; d4 < dim4; ++d4) {
      __m512i k[T];
      for (int u = 0; u < T; ++u) k[u] = _mm512_loadu_si512(Tp + (u * dim4 + d4) * 64);
      // the same line of the next T tiles, a step's length ahead: the hardware prefetcher alone kept
      // a list read from memory at about half the kernel's in-cache rate (a prefetch never faults,
      // so one past the list's last tile is harmless)
      for (int u = 0; u < T; ++u) _mm_prefetch(reinterpret_cast<const char*>(Tp + ((T + u) * dim4 + d4) * 64), _MM_HINT_T0);
      // the row's 4 bytes broadcast inside the vpdpbusd ({1to16}): GCC 12 compiled the intrinsics
      // (a vpbroadcastd, then the product) with a register copy of every accumulator each step, 20-30%
      // slower than this form on lists in cache at 12-16 rows (bench/results/2026-12-01-cpu-kivf-select)
      for (int r = 0; r < R; ++r)
        for (int u = 0; u < T; ++u)
          asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc[r][u]) : "v"(k[u]), "m"(*reinterpret_cast<const int32_t*>(q[r] + d4 * 4)));
    }
    for (int u = 0; u < T; ++u) {
      const __m512 s = _mm512_loadu_ps(lc.scale.data() + (t + u) * kCodeTile);
      // (the masked form: the plain one's undefined pass-through draws GCC 12's maybe-uninitialized
      // warning after the asm above; every lane is converted either way)
      for (int r = 0; r < R; ++r)
        _mm512_storeu_ps(P + r * ldP + (t + u) * kCodeTile,
                         _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, acc[r][u]), s), _mm512_set1_ps(b[r])));
    }
  }
}

// R rows against every tile: T tiles a step, then the rest one by one. T falls as R grows (3 tiles
// up to 4 rows, 2 up to 8, 1 up to 16; R·T accumulators and T tiles, at most 18 zmm, the rows read
// by the product itself): with every row of a list in one pass, its codes are read once for all.
template <int R>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))) void RowsVnniAll(
    const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr, const float* b, float* P,
    int64_t ldP) {
  constexpr int T = R <= 4 ? 3 : R <= 8 ? 2 : 1;
  const int64_t tiles = static_cast<int64_t>(lc.scale.size()) / kCodeTile;
  const int64_t tt = tiles / T * T;
  RowsVnni<R, T>(lc, dim4, q, corr, b, P, ldP, 0, tt);
  if constexpr (T > 1) RowsVnni<R, 1>(lc, dim4, q, corr, b, P, ldP, tt, tiles);
}

using RowsFn = void (*)(const ListCodes&, int64_t, const int8_t* const*, const int32_t*, const float*, float*, int64_t);
template <int... I>
constexpr std::array<RowsFn, sizeof...(I)> RowsTable(std::integer_sequence<int, I...>) {
  return {&RowsVnniAll<I + 1>...};
}
constexpr int kMaxPassRows = 16;

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

// The rows in as few passes over the list as 16 rows a pass allow, of even sizes (17 rows: 9 and 8,
// not 16 and 1): in passes of 8 rows, then 4, 2 and 1, a list of 13 rows was read three times, and a
// pass of one or two rows runs at the memory's pace, not the kernel's.
void ScoresVnni(const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr, const float* b,
                int64_t nr, float* P, int64_t ldP) {
  static constexpr auto kRows = RowsTable(std::make_integer_sequence<int, kMaxPassRows>{});
  const int64_t passes = (nr + kMaxPassRows - 1) / kMaxPassRows;
  for (int64_t p = 0, r = 0; p < passes; ++p) {
    const int64_t n = (nr - r) / (passes - p) + ((nr - r) % (passes - p) != 0);
    kRows[n - 1](lc, dim4, q + r, corr + r, b + r, P + r * ldP, ldP);
    r += n;
  }
}
#endif

float RefinedScalar(const ListCodes& lc, int64_t j, const float* q, int64_t dim4) {
  const uint8_t* T = lc.tiles.data() + (j / kCodeTile) * dim4 * 64 + (j % kCodeTile) * 4;
  const uint8_t* F = lc.fine.data() + j * dim4 * 2;
  float s1 = 0.f, s2 = 0.f;
  for (int64_t d4 = 0; d4 < dim4; ++d4)
    for (int u = 0; u < 4; ++u) {
      const int64_t d = d4 * 4 + u;
      s1 += q[d] * static_cast<float>(int(T[d4 * 64 + u]) - 128);
      s2 += q[d] * static_cast<float>(int((F[d / 2] >> (4 * (d & 1))) & 0x0F) - 8);
    }
  return s1 * lc.scale[j] + s2 * lc.scale2[j];
}

#if GAVEL_KIVF8_X86 || GAVEL_I8_NEON
// A vector refined score's end: its n lanes' partial sums of the key and residual products (a, b),
// summed in lane order, then the dimensions from block d4 on in scalar, each scaled.
float RefinedFinish(const ListCodes& lc, int64_t j, const float* q, const float* a, const float* b, int n,
                    const uint8_t* T, const uint8_t* F, int64_t d4, int64_t dim4) {
  float t1 = 0.f, t2 = 0.f;
  for (int i = 0; i < n; ++i) {
    t1 += a[i];
    t2 += b[i];
  }
  for (; d4 < dim4; ++d4)
    for (int u = 0; u < 4; ++u) {
      const int64_t d = d4 * 4 + u;
      t1 += q[d] * static_cast<float>(int(T[d4 * 64 + u]) - 128);
      t2 += q[d] * static_cast<float>(int((F[d / 2] >> (4 * (d & 1))) & 0x0F) - 8);
    }
  return t1 * lc.scale[j] + t2 * lc.scale2[j];
}
#endif

#if GAVEL_KIVF8_X86
// 16 bytes of the key's code (dimensions 4·d4 … 4·d4 + 15, from four tile vectors) and 16 residual
// nibbles (8 bytes), as int8
inline __m128i KeyBytes16(const uint8_t* T, int64_t d4) {
  alignas(16) uint32_t w[4];
  for (int i = 0; i < 4; ++i) std::memcpy(&w[i], T + (d4 + i) * 64, 4);
  return _mm_xor_si128(_mm_load_si128(reinterpret_cast<const __m128i*>(w)), _mm_set1_epi8(static_cast<char>(0x80)));
}
inline __m128i Nibbles16(const uint8_t* F) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(F));
  const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
  return _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), _mm_set1_epi8(8));
}

__attribute__((target("avx2,fma"))) float RefinedAvx2(const ListCodes& lc, int64_t j, const float* q, int64_t dim4) {
  const uint8_t* T = lc.tiles.data() + (j / kCodeTile) * dim4 * 64 + (j % kCodeTile) * 4;
  const uint8_t* F = lc.fine.data() + j * dim4 * 2;
  __m256 s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps();
  int64_t d4 = 0;
  for (; d4 + 4 <= dim4; d4 += 4) {
    const __m128i k = KeyBytes16(T, d4), r = Nibbles16(F + d4 * 2);
    const float* qd = q + d4 * 4;
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(qd), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(k)), s1);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(qd + 8), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(k, 8))), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(qd), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(r)), s2);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(qd + 8), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(r, 8))), s2);
  }
  alignas(32) float a[8], b[8];
  _mm256_store_ps(a, s1);
  _mm256_store_ps(b, s2);
  return RefinedFinish(lc, j, q, a, b, 8, T, F, d4, dim4);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) float RefinedAvx512(const ListCodes& lc, int64_t j,
                                                                                   const float* q, int64_t dim4) {
  const uint8_t* T = lc.tiles.data() + (j / kCodeTile) * dim4 * 64 + (j % kCodeTile) * 4;
  const uint8_t* F = lc.fine.data() + j * dim4 * 2;
  __m512 s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps();
  int64_t d4 = 0;
  for (; d4 + 4 <= dim4; d4 += 4) {
    const __m512 qd = _mm512_loadu_ps(q + d4 * 4);
    // the maskz forms: GCC 12 warns on the plain ones' undefined pass-through operand
    s1 = _mm512_fmadd_ps(qd, _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_cvtepi8_epi32(0xFFFF, KeyBytes16(T, d4))), s1);
    s2 = _mm512_fmadd_ps(qd, _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_cvtepi8_epi32(0xFFFF, Nibbles16(F + d4 * 2))), s2);
  }
  alignas(64) float a[16], b[16];
  _mm512_store_ps(a, s1);
  _mm512_store_ps(b, s2);
  return RefinedFinish(lc, j, q, a, b, 16, T, F, d4, dim4);
}
#endif

#if GAVEL_I8_NEON
// As KeyBytes16 / Nibbles16 above: a key's 16 code bytes from four tile vectors, as k_q, and its 16
// residual nibbles, as r_q
inline int8x16_t KeyBytes16Neon(const uint8_t* T, int64_t d4) {
  uint32_t w[4];
  for (int i = 0; i < 4; ++i) std::memcpy(&w[i], T + (d4 + i) * 64, 4);
  return vreinterpretq_s8_u8(veorq_u8(vreinterpretq_u8_u32(vld1q_u32(w)), vdupq_n_u8(0x80)));
}
inline int8x16_t Nibbles16Neon(const uint8_t* F) {
  const uint8x8_t b = vld1_u8(F);
  const uint8x8_t lo = vand_u8(b, vdup_n_u8(0x0F)), hi = vshr_n_u8(b, 4);
  return vsubq_s8(vreinterpretq_s8_u8(vcombine_u8(vzip1_u8(lo, hi), vzip2_u8(lo, hi))), vdupq_n_s8(8));
}
// 16 int8 as 4 × 4 floats (exact)
inline void Floats16(int8x16_t v, float32x4_t (&f)[4]) {
  const int16x8_t l = vmovl_s8(vget_low_s8(v)), h = vmovl_high_s8(v);
  f[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(l)));
  f[1] = vcvtq_f32_s32(vmovl_high_s16(l));
  f[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
  f[3] = vcvtq_f32_s32(vmovl_high_s16(h));
}

// 16 dimensions a step in 16 float lanes (four fused multiply-add chains of 4 for each sum), as
// RefinedAvx512 sums them; RefinedBound holds for any order of the sums.
float RefinedNeon(const ListCodes& lc, int64_t j, const float* q, int64_t dim4) {
  const uint8_t* T = lc.tiles.data() + (j / kCodeTile) * dim4 * 64 + (j % kCodeTile) * 4;
  const uint8_t* F = lc.fine.data() + j * dim4 * 2;
  float32x4_t s1[4], s2[4];
  for (int i = 0; i < 4; ++i) s1[i] = s2[i] = vdupq_n_f32(0.f);
  int64_t d4 = 0;
  for (; d4 + 4 <= dim4; d4 += 4) {
    float32x4_t k[4], r[4];
    Floats16(KeyBytes16Neon(T, d4), k);
    Floats16(Nibbles16Neon(F + d4 * 2), r);
    for (int i = 0; i < 4; ++i) {
      const float32x4_t qd = vld1q_f32(q + d4 * 4 + i * 4);
      s1[i] = vfmaq_f32(s1[i], qd, k[i]);
      s2[i] = vfmaq_f32(s2[i], qd, r[i]);
    }
  }
  float a[16], b[16];
  for (int i = 0; i < 4; ++i) {
    vst1q_f32(a + i * 4, s1[i]);
    vst1q_f32(b + i * 4, s2[i]);
  }
  return RefinedFinish(lc, j, q, a, b, 16, T, F, d4, dim4);
}
#endif

}  // namespace

float RefinedScore(I8Isa isa, const ListCodes& lc, int64_t j, const float* q, int64_t dim4) {
  switch (isa) {
#if GAVEL_KIVF8_X86
    case I8Isa::Avx512Vnni: return RefinedAvx512(lc, j, q, dim4);
    case I8Isa::Avx2: return RefinedAvx2(lc, j, q, dim4);
#endif
#if GAVEL_I8_NEON
    case I8Isa::NeonDot:
    case I8Isa::Neon: return RefinedNeon(lc, j, q, dim4);
#endif
    default: return RefinedScalar(lc, j, q, dim4);
  }
}

float RefinedBound(float alpha, float norm, const ListCodes& lc, int64_t dim) {
  const double c = 1.01 * double(dim + 8) * std::ldexp(1.0, -24);
  return kernels::UpFloat((double(alpha) * lc.maxErr2 + 2 * c * double(norm) * lc.maxNorm2) * (1 + 1.0 / 1024));
}

namespace {

// from j0 on (the vector versions' tails)
void PassingScalar(const float* p, int64_t j0, int64_t n, float hw, float low, std::vector<int32_t>& out) {
  for (int64_t j = j0; j < n; ++j)
    if (!(p[j] + hw < low)) out.push_back(static_cast<int32_t>(j));
}

#if GAVEL_KIVF8_X86
// 16 scores a compare (not-less-than, unordered: a NaN passes as in the scalar test); the lanes past
// n are masked off.
__attribute__((target("avx512f"))) void PassingAvx512(const float* p, int64_t n, float hw, float low,
                                                      std::vector<int32_t>& out) {
  const __m512 h = _mm512_set1_ps(hw), l = _mm512_set1_ps(low);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 in = n - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j)) - 1);
    uint32_t m = _mm512_mask_cmp_ps_mask(in, _mm512_add_ps(_mm512_maskz_loadu_ps(in, p + j), h), l, _CMP_NLT_UQ);
    while (m != 0) {
      out.push_back(static_cast<int32_t>(j + __builtin_ctz(m)));
      m &= m - 1;
    }
  }
}

__attribute__((target("avx2"))) void PassingAvx2(const float* p, int64_t n, float hw, float low,
                                                 std::vector<int32_t>& out) {
  const __m256 h = _mm256_set1_ps(hw), l = _mm256_set1_ps(low);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    uint32_t m = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_add_ps(_mm256_loadu_ps(p + j), h), l, _CMP_NLT_UQ)));
    while (m != 0) {
      out.push_back(static_cast<int32_t>(j + __builtin_ctz(m)));
      m &= m - 1;
    }
  }
  PassingScalar(p, j, n, hw, low, out);
}
#endif

#if GAVEL_I8_NEON
// 16 scores a step: the lanes with p + hw < low (ordered: a NaN is not less, so it passes as in the
// scalar test) narrowed to bytes and inverted; a step none passes costs one horizontal max, the others
// give a 16-bit mask (one bit a byte, summed per half).
void PassingNeon(const float* p, int64_t n, float hw, float low, std::vector<int32_t>& out) {
  const float32x4_t h = vdupq_n_f32(hw), l = vdupq_n_f32(low);
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bit = vld1q_u8(kBit);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const uint32x4_t l0 = vcltq_f32(vaddq_f32(vld1q_f32(p + j), h), l);
    const uint32x4_t l1 = vcltq_f32(vaddq_f32(vld1q_f32(p + j + 4), h), l);
    const uint32x4_t l2 = vcltq_f32(vaddq_f32(vld1q_f32(p + j + 8), h), l);
    const uint32x4_t l3 = vcltq_f32(vaddq_f32(vld1q_f32(p + j + 12), h), l);
    const uint16x8_t l01 = vcombine_u16(vmovn_u32(l0), vmovn_u32(l1)), l23 = vcombine_u16(vmovn_u32(l2), vmovn_u32(l3));
    const uint8x16_t pass = vmvnq_u8(vcombine_u8(vmovn_u16(l01), vmovn_u16(l23)));
    if (vmaxvq_u8(pass) == 0) continue;
    const uint8x16_t m = vandq_u8(pass, bit);
    uint32_t mask = uint32_t(vaddv_u8(vget_low_u8(m))) | (uint32_t(vaddv_u8(vget_high_u8(m))) << 8);
    while (mask != 0) {
      out.push_back(static_cast<int32_t>(j + __builtin_ctz(mask)));
      mask &= mask - 1;
    }
  }
  PassingScalar(p, j, n, hw, low, out);
}
#endif

}  // namespace

void PassingKeys(I8Isa isa, const float* p, int64_t n, float hw, float low, std::vector<int32_t>& out) {
  switch (isa) {
#if GAVEL_KIVF8_X86
    case I8Isa::Avx512Vnni: return PassingAvx512(p, n, hw, low, out);
    case I8Isa::Avx2: return PassingAvx2(p, n, hw, low, out);
#endif
#if GAVEL_I8_NEON
    case I8Isa::NeonDot:
    case I8Isa::Neon: return PassingNeon(p, n, hw, low, out);
#endif
    default: return PassingScalar(p, 0, n, hw, low, out);
  }
}

void ListScores8(I8Isa isa, const ListCodes& lc, int64_t dim4, const int8_t* const* q, const int32_t* corr,
                 const float* b, int64_t nr, float* P, int64_t ldP) {
  switch (isa) {
#if GAVEL_KIVF8_X86
    case I8Isa::Avx512Vnni: return ScoresVnni(lc, dim4, q, corr, b, nr, P, ldP);
    case I8Isa::Avx2: return ScoresAvx2(lc, dim4, q, corr, b, nr, P, ldP);
#endif
#if GAVEL_I8_NEON
    case I8Isa::NeonDot:
    case I8Isa::Neon:  // corr not read: the NEON sums are Σ k_q·q_q directly (kernels/i8_neon.h)
      return kernels::neon::TileScores(isa == I8Isa::NeonDot, lc.tiles.data(), lc.scale.data(),
                                       static_cast<int64_t>(lc.scale.size()) / kCodeTile, dim4, q, b, nr, P, ldP);
#endif
    default: return ScoresScalar(lc, dim4, q, corr, b, nr, P, ldP);
  }
}

}  // namespace gavel::kivf
