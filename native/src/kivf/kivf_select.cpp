// A row's probed lists (kivf_core.h, SelectBest): the n best of its centroid scores, found by counting.
//
// Each score becomes an int32 key whose signed order is the float order (−0 taken as +0, so the two
// zeros tie as the float compare has them). θ, the n-th best value, is the largest key K that at least
// n keys reach: a bisection over [min, max] keys, each step one count of the keys ≥ K (a vector
// compare and a popcount a block on AVX-512 and AVX2; a loop the compiler vectorizes otherwise). A
// threshold t ≤ θ taken first from a sample of the row (its r-th best key, found the same way) leaves
// the bisection only the keys ≥ t; when fewer than n keys reach t, every key is a candidate. Either
// way the candidates hold every value ≥ θ, so θ is exact. test/unit/kivf-select.test.ts holds every
// ISA to a plain sort's lists.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kivf/kivf_core.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GAVEL_KSEL_X86 1
#else
#define GAVEL_KSEL_X86 0
#endif

namespace gavel::kivf {

namespace {

inline int32_t OrderKey(float x) {
  x += 0.0f;  // −0 → +0
  int32_t i;
  std::memcpy(&i, &x, 4);
  return i ^ ((i >> 31) & 0x7FFFFFFF);
}

// The keys ≥ k among keys[0 … m).
int64_t CountPlain(const int32_t* keys, int64_t m, int32_t k) {
  int64_t n = 0;
  for (int64_t j = 0; j < m; ++j) n += keys[j] >= k;
  return n;
}

// idx[·], key[·] ← the indices c < nc (and their keys) with key(s[c]) ≥ t, ascending; returns how
// many. idx and key hold nc + 16 entries (the vector paths store whole blocks).
int64_t CompactPlain(const float* s, int64_t nc, int32_t t, int32_t* idx, int32_t* key) {
  int64_t k = 0;
  for (int64_t c = 0; c < nc; ++c) {
    const int32_t kc = OrderKey(s[c]);
    idx[k] = static_cast<int32_t>(c);
    key[k] = kc;
    k += kc >= t;
  }
  return k;
}

#if GAVEL_KSEL_X86
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,popcnt"))) inline __m512i Keys512(__m512i i) {
  // the negative ones (sign bit set) xored with 0x7FFFFFFF
  return _mm512_mask_xor_epi32(i, _mm512_movepi32_mask(i), i, _mm512_set1_epi32(0x7FFFFFFF));
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,popcnt"))) int64_t CountAvx512(const int32_t* keys, int64_t m,
                                                                                     int32_t k) {
  const __m512i km1 = _mm512_set1_epi32(k - 1);  // k > INT32_MIN (the bisection's probes are)
  int64_t n = 0, j = 0;
  for (; j + 16 <= m; j += 16)
    n += _mm_popcnt_u32(_mm512_cmpgt_epi32_mask(_mm512_loadu_si512(keys + j), km1));
  if (j < m) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (m - j)) - 1);
    n += _mm_popcnt_u32(_mm512_mask_cmpgt_epi32_mask(tail, _mm512_maskz_loadu_epi32(tail, keys + j), km1));
  }
  return n;
}

// Compress to a register, then a whole store (a compress straight to memory is slow on some cores).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,popcnt"))) int64_t CompactAvx512(const float* s, int64_t nc,
                                                                                       int32_t t, int32_t* idx,
                                                                                       int32_t* key) {
  const __m512i tv = _mm512_set1_epi32(t), step = _mm512_set1_epi32(16);
  __m512i ids = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 zero = _mm512_setzero_ps();
  int64_t k = 0, c = 0;
  for (; c < nc; c += 16) {
    const __mmask16 live = nc - c >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (nc - c)) - 1);
    const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(live, s + c), zero);
    const __m512i kv = Keys512(_mm512_castps_si512(v));
    const __mmask16 keep = _mm512_mask_cmpge_epi32_mask(live, kv, tv);
    _mm512_storeu_si512(idx + k, _mm512_maskz_compress_epi32(keep, ids));
    _mm512_storeu_si512(key + k, _mm512_maskz_compress_epi32(keep, kv));
    k += _mm_popcnt_u32(keep);
    ids = _mm512_add_epi32(ids, step);
  }
  return k;
}

__attribute__((target("avx2,popcnt"))) int64_t CountAvx2(const int32_t* keys, int64_t m, int32_t k) {
  const __m256i km1 = _mm256_set1_epi32(k - 1);
  int64_t n = 0, j = 0;
  for (; j + 8 <= m; j += 8) {
    const __m256i gt = _mm256_cmpgt_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(keys + j)), km1);
    n += _mm_popcnt_u32(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(gt))));
  }
  for (; j < m; ++j) n += keys[j] >= k;
  return n;
}
#endif

struct Ops {
  int64_t (*count)(const int32_t*, int64_t, int32_t);
  int64_t (*compact)(const float*, int64_t, int32_t, int32_t*, int32_t*);
};

Ops OpsFor(kernels::Isa isa) {
#if GAVEL_KSEL_X86
  if (isa == kernels::Isa::Avx512) return {&CountAvx512, &CompactAvx512};
  if (isa == kernels::Isa::Avx2) return {&CountAvx2, &CompactPlain};
#endif
  (void)isa;
  return {&CountPlain, &CompactPlain};
}

// The r-th largest of keys[0 … m) (1 ≤ r ≤ m): the largest K with at least r keys ≥ K.
int32_t KthKey(const Ops& ops, const int32_t* keys, int64_t m, int64_t r) {
  int32_t mn = keys[0], mx = keys[0];
  for (int64_t j = 1; j < m; ++j) {
    mn = std::min(mn, keys[j]);
    mx = std::max(mx, keys[j]);
  }
  // count(≥ lo) ≥ r, count(≥ hi) < r
  int64_t lo = mn, hi = int64_t(mx) + 1;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (ops.count(keys, m, static_cast<int32_t>(mid)) >= r)
      lo = mid;
    else
      hi = mid;
  }
  return static_cast<int32_t>(lo);
}

}  // namespace

void SelectBest(const float* s, int64_t nc, int64_t n, int32_t* out, SelectScratch& x, kernels::Isa isa) {
  const Ops ops = OpsFor(isa);
  x.idx.resize(static_cast<size_t>(nc + 16));
  x.key.resize(static_cast<size_t>(nc + 16));
  int64_t m = -1;
  if (n * 4 <= nc && nc >= 512) {
    // a threshold t from 512 values: runs of 8 consecutive ones (a cache line's worth) every nc/64
    // (centroids of one coarse group sit together, so the runs are spread over the whole row); its
    // r-th best, r about twice the rank θ would have there, so t ≤ θ nearly always
    const int64_t sm = 512, stride = nc / 64;
    const int64_t r = std::min<int64_t>(sm, 2 * ((n * sm + nc - 1) / nc) + 8);
    int32_t* smp = x.key.data();
    for (int64_t j = 0; j < 64; ++j)
      for (int64_t u = 0; u < 8; ++u) smp[j * 8 + u] = OrderKey(s[j * stride + u]);
    const int32_t t = KthKey(ops, smp, sm, r);
    m = ops.compact(s, nc, t, x.idx.data(), x.key.data());
    if (m < n) m = -1;  // θ is below t: every value is a candidate
  }
  if (m < 0) {
    m = ops.compact(s, nc, INT32_MIN, x.idx.data(), x.key.data());
  }
  const int32_t theta = KthKey(ops, x.key.data(), m, n);
  // above θ (fewer than n), ascending; then the lowest indices at θ
  int64_t k = 0;
  const int32_t* idx = x.idx.data();
  const int32_t* key = x.key.data();
  for (int64_t j = 0; j < m; ++j) {
    out[k] = idx[j];
    k += key[j] > theta;
  }
  for (int64_t j = 0; j < m && k < n; ++j)
    if (key[j] == theta) out[k++] = idx[j];
}

}  // namespace gavel::kivf
