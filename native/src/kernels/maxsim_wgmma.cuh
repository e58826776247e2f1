// The glance's Hopper max-sim for issue 15: wgmma (the warpgroup tensor-core instruction of sm_90a)
// reading both operands from shared memory, fed by a loader warpgroup through mbarriers. Compiled only
// where the build targets sm_90a (GAVEL_WGMMA_DEVICE below); elsewhere, and where the device code is
// not sm_90a's (maxsim.cu asks WgmmaProbe), maxsim.cu keeps the WMMA kernel.
// bench/cuda/maxsim-explore.cu checks it against a plain reference kernel and times it;
// scripts/device/glance-twins.mjs checks the glance built on it against the CPU twin.
//
// Why it is faster than the WMMA and mma.sync kernels (~100 TFLOP/s on an H200): those feed the tensor
// cores from registers through ldmatrix, and a block-wide __syncthreads paces every 64-dimension step;
// here (session 15, H200: 280–324 TFLOP/s at issue 15's shapes):
//   - A block owns BM query rows, all of dimP resident in shared memory, and a group of G skills
//     (columns). Warpgroup 0 (128 threads) only loads; warpgroups 1 … BM/64 only multiply, 64 rows each.
//   - Keys stream as chunks of 64 keys × 64 dimensions (8 KB) through a ring of STAGES buffers. A
//     chunk's "full" mbarrier completes when the loader's cp.async copies landed, its "empty" one when
//     every multiplying thread is done reading it: no block-wide barrier, so one warpgroup's epilogue
//     does not hold up the other or the loads.
//   - Both operands are K-major with the 128-byte swizzle wgmma's descriptors name (conflict-free).
//   - One wgmma per 16 dimensions, m64 × nN × k16, with nN the tile's keys rounded up to 8: a 200-key
//     skill costs 64 + 64 + 64 + 8 keys of products, not 256. Each chunk's four wgmma form one group;
//     the previous group is waited for (and its buffer released) after the next is issued.
//   - Each warp holds all nN columns of its 16 rows, so max and argmax reduce in registers and across
//     the quad by shuffles: no shared-memory reduction.
//   - The grid's x is the query-row block, so the blocks that read one group of skills run side by
//     side and share its keys through L2 (the bank is read from HBM about once, not once per BM rows).
// Same contract as MaxSimKernel and MmaMaxSim: m[q·nCols + c], am[…] for every query row q and column c
// of the launch, the lower key on equal values, m = −1 and am = −1 for a column without keys.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/maxsim_mma.cuh"

// wgmma exists only in the architecture-specific sm_90a target.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GAVEL_WGMMA_DEVICE 1
#endif

namespace gavel::kernels::wgmma {

constexpr int kWgBN = 64;      // keys per tile (and per chunk)
constexpr int kWgDC = 64;      // dimensions per chunk: one 128-byte swizzle row
constexpr int kWgChunkBytes = kWgBN * kWgDC * 2;

/** Dynamic shared memory of WgmmaMaxSim<BM, STAGES> for dimP (a multiple of 64): 1 KB of alignment slack, the queries, the ring, its barriers. */
inline size_t WgmmaSmem(int bm, int stages, int64_t dimP) {
  return 1024 + size_t(bm) * size_t(dimP) * 2 + size_t(stages) * kWgChunkBytes + size_t(2 * stages + 1) * 8;
}

#ifdef GAVEL_WGMMA_DEVICE
// The cp.async helpers and the (value, index) order are the mma.sync kernel's (kernels/maxsim_mma.cuh).
using mma::CpAsync16;
using mma::CpWait;
using mma::SmemAddr;
// cp.async writes through the generic proxy, wgmma reads through the async proxy: the fence orders them.
__device__ __forceinline__ void FenceProxyAsync() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void WgFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void WgWait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Keeps the compiler from moving reads or writes of an accumulator across the asynchronous wgmma.
__device__ __forceinline__ void WgKeep(float& x) { asm volatile("" : "+f"(x)::"memory"); }

// A shared-memory matrix descriptor: K-major rows of 128 bytes, 128-byte swizzle, 8-row groups 1,024
// bytes apart (the stride byte offset); the leading byte offset is unused by this layout (1 by
// convention). The tile's base is 1,024-byte aligned, so a start 32·k bytes in selects dimensions
// 16k … 16k + 15 of every row.
__device__ __forceinline__ uint64_t WgDesc(uint32_t saddr) {
  return uint64_t((saddr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
// Byte offset of 16-byte piece v (0…7) of row r in a 128-byte-swizzled tile.
__device__ __forceinline__ uint32_t Sw128(int r, int v) { return uint32_t(r) * 128u + (uint32_t(v ^ (r & 7)) << 4); }

// d (64 × N of fp32, this thread's N/2) = (scaleD ? d : 0) + A (64 × 16) · B (16 × N), both from shared memory.
// One specialization per width: an inline-asm operand list (N/2 accumulator registers) cannot be
// built by a template, so the eight are written out, alike but for N and the register count.
template <int N>
__device__ __forceinline__ void Wgmma(float* d, uint64_t a, uint64_t b, int scaleD);
template <>
__device__ __forceinline__ void Wgmma<8>(float* d, uint64_t a, uint64_t b, int scaleD) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(a), "l"(b), "r"(scaleD));
}
template <>
__device__ __forceinline__ void Wgmma<16>(float* d, uint64_t a, uint64_t b, int scaleD) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(a), "l"(b), "r"(scaleD));
}
template <>
__device__ __forceinline__ void Wgmma<24>(float* d, uint64_t a, uint64_t b, int scaleD) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %14, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11}, %12, %13, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
      : "l"(a), "l"(b), "r"(scaleD));
}
template <>
__device__ __forceinline__ void Wgmma<32>(float* d, uint64_t a, uint64_t b, int scaleD) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(a), "l"(b), "r"(scaleD));
}
template <>
__device__ __forceinline__ void Wgmma<40>(float* d, uint64_t a, uint64_t b, int scaleD) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %22, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n40k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19}, %20, %21, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
      : "l"(a), "l"(b), "r"(scaleD));
}
template <>
__device__ __forceinline__ void Wgmma<48>(float* d, uint64_t a, uint64_t b, int scaleD) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n48k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23}, %24, %25, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
      : "l"(a), "l"(b), "r"(scaleD));
}
template <>
__device__ __forceinline__ void Wgmma<56>(float* d, uint64_t a, uint64_t b, int scaleD) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %30, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n56k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27}, %28, %29, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
      : "l"(a), "l"(b), "r"(scaleD));
}
template <>
__device__ __forceinline__ void Wgmma<64>(float* d, uint64_t a, uint64_t b, int scaleD) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(scaleD));
}

// One chunk's products: fence, the four k16 steps of 64 dimensions at a fixed N, commit. The kernel
// calls it from straight-line code per width, so no wgmma is on a path the compiler sees as divergent
// (where it would serialize them: ptxas's C7520).
template <int N>
__device__ __forceinline__ void WgChunk(float* d, uint32_t qAddr, uint32_t kAddr, bool first) {
  WgFence();
#pragma unroll
  for (int k = 0; k < kWgDC / 16; ++k)
    Wgmma<N>(d, WgDesc(qAddr + uint32_t(k) * 32u), WgDesc(kAddr + uint32_t(k) * 32u), (first && k == 0) ? 0 : 1);
  WgCommit();
}
// mbarriers (shared-memory barriers that count arrivals and flip a phase bit when the count is met)
__device__ __forceinline__ void MbarInit(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void MbarArrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
// Arrives on bar once this thread's earlier cp.async copies have landed (counted in the barrier's init).
__device__ __forceinline__ void MbarArriveCpAsync(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the phase of the given parity (0 for the barrier's first completion, 1 for its second, …) completed.
__device__ __forceinline__ void MbarWait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}
#endif

// Grid (ceil(nq / BM), ceil(nLaunch / G)), 128 + BM · 2 threads, WgmmaSmem(BM, STAGES, dimP) bytes of
// shared memory. Q: nq × dimP, K: rows × dimP (f16, zero-padded past dim); column c0 + j (j < nLaunch)
// owns keys colRow[c] … colRow[c] + colRows[c] − 1; dimP a multiple of 64.
template <int BM, int STAGES>
__global__ void __launch_bounds__(128 + BM * 2) WgmmaMaxSim(const __half* __restrict__ Q, int nq, const __half* __restrict__ K, int dimP,
                                                             const int64_t* __restrict__ colRow, const int64_t* __restrict__ colRows,
                                                             int64_t nCols, int64_t c0, int64_t nLaunch, int G, float* __restrict__ m,
                                                             int32_t* __restrict__ am) {
#ifdef GAVEL_WGMMA_DEVICE
  extern __shared__ __align__(1024) unsigned char smemRaw[];
  unsigned char* smem = smemRaw + ((1024u - (SmemAddr(smemRaw) & 1023u)) & 1023u);
  unsigned char* Qs = smem;
  unsigned char* Ks = smem + size_t(BM) * dimP * 2;
  const uint32_t bars = SmemAddr(Ks + STAGES * kWgChunkBytes);  // full[STAGES], empty[STAGES], queries
  const auto fullBar = [&](int s) { return bars + uint32_t(s) * 8u; };
  const auto emptyBar = [&](int s) { return bars + uint32_t(STAGES + s) * 8u; };
  const uint32_t qBar = bars + uint32_t(2 * STAGES) * 8u;
  constexpr int kConsumers = BM * 2;
  // the warp index through a shuffle: the compiler then knows it is the same across the warp, and does
  // not treat the roles' wgmma as divergent code (which it would serialize)
  const int tid = threadIdx.x, lane = tid & 31, warp = __shfl_sync(0xffffffffu, tid >> 5, 0);
  const int q0 = blockIdx.x * BM;
  const int64_t g0 = int64_t(blockIdx.y) * G;
  const int64_t s0 = c0 + g0, s1 = c0 + (g0 + G < nLaunch ? g0 + G : nLaunch);
  const int nChunks = dimP / kWgDC;
  const int slabBytes = BM * 128;
  const auto nextColumn = [&](int64_t s) {
    while (s < s1 && colRows[s] == 0) ++s;
    return s;
  };
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      MbarInit(fullBar(s), 128);
      MbarInit(emptyBar(s), kConsumers);
    }
    MbarInit(qBar, 128);
  }
  __syncthreads();

  if (warp < 4) {  // ---------------- the loader: 128 threads
    for (int e = tid; e < BM * (dimP / 8); e += 128) {
      const int r = e / (dimP / 8), v = e % (dimP / 8);
      const bool ok = q0 + r < nq;
      CpAsync16(SmemAddr(Qs + (v >> 3) * slabBytes + Sw128(r, v & 7)), Q + int64_t(ok ? q0 + r : 0) * dimP + v * 8, ok);
    }
    MbarArriveCpAsync(qBar);
    int i = 0;  // chunks issued
    for (int64_t ps = nextColumn(s0); ps < s1; ps = nextColumn(ps + 1)) {
      const int nk = int(colRows[ps]);
      const int64_t kFirst = colRow[ps];
      for (int pt = 0; pt * kWgBN < nk; ++pt) {
        const int64_t k0 = kFirst + int64_t(pt) * kWgBN;
        for (int pc = 0; pc < nChunks; ++pc, ++i) {
          const int stage = i % STAGES;
          if (i >= STAGES) MbarWait(emptyBar(stage), uint32_t((i / STAGES - 1) & 1));
          unsigned char* dst = Ks + stage * kWgChunkBytes;
#pragma unroll
          for (int e = tid; e < kWgBN * 8; e += 128) {
            const int r = e >> 3, v = e & 7;
            const bool ok = pt * kWgBN + r < nk;
            CpAsync16(SmemAddr(dst + Sw128(r, v)), K + (ok ? k0 + r : kFirst) * dimP + pc * kWgDC + v * 8, ok);
          }
          MbarArriveCpAsync(fullBar(stage));
        }
      }
    }
    CpWait<0>();
    return;
  }

  // ---------------- the multipliers: warpgroup wg = warp / 4 − 1 owns query rows 64·wg … 64·wg + 63
  const int ctid = tid - 128, wg = (warp >> 2) - 1;
  for (int64_t s = s0; s < s1; ++s)
    if (colRows[s] == 0)
      for (int r = ctid; r < BM; r += kConsumers)
        if (q0 + r < nq) {
          m[int64_t(q0 + r) * nCols + s] = -1.f;
          am[int64_t(q0 + r) * nCols + s] = -1;
        }
  float acc[32];
#pragma unroll
  for (int j = 0; j < 32; ++j) acc[j] = 0.f;
  const int rowA = wg * 64 + (warp & 3) * 16 + (lane >> 2);
  float best[2] = {-FLT_MAX, -FLT_MAX};
  int bidx[2] = {-1, -1};
  const uint32_t qBase = SmemAddr(Qs) + uint32_t(wg) * 64u * 128u;
  const uint32_t kBase = SmemAddr(Ks);
  MbarWait(qBar, 0);
  int i = 0, held = -1;  // chunks consumed; the stage whose products may still be in flight
  for (int64_t cs = nextColumn(s0); cs < s1; cs = nextColumn(cs + 1)) {
    const int nk = int(colRows[cs]);
    for (int ct = 0; ct * kWgBN < nk; ++ct) {
      const int nValid = nk - ct * kWgBN < kWgBN ? nk - ct * kWgBN : kWgBN;
      // The tile's chunks at one wgmma width N (its keys rounded up to 8), the whole tile inside one
      // case of the switch below: the accumulators an in-flight wgmma defines never meet those of
      // another width at a control-flow merge, where ptxas would wait for them (C7517) and so lose
      // the overlap of one chunk's products with the next one's issue.
      const auto tile = [&](auto width) {
        constexpr int N = decltype(width)::value;
        for (int cc = 0; cc < nChunks; ++cc, ++i) {
          const int stage = i % STAGES;
          MbarWait(fullBar(stage), uint32_t((i / STAGES) & 1));
          FenceProxyAsync();  // the copies, observed through the barrier, made visible to wgmma's reads
#pragma unroll
          for (int j = 0; j < N / 2; ++j) WgKeep(acc[j]);
          WgChunk<N>(acc, qBase + uint32_t(cc) * uint32_t(slabBytes), kBase + uint32_t(stage) * kWgChunkBytes, cc == 0);
          if (cc + 1 < nChunks) {
            WgWait<1>();  // the previous chunk's products are done: release its buffer
            if (held >= 0) MbarArrive(emptyBar(held));
            held = stage;
            continue;
          }
          WgWait<0>();
          if (held >= 0) MbarArrive(emptyBar(held));
          MbarArrive(emptyBar(stage));
          held = -1;
#pragma unroll
          for (int j = 0; j < N / 2; ++j) WgKeep(acc[j]);
          // acc[4j + e] at row rowA, acc[4j + 2 + e] at row rowA + 8, key 8j + 2·(lane % 4) + e
#pragma unroll
          for (int j = 0; j < N / 8; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int col = 8 * j + 2 * (lane & 3) + e;
              if (col < nValid) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                  const float v = acc[4 * j + 2 * h + e];
                  if (v > best[h]) {
                    best[h] = v;
                    bidx[h] = ct * kWgBN + col;
                  }
                }
              }
            }
        }
      };
      switch ((nValid + 7) & ~7) {
        case 8: tile(std::integral_constant<int, 8>{}); break;
        case 16: tile(std::integral_constant<int, 16>{}); break;
        case 24: tile(std::integral_constant<int, 24>{}); break;
        case 32: tile(std::integral_constant<int, 32>{}); break;
        case 40: tile(std::integral_constant<int, 40>{}); break;
        case 48: tile(std::integral_constant<int, 48>{}); break;
        case 56: tile(std::integral_constant<int, 56>{}); break;
        default: tile(std::integral_constant<int, 64>{}); break;
      }
    }
    // the column's last tile done: reduce over the quad and write
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float v = best[h];
      int vi = bidx[h];
#pragma unroll
      for (int x = 1; x <= 2; x <<= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, v, x);
        const int oi = __shfl_xor_sync(0xffffffffu, vi, x);
        if (mma::MmaBetter(ov, oi, v, vi)) {
          v = ov;
          vi = oi;
        }
      }
      const int r = rowA + 8 * h;
      if ((lane & 3) == 0 && q0 + r < nq) {
        m[int64_t(q0 + r) * nCols + cs] = v;
        am[int64_t(q0 + r) * nCols + cs] = vi;
      }
      best[h] = -FLT_MAX;
      bidx[h] = -1;
    }
  }
#else
  __trap();
#endif
}

// *out = 1 where the device code running is sm_90a's (it has wgmma), else 0.
__global__ void WgmmaProbe(int* out) {
#ifdef GAVEL_WGMMA_DEVICE
  *out = 1;
#else
  *out = 0;
#endif
}

}  // namespace gavel::kernels::wgmma
