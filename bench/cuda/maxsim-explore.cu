// Issue 15: candidate max-sim kernels for the glance, tried on a GPU in one device call, each checked
// against a plain reference kernel in the same run, timed at issue 15's shapes. Standalone (no addon,
// no node): the device machine has nvcc, and one compile takes seconds, so several tilings are compared
// in one call before one of them becomes native/src/kernels/maxsim.cu's choice (first
// wgmma's at 128 rows and 4 stages, then TMA's at 192 rows, 128-key tiles, 4 stages, 32 columns
// a block: docs/BENCHMARKS.md).
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -I native/src bench/cuda/maxsim-explore.cu -o /tmp/mx && /tmp/mx [--quick]
//
// The problem, as the glance's: queries Q (nq × D, f16, unit rows), the bank's keys K (rows × D, f16,
// unit rows), skill s owning keys colRow[s] … colRow[s] + colRows[s] − 1. For every (query row q,
// skill s): m = max over the skill's keys of Q[q]·K[k] in fp32, am = the key (index within the skill)
// reaching it, the lower index on equal values; a skill without keys gets m = −1, am = −1.
//
// The candidates (kConfigs): native/src/kernels/maxsim_wgmma.cuh's WgmmaMaxSim (sm_90a) at a few
// (loader, rows a block, columns a block, ring depth, keys a tile), with or without the argmax.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check.cuh"
#include "kernels/maxsim_wgmma.cuh"
#include "kernels/topk.cuh"


namespace {

using gavel::kernels::topk::OrderBetter;
using gavel::kernels::wgmma::WgmmaMaxSim;
using gavel::kernels::wgmma::MakeWgKeyMaps;
using gavel::kernels::wgmma::WgKeyMaps;
using gavel::kernels::wgmma::WgmmaSmem;

WgKeyMaps gMaps{};  // the TMA maps over the shape's keys (Run makes them)
int gOnly = -1;     // --only I: run kConfigs[I] alone (for a profiler)

// ---------------------------------------------------------------- data, on the device
__device__ uint32_t Hash(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
  return uint32_t(x);
}
// Unit rows of D dimensions (the first `dim` normal, the rest zero), one block per row.
__global__ void UnitRows(__half* out, int64_t rows, int D, int dim, uint64_t seed) {
  const int64_t r = blockIdx.x;
  if (r >= rows) return;
  __shared__ float part[256];
  float ss = 0.f;
  for (int d = threadIdx.x; d < dim; d += blockDim.x) {
    const uint64_t base = seed * 0x9E3779B97F4A7C15ULL + uint64_t(r) * 4096 + d;
    const float u1 = (Hash(base * 2) + 1.f) / 4294967297.f, u2 = Hash(base * 2 + 1) / 4294967296.f;
    const float v = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
    ss += v * v;
  }
  part[threadIdx.x] = ss;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = rsqrtf(part[0]);
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float v = 0.f;
    if (d < dim) {
      const uint64_t base = seed * 0x9E3779B97F4A7C15ULL + uint64_t(r) * 4096 + d;
      const float u1 = (Hash(base * 2) + 1.f) / 4294967297.f, u2 = Hash(base * 2 + 1) / 4294967296.f;
      v = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2) * inv;
    }
    out[r * D + d] = __float2half_rn(v);
  }
}

// ---------------------------------------------------------------- the reference
// One thread per (q, s), s among the first nRef skills: fp32 sums in dimension order.
__global__ void RefMaxSim(const __half* Q, int nq, const __half* K, int D, const int64_t* colRow, const int64_t* colRows,
                          int nRef, int64_t nCols, float* m, int* am) {
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= int64_t(nq) * nRef) return;
  const int q = int(t / nRef), s = int(t % nRef);
  float best = -1.f;
  int bi = -1;
  for (int k = 0; k < colRows[s]; ++k) {
    const __half* a = Q + int64_t(q) * D;
    const __half* b = K + (colRow[s] + k) * D;
    float acc = 0.f;
    for (int d = 0; d < D; ++d) acc += __half2float(a[d]) * __half2float(b[d]);
    if (OrderBetter(acc, k, best, bi)) { best = acc; bi = k; }
  }
  m[int64_t(q) * nCols + s] = best;
  am[int64_t(q) * nCols + s] = bi;
}
// Counts disagreements with the reference: |m − ref| > tol, or another argmax whose own product
// (recomputed) is more than tol under the reference's best (a near tie is not an error).
__global__ void Verify(const __half* Q, int nq, const __half* K, int D, const int64_t* colRow, int nRef, int64_t nCols,
                       const float* m, const int* am, const float* rm, const int* ram, float tol,
                       unsigned long long* bad, unsigned long long* ties, float* worst) {
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= int64_t(nq) * nRef) return;
  const int q = int(t / nRef), s = int(t % nRef);
  const int64_t o = int64_t(q) * nCols + s;
  const float dm = fabsf(m[o] - rm[o]);
  atomicMax(reinterpret_cast<int*>(worst), __float_as_int(dm));  // non-negative floats order as ints
  bool ok = dm <= tol;
  if (am[o] != ram[o]) {
    if (am[o] < 0 || ram[o] < 0) ok = false;
    else {
      float acc = 0.f;
      for (int d = 0; d < D; ++d) acc += __half2float(Q[int64_t(q) * D + d]) * __half2float(K[(colRow[s] + am[o]) * D + d]);
      if (fabsf(acc - rm[o]) > tol) ok = false; else atomicAdd(ties, 1ULL);
    }
  }
  if (!ok) atomicAdd(bad, 1ULL);
}

// ---------------------------------------------------------------- driver
struct Shape { const char* name; int S, keys, dim, nq; };

template <int BM, int TN, int ST, bool TMA, bool AM>
bool LaunchWgmma(const __half* Q, int nq, const __half* K, int D, const int64_t* colRow, const int64_t* colRows, int S, int G,
                   int64_t nCols, float* m, int* am) {
  const size_t sm = WgmmaSmem(BM, TN, ST, D);
  int maxSm = 0;
  CK(cudaDeviceGetAttribute(&maxSm, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  if (sm > size_t(maxSm)) return false;
  CK(cudaFuncSetAttribute(WgmmaMaxSim<BM, TN, ST, TMA, AM>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(sm)));
  dim3 grid((nq + BM - 1) / BM, (S + G - 1) / G);
  WgmmaMaxSim<BM, TN, ST, TMA, AM><<<grid, 128 + BM * 2, sm>>>(Q, nq, K, D, colRow, colRows, nCols, 0, S, G, m, am, gMaps);
  CK(cudaGetLastError());
  return true;
}
// The candidates, wgmma's (the mma.sync kernel, no faster than WMMA, left the list).
// Their indices are --only's (docs/BENCHMARKS.md names some). tn: keys a tile (wgmma's widest N); the first choice was bm 128, tn 64, 4 stages, g 16.
// kernel "tma": the same wgmma kernel with its keys loaded by TMA; "tma-m": and m alone (no argmax,
// which the explorer then does not check).
struct Config { const char* kernel; int bm, g, stages, tn; };
const Config kConfigs[] = {{"wgmma", 128, 16, 4, 64}, {"tma", 128, 16, 4, 64},   {"tma", 192, 16, 4, 128},  {"tma-m", 128, 16, 4, 64},
                           {"tma-m", 192, 16, 4, 128}, {"tma-m", 192, 16, 4, 64}, {"tma-m", 256, 16, 4, 64}, {"tma-m", 128, 16, 3, 256},
                           {"tma-m", 192, 16, 3, 128}, {"tma", 192, 16, 3, 128},  {"tma-m", 192, 32, 3, 128}, {"tma-m", 192, 64, 3, 128},
                           {"tma-m", 192, 32, 4, 128}, {"tma-m", 192, 64, 4, 128}};
bool Launch(const Config& c, const __half* Q, int nq, const __half* K, int D, const int64_t* colRow, const int64_t* colRows, int S,
            int64_t nCols, float* m, int* am) {
  const bool tma = c.kernel[0] == 't', mOnly = std::strcmp(c.kernel, "tma-m") == 0;
#define GAVEL_WG_CASE(B, N, T)                                                                                \
  if (c.bm == B && c.tn == N && c.stages == T)                                                                \
    return mOnly ? LaunchWgmma<B, N, T, true, false>(Q, nq, K, D, colRow, colRows, S, c.g, nCols, m, am)      \
           : tma ? LaunchWgmma<B, N, T, true, true>(Q, nq, K, D, colRow, colRows, S, c.g, nCols, m, am)       \
                 : LaunchWgmma<B, N, T, false, true>(Q, nq, K, D, colRow, colRows, S, c.g, nCols, m, am);
  GAVEL_WG_CASE(128, 64, 4) GAVEL_WG_CASE(192, 64, 4) GAVEL_WG_CASE(192, 128, 4) GAVEL_WG_CASE(192, 128, 3)
  GAVEL_WG_CASE(256, 64, 4) GAVEL_WG_CASE(128, 256, 3)
#undef GAVEL_WG_CASE
  return false;
}

void Run(const Shape& sh, bool varied, bool timeIt, uint64_t seed) {
  const int D = (sh.dim + 63) / 64 * 64;
  std::vector<int64_t> rows(sh.S);
  std::vector<int64_t> start(sh.S);
  srand(unsigned(seed));
  int64_t total = 0;
  for (int s = 0; s < sh.S; ++s) {
    // varied: 0 … 2·keys keys (some empty skills, partial tiles of every length); else exactly keys
    rows[s] = varied ? (s % 97 == 5 ? 0 : 1 + rand() % (2 * sh.keys)) : sh.keys;
    start[s] = total;
    total += rows[s];
  }
  __half *Q, *K;
  int64_t *dStart, *dRows;
  int *am, *ram;
  float *m, *rm, *worst;
  unsigned long long* counts;
  CK(cudaMalloc(&Q, size_t(sh.nq) * D * 2));
  CK(cudaMalloc(&K, size_t(std::max<int64_t>(total, 1)) * D * 2));
  CK(cudaMalloc(&dStart, sh.S * 8));
  CK(cudaMalloc(&dRows, sh.S * 8));
  CK(cudaMalloc(&m, size_t(sh.nq) * sh.S * 4));
  CK(cudaMalloc(&am, size_t(sh.nq) * sh.S * 4));
  const int nRef = std::min(sh.S, timeIt ? 1000 : sh.S);
  CK(cudaMalloc(&rm, size_t(sh.nq) * sh.S * 4));
  CK(cudaMalloc(&ram, size_t(sh.nq) * sh.S * 4));
  CK(cudaMalloc(&counts, 16));
  CK(cudaMalloc(&worst, 4));
  CK(cudaMemcpy(dStart, start.data(), sh.S * 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dRows, rows.data(), sh.S * 8, cudaMemcpyHostToDevice));
  UnitRows<<<sh.nq, 256>>>(Q, sh.nq, D, sh.dim, seed);
  if (total > 0) UnitRows<<<unsigned(total), 256>>>(K, total, D, sh.dim, seed + 1);
  CK(cudaGetLastError());
  {
    const char* why = MakeWgKeyMaps(K, std::max<int64_t>(total, 1), D, &gMaps);
    if (*why) std::printf("# no TMA maps: %s\n", why);
  }
  {
    const int64_t n = int64_t(sh.nq) * nRef;
    RefMaxSim<<<unsigned((n + 255) / 256), 256>>>(Q, sh.nq, K, D, dStart, dRows, nRef, sh.S, rm, ram);
    CK(cudaDeviceSynchronize());
  }
  const double flops = 2.0 * sh.nq * double(total) * sh.dim;
  for (int ci = 0; ci < int(sizeof(kConfigs) / sizeof(kConfigs[0])); ++ci) {
    const Config& cf = kConfigs[ci];
    if (gOnly >= 0 && ci != gOnly) continue;
    {
      const int bm = cf.bm, g = cf.g;
      CK(cudaMemset(m, 0, size_t(sh.nq) * sh.S * 4));
      // m alone: the argmax the check reads is the reference's (only m is checked)
      if (std::strcmp(cf.kernel, "tma-m") == 0) CK(cudaMemcpy(am, ram, size_t(sh.nq) * sh.S * 4, cudaMemcpyDeviceToDevice));
      const bool ok = Launch(cf, Q, sh.nq, K, D, dStart, dRows, sh.S, sh.S, m, am);
      if (!ok) { std::printf("{\"shape\":\"%s\",\"kernel\":\"%s\",\"bm\":%d,\"g\":%d,\"skipped\":\"shared memory\"}\n", sh.name, cf.kernel, bm, g); continue; }
      CK(cudaDeviceSynchronize());
      CK(cudaMemset(counts, 0, 16));
      CK(cudaMemset(worst, 0, 4));
      const int64_t n = int64_t(sh.nq) * nRef;
      Verify<<<unsigned((n + 255) / 256), 256>>>(Q, sh.nq, K, D, dStart, nRef, sh.S, m, am, rm, ram, 1e-4f, counts, counts + 1, worst);
      unsigned long long c[2];
      float w;
      CK(cudaMemcpy(c, counts, 16, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(&w, worst, 4, cudaMemcpyDeviceToHost));
      double ms = NAN;
      if (timeIt) ms = MedianMs([&]() { Launch(cf, Q, sh.nq, K, D, dStart, dRows, sh.S, sh.S, m, am); }, 5);
      std::printf("{\"shape\":\"%s\",\"kernel\":\"%s\",\"tn\":%d,\"stages\":%d,\"skills\":%d,\"keys\":%lld,\"dim\":%d,\"nq\":%d,\"varied\":%s,\"bm\":%d,\"g\":%d,"
                  "\"checked\":%lld,\"bad\":%llu,\"ties\":%llu,\"maxMDiff\":%.3g,\"ms\":%.3f,\"tflops\":%.1f}\n",
                  sh.name, cf.kernel, cf.tn, cf.stages, sh.S, (long long)total, sh.dim, sh.nq, varied ? "true" : "false", bm, g, (long long)n, c[0], c[1], w, ms,
                  timeIt ? flops / ms / 1e9 : 0.0);
      std::fflush(stdout);
    }
  }
  cudaFree(Q); cudaFree(K); cudaFree(dStart); cudaFree(dRows); cudaFree(m); cudaFree(am); cudaFree(rm); cudaFree(ram);
  cudaFree(counts); cudaFree(worst);
}

}  // namespace

int main(int argc, char** argv) {
  // --quick: the checks only; --shape NAME [--only I]: that timed shape alone (and config I alone),
  // e.g. under `ncu -k regex:WgmmaMaxSim -s 1 -c 1` (the launch after the checked one)
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const char* only = nullptr;
  for (int a = 1; a + 1 < argc; ++a) {
    if (std::strcmp(argv[a], "--shape") == 0) only = argv[a + 1];
    if (std::strcmp(argv[a], "--only") == 0) gOnly = std::atoi(argv[a + 1]);
  }
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("# %s, %d SMs, %zu KB shared per block (opt-in)\n", p.name, p.multiProcessorCount, p.sharedMemPerBlockOptin / 1024);
  // correctness at awkward sizes: varied keys per skill (empty skills, partial tiles), odd row counts, dim not a multiple of 64
  const Shape checks[] = {{"check-a", 300, 40, 64, 37}, {"check-b", 211, 120, 200, 130}, {"check-c", 97, 235, 768, 239}, {"check-d", 50, 5, 256, 1}};
  if (only == nullptr)
    for (const Shape& s : checks) Run(s, true, false, 7 + s.S);
  if (quick) return 0;
  // issue 15's shapes, timed (the reference checks the first 1,000 skills)
  const Shape shapes[] = {{"d256-10k", 10000, 200, 256, 1300}, {"d256-30k", 30000, 200, 256, 1300}, {"d256-100k", 100000, 200, 256, 1300},
                          {"d768-1k", 1000, 235, 768, 239}, {"d768-10k", 10000, 235, 768, 239}, {"d768-30k", 30000, 235, 768, 239}};
  for (const Shape& s : shapes)
    if (only == nullptr || std::strcmp(only, s.name) == 0) Run(s, false, true, 11);
  return 0;
}
