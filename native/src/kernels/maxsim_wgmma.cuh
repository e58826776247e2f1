// The glance's Hopper max-sim: wgmma (the warpgroup tensor-core instruction of sm_90a)
// reading both operands from shared memory, its keys brought by TMA (or a loader warpgroup's cp.async)
// through mbarriers. Compiled only where the build targets sm_90a (GAVEL_WGMMA_DEVICE below); elsewhere,
// and where the device code is not sm_90a's (maxsim.cu asks WgmmaProbe), maxsim.cu keeps the WMMA kernel.
// bench/cuda/maxsim-explore.cu checks it against a plain reference kernel and times it;
// scripts/device/glance-twins.mjs checks the glance built on it against the CPU twin.
//
// Why it is fast (~100 TFLOP/s for the WMMA kernel and the mma.sync candidate it replaced, which feed
// the tensor cores from registers and pace every step with __syncthreads; this one 514–585 TFLOP/s at
// 100K × 256 on an H100 and an H200, docs/BENCHMARKS.md):
//   - A block owns BM query rows (192 at dim ≤ 384: L2 then serves each key to 7 blocks for 1,300
//     rows, not 11), all of dimP resident in shared memory, and a group of G skills (columns).
//     Warpgroup 0 only loads; warpgroups 1 … BM/64 only multiply, 64 rows each.
//   - Keys stream as chunks of up to TN keys × 64 dimensions through a ring of STAGES buffers. With
//     TMA one thread issues each chunk as 2-D bulk copies (WgKeyMaps: boxes of 8 … 256 rows, the
//     tile's row count in binary digits), which write the 128-byte swizzle themselves; else the loader
//     warpgroup's 128 threads copy 16 bytes each by cp.async. A chunk's "full" mbarrier completes
//     when its bytes landed, its "empty" one when every multiplying warp is done reading it: no
//     block-wide barrier, so one warpgroup's epilogue does not hold up the others or the loads.
//   - Both operands are K-major with the 128-byte swizzle wgmma's descriptors name (conflict-free).
//   - One wgmma per 16 dimensions, m64 × nN × k16, with nN the tile's keys rounded up to 8: a 200-key
//     skill at TN = 128 costs 128 + 72 keys of products, not 256. Each chunk's four wgmma form one
//     group; the previous group is waited for (and its buffer released) after the next is issued.
//   - Each warp holds all nN columns of its 16 rows, so max (and argmax) reduce in registers and across
//     the quad by shuffles: no shared-memory reduction. ARGMAX = false skips the argmax (the vote
//     reads m alone): one fmax a product in the epilogue.
//   - The grid's x is the query-row block, so the blocks that read one group of skills run side by
//     side and share its keys through L2 (the bank is read from HBM about once, not once per BM rows).
// Same contract as MaxSimKernel (maxsim.cu): m[q·nCols + c], am[…] for every query row q and column c
// of the launch, the lower key on equal values, m = −1 and am = −1 for a column without keys (am
// untouched when ARGMAX is false).
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (types only: the encoder is reached through the runtime)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/topk.cuh"

// wgmma exists only in the architecture-specific sm_90a target.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GAVEL_WGMMA_DEVICE 1
#endif

namespace gavel::kernels::wgmma {

constexpr int kWgDC = 64;  // dimensions per chunk: one 128-byte swizzle row
/** Bytes of one chunk of tn keys × 64 dimensions (f16). */
__host__ __device__ constexpr int WgChunkBytes(int tn) { return tn * kWgDC * 2; }

/**
 * The bank's keys as seen by the tensor-memory accelerator (TMA): one 2-D map over K (rows × dimP, f16)
 * per box height 8, 16, 32, 64, 128, 256 rows, each box 64 dimensions wide and written to shared
 * memory with the 128-byte swizzle wgmma reads. A tile of n rows (a multiple of 8) loads as the boxes
 * of n's binary digits, so no key past the tile's width crosses from L2. Passed by value as a
 * __grid_constant__ kernel parameter (TMA reads the map from parameter space).
 */
constexpr int kWgBoxes = 6;
struct WgKeyMaps {
  CUtensorMap box[kWgBoxes];  // box[i]: 8 << i rows
};

/** Dynamic shared memory of WgmmaMaxSim<BM, TN, STAGES> for dimP (a multiple of 64): 1 KB of alignment slack, the queries, the ring, its barriers. */
inline size_t WgmmaSmem(int bm, int tn, int stages, int64_t dimP) {
  return 1024 + size_t(bm) * size_t(dimP) * 2 + size_t(stages) * size_t(WgChunkBytes(tn)) + size_t(2 * stages + 1) * 8;
}

#ifdef GAVEL_WGMMA_DEVICE
__device__ __forceinline__ uint32_t SmemAddr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }
// 16 bytes global → shared, asynchronously; zero-filled when !valid (src must still be a readable address).
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
template <int N>
__device__ __forceinline__ void CpWait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
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
// One specialization per width N = 8 … 256 (an inline-asm operand list of N/2 accumulator registers
// cannot be built by a template), generated by scripts/gen/wgmma-ops.mjs.
template <int N>
__device__ __forceinline__ void Wgmma(float* d, uint64_t a, uint64_t b, int scaleD);
#include "kernels/maxsim_wgmma_ops.inc"

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
// A multiplying warp is done with a ring stage (its wgmma finished, wait_group having synchronized the
// warp): one arrival for the warp, not 32 on the same shared-memory word.
__device__ __forceinline__ void ReleaseStage(uint32_t bar, int lane) {
  __syncwarp();
  if (lane == 0) MbarArrive(bar);
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
// One thread's TMA copy of box `map` at (dimension x, row y) into shared memory dst, counted on bar.
__device__ __forceinline__ void TmaLoad2d(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
      : "memory");
}
// Arrives on bar and tells it `bytes` more are to land (by TMA copies naming it) before it completes.
__device__ __forceinline__ void MbarArriveExpectTx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
#endif

// Calls f(std::integral_constant<int, N>{}) for N, the smallest multiple of 8 from N0 to TN that is ≥ n:
// a chain of branches, each with its own straight-line instantiation of f.
template <int N0, int TN>
struct WidthSwitch {
  template <typename F>
  __device__ __forceinline__ static void Run(int n, F& f) {
    if constexpr (N0 >= TN) {
      f(std::integral_constant<int, TN>{});
    } else {
      if (n <= N0) f(std::integral_constant<int, N0>{});
      else WidthSwitch<N0 + 8, TN>::Run(n, f);
    }
  }
};

// Grid (ceil(nq / BM), ceil(nLaunch / G)), 128 + BM · 2 threads, WgmmaSmem(BM, TN, STAGES, dimP) bytes of
// shared memory. Q: nq × dimP, K: rows × dimP (f16, zero-padded past dim); column c0 + j (j < nLaunch)
// owns keys colRow[c] … colRow[c] + colRows[c] − 1; dimP a multiple of 64. A tile is up to TN keys of
// one column (TN = 64, 128 or 256). TMA: the keys come by one thread's TMA copies through `maps` (made
// by MakeWgKeyMaps over the same K), not by the loader warpgroup's cp.async.
template <int BM, int TN, int STAGES, bool TMA = false, bool ARGMAX = true>
__global__ void __launch_bounds__(128 + BM * 2, 1) WgmmaMaxSim(const __half* __restrict__ Q, int nq, const __half* __restrict__ K, int dimP,
                                                             const int64_t* __restrict__ colRow, const int64_t* __restrict__ colRows,
                                                             int64_t nCols, int64_t c0, int64_t nLaunch, int G, float* __restrict__ m,
                                                             int32_t* __restrict__ am, const __grid_constant__ WgKeyMaps maps) {
#ifdef GAVEL_WGMMA_DEVICE
  extern __shared__ __align__(1024) unsigned char smemRaw[];
  unsigned char* smem = smemRaw + ((1024u - (SmemAddr(smemRaw) & 1023u)) & 1023u);
  unsigned char* Qs = smem;
  unsigned char* Ks = smem + size_t(BM) * dimP * 2;
  constexpr int kChunkBytes = WgChunkBytes(TN);
  const uint32_t bars = SmemAddr(Ks + STAGES * kChunkBytes);  // full[STAGES], empty[STAGES], queries
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
      MbarInit(fullBar(s), TMA ? 1 : 128);
      MbarInit(emptyBar(s), kConsumers / 32);  // one arrival per multiplying warp
    }
    MbarInit(qBar, 128);
  }
  __syncthreads();

  // Registers: a 256-key tile's accumulators alone take 128 a thread, more than an even split of the
  // SM's 65,536 over 128 + BM·2 threads leaves; the loader needs few, so it hands its share to the
  // multipliers (setmaxnreg: kLoaderRegs for the loader, kMulRegs for each multiplier).
  constexpr int kLoaderRegs = 40;
  constexpr int kMulRegs = ((65536 - kLoaderRegs * 128) / (BM * 2)) / 8 * 8 > 240 ? 240 : ((65536 - kLoaderRegs * 128) / (BM * 2)) / 8 * 8;
  if (warp < 4) {  // ---------------- the loader: 128 threads
    if constexpr (TN == 256) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kLoaderRegs));
    for (int e = tid; e < BM * (dimP / 8); e += 128) {
      const int r = e / (dimP / 8), v = e % (dimP / 8);
      const bool ok = q0 + r < nq;
      CpAsync16(SmemAddr(Qs + (v >> 3) * slabBytes + Sw128(r, v & 7)), Q + int64_t(ok ? q0 + r : 0) * dimP + v * 8, ok);
    }
    MbarArriveCpAsync(qBar);
    if constexpr (TMA) {
      if (tid != 0) return;  // one thread issues the TMA copies
    }
    int i = 0;  // chunks issued
    for (int64_t ps = nextColumn(s0); ps < s1; ps = nextColumn(ps + 1)) {
      const int nk = int(colRows[ps]);
      const int64_t kFirst = colRow[ps];
      for (int pt = 0; pt * TN < nk; ++pt) {
        const int64_t k0 = kFirst + int64_t(pt) * TN;
        // only the rows the tile's wgmma width reads: its keys rounded up to 8 (the extra ones zero by
        // cp.async; by TMA the next column's keys, or zero past the bank: the epilogue skips them)
        const int nValid = nk - pt * TN < TN ? nk - pt * TN : TN, nRows = (nValid + 7) & ~7;
        for (int pc = 0; pc < nChunks; ++pc, ++i) {
          const int stage = i % STAGES;
          if (i >= STAGES) MbarWait(emptyBar(stage), uint32_t((i / STAGES - 1) & 1));
          unsigned char* dst = Ks + stage * kChunkBytes;
          if constexpr (TMA) {
            const int row0 = int(kFirst) + pt * TN;  // TMA coordinates are 32-bit (MakeWgKeyMaps checks rows < 2^31)
            const uint32_t sdst = SmemAddr(dst);
            MbarArriveExpectTx(fullBar(stage), uint32_t(nRows) * 128u);
            int off = 0;
#pragma unroll
            for (int b = kWgBoxes - 1; b >= 0; --b)
              if (nRows & (8 << b)) {
                TmaLoad2d(sdst + uint32_t(off) * 128u, &maps.box[b], pc * kWgDC, row0 + off, fullBar(stage));
                off += 8 << b;
              }
          } else {
            for (int e = tid; e < nRows * 8; e += 128) {
              const int r = e >> 3, v = e & 7;
              const bool ok = r < nValid;
              CpAsync16(SmemAddr(dst + Sw128(r, v)), K + (ok ? k0 + r : kFirst) * dimP + pc * kWgDC + v * 8, ok);
            }
            MbarArriveCpAsync(fullBar(stage));
          }
        }
      }
    }
    CpWait<0>();
    return;
  }

  // ---------------- the multipliers: warpgroup wg = warp / 4 − 1 owns query rows 64·wg … 64·wg + 63
  if constexpr (TN == 256) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kMulRegs));
  const int ctid = tid - 128, wg = (warp >> 2) - 1;
  for (int64_t s = s0; s < s1; ++s)
    if (colRows[s] == 0)
      for (int r = ctid; r < BM; r += kConsumers)
        if (q0 + r < nq) {
          m[int64_t(q0 + r) * nCols + s] = -1.f;
          if constexpr (ARGMAX) am[int64_t(q0 + r) * nCols + s] = -1;
        }
  float acc[TN / 2];
#pragma unroll
  for (int j = 0; j < TN / 2; ++j) acc[j] = 0.f;
  const int rowA = wg * 64 + (warp & 3) * 16 + (lane >> 2);
  float best[2] = {-FLT_MAX, -FLT_MAX};
  int bidx[2] = {-1, -1};
  const uint32_t qBase = SmemAddr(Qs) + uint32_t(wg) * 64u * 128u;
  const uint32_t kBase = SmemAddr(Ks);
  MbarWait(qBar, 0);
  int i = 0, held = -1;  // chunks consumed; the stage whose products may still be in flight
  for (int64_t cs = nextColumn(s0); cs < s1; cs = nextColumn(cs + 1)) {
    const int nk = int(colRows[cs]);
    for (int ct = 0; ct * TN < nk; ++ct) {
      const int nValid = nk - ct * TN < TN ? nk - ct * TN : TN;
      // The tile's chunks at one wgmma width N (its keys rounded up to 8), the whole tile inside one
      // branch of WidthSwitch below: the accumulators an in-flight wgmma defines never meet those of
      // another width at a control-flow merge, where ptxas would wait for them (C7517) and so lose
      // the overlap of one chunk's products with the next one's issue.
      const auto tile = [&](auto width) {
        constexpr int N = decltype(width)::value;
        for (int cc = 0; cc < nChunks; ++cc, ++i) {
          const int stage = i % STAGES;
          MbarWait(fullBar(stage), uint32_t((i / STAGES) & 1));
          // cp.async writes through the generic proxy: the fence makes them visible to wgmma's reads (TMA
          // writes through the async proxy already)
          if constexpr (!TMA) FenceProxyAsync();
#pragma unroll
          for (int j = 0; j < N / 2; ++j) WgKeep(acc[j]);
          WgChunk<N>(acc, qBase + uint32_t(cc) * uint32_t(slabBytes), kBase + uint32_t(stage) * uint32_t(kChunkBytes), cc == 0);
          if (cc + 1 < nChunks) {
            WgWait<1>();  // the previous chunk's products are done: release its buffer
            if (held >= 0) ReleaseStage(emptyBar(held), lane);
            held = stage;
            continue;
          }
          WgWait<0>();
          if (held >= 0) ReleaseStage(emptyBar(held), lane);
          ReleaseStage(emptyBar(stage), lane);
          held = -1;
#pragma unroll
          for (int j = 0; j < N / 2; ++j) WgKeep(acc[j]);
          // acc[4j + e] at row rowA, acc[4j + 2 + e] at row rowA + 8, key 8j + 2·(lane % 4) + e; only
          // the last group of 8 keys can hold keys past nValid (N is nValid rounded up to 8)
#pragma unroll
          for (int j = 0; j < N / 8; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int col = 8 * j + 2 * (lane & 3) + e;
              if (j + 1 < N / 8 || col < nValid) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                  const float v = acc[4 * j + 2 * h + e];
                  if constexpr (ARGMAX) {
                    if (v > best[h]) {
                      best[h] = v;
                      bidx[h] = ct * TN + col;
                    }
                  } else {
                    best[h] = fmaxf(best[h], v);
                  }
                }
              }
            }
        }
      };
      WidthSwitch<8, TN>::Run(nValid, tile);
    }
    // the column's last tile done: reduce over the quad and write
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float v = best[h];
      int vi = bidx[h];
#pragma unroll
      for (int x = 1; x <= 2; x <<= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, v, x);
        if constexpr (ARGMAX) {
          const int oi = __shfl_xor_sync(0xffffffffu, vi, x);
          if (topk::OrderBetter(ov, oi, v, vi)) {  // the max-sim's (value, index) order
            v = ov;
            vi = oi;
          }
        } else {
          v = fmaxf(v, ov);
        }
      }
      const int r = rowA + 8 * h;
      if ((lane & 3) == 0 && q0 + r < nq) {
        m[int64_t(q0 + r) * nCols + cs] = v;
        if constexpr (ARGMAX) am[int64_t(q0 + r) * nCols + cs] = vi;
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

/**
 * Fills maps for TMA reads of K (rows × dimP f16, dimP a multiple of 64, 16-byte aligned). Returns an
 * empty string on success, else why not (no driver entry point, too many rows for 32-bit coordinates,
 * or the encoder's error), so that the caller keeps the cp.async loader.
 */
inline const char* MakeWgKeyMaps(const __half* K, int64_t rows, int64_t dimP, WgKeyMaps* maps) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                              const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = nullptr;
  if (encode == nullptr) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || fn == nullptr)
      return "cuTensorMapEncodeTiled is not available from the driver";
    encode = reinterpret_cast<Encode>(fn);
  }
  if (rows < 1 || rows >= (int64_t(1) << 31) - 256) return "the bank has too many key rows for TMA's 32-bit coordinates";
  if (dimP % kWgDC != 0) return "the key width is not a multiple of 64";
  const cuuint64_t dims[2] = {cuuint64_t(dimP), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(dimP) * 2};
  const cuuint32_t elem[2] = {1, 1};
  for (int b = 0; b < kWgBoxes; ++b) {
    const cuuint32_t box[2] = {cuuint32_t(kWgDC), cuuint32_t(8 << b)};
    const CUresult r = encode(&maps->box[b], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<__half*>(K), dims, strides, box, elem,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return "cuTensorMapEncodeTiled refused the bank's key layout";
  }
  return "";
}

}  // namespace gavel::kernels::wgmma
