// The glance's top-k on the device: each query row's kk best columns of m (nq × nCols), in the
// (value, index) order of the max-sim (larger value, or equal value and lower column). Two kernels,
// the same output bit for bit (the order is total, so the top kk are one set in one order):
//   - TopKPasses: kk passes over the row, each a block-wide argmax of what ranks after the last pick
//     (the former default; now for k > 16, or GAVEL_GLANCE_TOPK=passes). It reads the row kk times: 3.6 ms of a 100K-skill glance's 51 ms
//     on an H200, 7%.
//   - TopKOnePass<KMAX> (kk ≤ KMAX; the default, 0.92 ms against 3.48 at 100K skills
//     through the addon on an H200): one read of the row, each thread keeping its own kk best in registers (a sorted insertion,
//     rarely taken once the list fills), then kk rounds of a block-wide argmax over the threads' heads,
//     the winner shifting its list up. bench/cuda/topk-explore.cu checks both against a host reference
//     and times them.
#pragma once

// GAVEL_TOPK_HOST_EMULATION: compiled as host C++ by native/test/topk_emu.cpp, which supplies threads,
// blocks, __syncthreads and the shuffle, so both kernels are checked on a CPU against a plain top-k.
#ifndef GAVEL_TOPK_HOST_EMULATION
#include <cuda_runtime.h>
#endif

#include <cfloat>
#include <cstdint>

namespace gavel::kernels::topk {

constexpr int kTopThreads = 256;  // one block per query row

// (value, index) order: larger value, or equal value and lower index; index −1 (nothing) loses to everything.
template <typename I>
__device__ __forceinline__ bool OrderBetter(float v, I i, float bv, I bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
  return v > bv || (v == bv && i < bi);
}

// The block's best (v, i) by OrderBetter, known to every thread: warp shuffles, then the warps' bests
// through shared memory (sv, si: kTopThreads / 32 each). Two __syncthreads.
__device__ __forceinline__ void BlockBest(float& v, int64_t& i, float* sv, int64_t* si) {
#pragma unroll
  for (int w = 16; w >= 1; w >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, w);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, i, w);
    if (OrderBetter(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
  if ((threadIdx.x & 31) == 0) {
    sv[threadIdx.x >> 5] = v;
    si[threadIdx.x >> 5] = i;
  }
  __syncthreads();
  v = sv[0];
  i = si[0];
  for (int w = 1; w < kTopThreads / 32; ++w)
    if (OrderBetter(sv[w], si[w], v, i)) {
      v = sv[w];
      i = si[w];
    }
  __syncthreads();  // sv, si are written again by the next call
}

// top[i·kk + r], topM[…]: row i's r-th best column and its m, best first. Grid nq blocks of
// kTopThreads. kk rounds, each the best column strictly after the previous one in the order (a strict
// total order on distinct columns, so every round adds a new column). The kernel as first measured,
// its reduction now the shared BlockBest (every thread then knows the round's pick, so
// the previous pick lives in registers).
static __global__ void __launch_bounds__(kTopThreads) TopKPasses(const float* __restrict__ m, int64_t nCols, int kk,
                                                          int32_t* __restrict__ top, float* __restrict__ topM) {
  const int64_t i = blockIdx.x;
  const float* row = m + i * nCols;
  __shared__ float sv[kTopThreads / 32];
  __shared__ int64_t si[kTopThreads / 32];
  float pv = FLT_MAX;
  int64_t pi = -1;
  for (int r = 0; r < kk; ++r) {
    float bv = -FLT_MAX;
    int64_t bi = -1;
    for (int64_t c = threadIdx.x; c < nCols; c += kTopThreads) {
      const float v = row[c];
      // strictly after (pv, pi): lower value, or equal value and higher column (r = 0: everything)
      const bool after = pi < 0 || v < pv || (v == pv && c > pi);
      if (after && OrderBetter(v, c, bv, bi)) {
        bv = v;
        bi = c;
      }
    }
    BlockBest(bv, bi, sv, si);
    if (threadIdx.x == 0) {
      top[i * kk + r] = int32_t(bi);
      topM[i * kk + r] = bv;
    }
    pv = bv;
    pi = bi;
  }
}

// The same output in one read of the row; kk ≤ KMAX.
template <int KMAX>
static __global__ void __launch_bounds__(kTopThreads) TopKOnePass(const float* __restrict__ m, int64_t nCols, int kk,
                                                           int32_t* __restrict__ top, float* __restrict__ topM) {
  const int64_t i = blockIdx.x;
  const float* row = m + i * nCols;
  __shared__ float sv[kTopThreads / 32];
  __shared__ int64_t si[kTopThreads / 32];
  // The thread's kk best so far, best first, and the kk-th (what a newcomer must beat), all in registers:
  // every index into lv / li is a compile-time constant of an unrolled loop.
  float lv[KMAX];
  int64_t li[KMAX];
#pragma unroll
  for (int j = 0; j < KMAX; ++j) {
    lv[j] = -FLT_MAX;
    li[j] = -1;
  }
  float tv = -FLT_MAX;
  int64_t ti = -1;
  for (int64_t c = threadIdx.x; c < nCols; c += kTopThreads) {
    const float v = row[c];
    if (!OrderBetter(v, c, tv, ti)) continue;
    bool done = false;
#pragma unroll
    for (int j = KMAX - 1; j >= 0; --j) {
      if (j < kk && !done) {
        if (j > 0 && OrderBetter(v, c, lv[j - 1], li[j - 1])) {
          lv[j] = lv[j - 1];  // the newcomer ranks above j − 1: shift that one down
          li[j] = li[j - 1];
        } else {
          lv[j] = v;
          li[j] = c;
          done = true;
        }
      }
      if (j == kk - 1) {  // the first step taken: lv[kk − 1] is final for this insertion
        tv = lv[j];
        ti = li[j];
      }
    }
  }
  for (int r = 0; r < kk; ++r) {
    float bv = lv[0];
    int64_t bi = li[0];
    BlockBest(bv, bi, sv, si);
    if (threadIdx.x == 0) {
      top[i * kk + r] = int32_t(bi);
      topM[i * kk + r] = bv;
    }
    if (bi >= 0 && li[0] == bi) {  // the winner (columns are the threads' own, so one thread) moves up
#pragma unroll
      for (int j = 0; j + 1 < KMAX; ++j) {
        lv[j] = lv[j + 1];
        li[j] = li[j + 1];
      }
      lv[KMAX - 1] = -FLT_MAX;
      li[KMAX - 1] = -1;
    }
  }
}

}  // namespace gavel::kernels::topk
