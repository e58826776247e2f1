// The glance's Hopper max-sim for issue 15: wgmma (the warpgroup tensor-core instruction of sm_90a)
// reading both operands from shared memory. Compiled only where the build targets sm_90a
// (GAVEL_HAS_WGMMA below); elsewhere maxsim.cu keeps the WMMA kernel. bench/cuda/maxsim-explore.cu
// checks it against a plain reference kernel and times it; scripts/device/glance-twins.mjs checks the
// glance built on it against the CPU twin.
//
// Why it is faster than the mma.sync kernels (~100 TFLOP/s on an H200, session 15): mma.sync feeds
// the tensor cores from registers, so every 16 × 8 product costs ldmatrix traffic through the register
// file; wgmma reads a 64-row query slab and a key chunk straight from shared memory for the four warps
// of a warpgroup at once.
//   - A block owns BM query rows (one warpgroup of 128 threads per 64 rows), all of dimP resident in
//     shared memory, and a group of G skills (columns).
//   - Keys stream as chunks of 64 keys × 64 dimensions (8 KB) through a cp.async ring of STAGES
//     buffers, prefetched STAGES − 2 chunks ahead; both operands are stored K-major with the
//     128-byte swizzle wgmma's descriptors name, so the reads are free of bank conflicts.
//   - One wgmma per 16 dimensions, m64 × nN × k16, with nN the tile's keys rounded up to 8: a
//     200-key skill costs 64 + 64 + 64 + 8 keys of products, not 256.
//   - Each warp holds all nN columns of its 16 rows, so max and argmax reduce in registers and
//     across the quad by shuffles: no shared-memory reduction.
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

// wgmma exists only in the architecture-specific sm_90a target.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GAVEL_WGMMA_DEVICE 1
#endif

namespace gavel::kernels::wgmma {

constexpr int kWgBN = 64;      // keys per tile (and per chunk)
constexpr int kWgDC = 64;      // dimensions per chunk: one 128-byte swizzle row
constexpr int kWgChunkBytes = kWgBN * kWgDC * 2;

/** Dynamic shared memory of WgmmaMaxSim<BM, STAGES> for dimP (a multiple of 64): 1 KB of alignment slack, the queries, the ring. */
inline size_t WgmmaSmem(int bm, int stages, int64_t dimP) { return 1024 + size_t(bm) * size_t(dimP) * 2 + size_t(stages) * kWgChunkBytes; }

// (value, index) order: larger value, or equal value and lower index; index −1 loses to everything.
__device__ __forceinline__ bool WgBetter(float v, int i, float bv, int bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
  return v > bv || (v == bv && i < bi);
}

#ifdef GAVEL_WGMMA_DEVICE
__device__ __forceinline__ uint32_t WgSmemAddr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void WgCpAsync16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void WgCpCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void WgCpWait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
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

// Dispatches on the tile's key count rounded up to 8 (warp-uniform).
__device__ __forceinline__ void WgmmaN(int n8, float* d, uint64_t a, uint64_t b, int scaleD) {
  switch (n8) {
    case 8: Wgmma<8>(d, a, b, scaleD); break;
    case 16: Wgmma<16>(d, a, b, scaleD); break;
    case 24: Wgmma<24>(d, a, b, scaleD); break;
    case 32: Wgmma<32>(d, a, b, scaleD); break;
    case 40: Wgmma<40>(d, a, b, scaleD); break;
    case 48: Wgmma<48>(d, a, b, scaleD); break;
    case 56: Wgmma<56>(d, a, b, scaleD); break;
    default: Wgmma<64>(d, a, b, scaleD); break;
  }
}
#endif  // GAVEL_WGMMA_DEVICE

// Grid (ceil(nq / BM), ceil(nLaunch / G)), BM · 2 threads (BM / 64 warpgroups); a ring of kWgStages
// chunks, prefetched kWgStages − 2 ahead (deeper hides more of HBM's latency, costs shared memory). Q: nq × dimP, K: rows ×
// dimP (f16, zero-padded past dim); column c0 + j (j < nLaunch) owns keys colRow[c] … colRow[c] +
// colRows[c] − 1. dimP a multiple of 64; WgmmaSmem(BM, dimP) bytes of shared memory.
template <int BM, int kWgStages>
__global__ void __launch_bounds__(BM * 2) WgmmaMaxSim(const __half* __restrict__ Q, int nq, const __half* __restrict__ K, int dimP,
                                                      const int64_t* __restrict__ colRow, const int64_t* __restrict__ colRows,
                                                      int64_t nCols, int64_t c0, int64_t nLaunch, int G, float* __restrict__ m,
                                                      int32_t* __restrict__ am) {
#ifdef GAVEL_WGMMA_DEVICE
  constexpr int kThreads = BM * 2;
  extern __shared__ __align__(1024) unsigned char smemRaw[];
  // the swizzle is a function of address bits 4–9: every tile starts on a 1,024-byte boundary
  unsigned char* smem = smemRaw + ((1024u - (WgSmemAddr(smemRaw) & 1023u)) & 1023u);
  unsigned char* Qs = smem;                                // dimP / 64 slabs of BM rows × 128 B
  unsigned char* Ks = smem + size_t(BM) * dimP * 2;        // kWgStages chunks of 64 keys × 128 B
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wg = warp >> 2;                                // warpgroup: query rows 64·wg … 64·wg + 63
  const int q0 = blockIdx.x * BM;
  const int64_t g0 = int64_t(blockIdx.y) * G;
  const int64_t s0 = c0 + g0, s1 = c0 + (g0 + G < nLaunch ? g0 + G : nLaunch);
  const int nChunks = dimP / kWgDC;
  const int slabBytes = BM * 128;
  const auto nextColumn = [&](int64_t s) {
    while (s < s1 && colRows[s] == 0) ++s;
    return s;
  };

  // the query tile, once (the first cp.async group)
  for (int e = tid; e < BM * (dimP / 8); e += kThreads) {
    const int r = e / (dimP / 8), v = e % (dimP / 8);  // row, 16-byte piece of the row
    const bool ok = q0 + r < nq;
    WgCpAsync16(WgSmemAddr(Qs + (v >> 3) * slabBytes + Sw128(r, v & 7)), Q + int64_t(ok ? q0 + r : 0) * dimP + v * 8, ok);
  }
  WgCpCommit();

  // The producer's position (column ps, key tile pt, chunk pc) runs kWgStages − 2 chunks ahead of the
  // consumer's; past the last chunk it commits empty groups, so the wait counts stay uniform.
  int64_t ps = nextColumn(s0);
  int pt = 0, pc = 0, pstage = 0;
  const auto issue = [&]() {
    if (ps < s1) {
      const int nk = int(colRows[ps]);
      const int64_t kFirst = colRow[ps], k0 = kFirst + int64_t(pt) * kWgBN;
      unsigned char* dst = Ks + pstage * kWgChunkBytes;
      for (int e = tid; e < kWgBN * 8; e += kThreads) {
        const int r = e >> 3, v = e & 7;
        const bool ok = pt * kWgBN + r < nk;
        WgCpAsync16(WgSmemAddr(dst + Sw128(r, v)), K + (ok ? k0 + r : kFirst) * dimP + pc * kWgDC + v * 8, ok);
      }
      if (++pc == nChunks) {
        pc = 0;
        if (++pt * kWgBN >= nk) {
          pt = 0;
          ps = nextColumn(ps + 1);
        }
      }
    }
    WgCpCommit();
    pstage = pstage + 1 == kWgStages ? 0 : pstage + 1;
  };
  for (int i = 0; i < kWgStages - 2; ++i) issue();

  // columns without keys: m = −1, am = −1 (none of their tiles streams)
  for (int64_t s = s0; s < s1; ++s)
    if (colRows[s] == 0)
      for (int r = tid; r < BM; r += kThreads)
        if (q0 + r < nq) {
          m[int64_t(q0 + r) * nCols + s] = -1.f;
          am[int64_t(q0 + r) * nCols + s] = -1;
        }

  float acc[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) acc[i] = 0.f;
  // The thread's two rows: lane / 4 and lane / 4 + 8 of its warp's 16; the column's best so far over
  // the thread's own keys (visited in increasing order, so a strict > keeps the lower key on ties).
  const int rowA = wg * 64 + (warp & 3) * 16 + (lane >> 2);
  float best[2] = {-FLT_MAX, -FLT_MAX};
  int bidx[2] = {-1, -1};
  const uint32_t qBase = WgSmemAddr(Qs) + uint32_t(wg) * 64u * 128u;
  const uint32_t kBase = WgSmemAddr(Ks);

  int64_t cs = nextColumn(s0);
  int ct = 0, cc = 0, stage = 0;
  while (cs < s1) {  // block-uniform: every __syncthreads below is reached by all threads
    const int nk = int(colRows[cs]);
    const int nValid = nk - ct * kWgBN < kWgBN ? nk - ct * kWgBN : kWgBN;
    const int n8 = (nValid + 7) & ~7;
    WgCpWait<kWgStages - 3>();  // this chunk (and the queries) landed, for this thread's copies
    FenceProxyAsync();
    __syncthreads();            // … for every thread's; and the chunk two back was read by both warpgroups
    issue();                    // into the buffer of the chunk two back
#pragma unroll
    for (int i = 0; i < 32; ++i) WgKeep(acc[i]);
    WgFence();
#pragma unroll
    for (int k = 0; k < kWgDC / 16; ++k) {
      const uint64_t da = WgDesc(qBase + uint32_t(cc) * uint32_t(slabBytes) + uint32_t(k) * 32u);
      const uint64_t db = WgDesc(kBase + uint32_t(stage) * kWgChunkBytes + uint32_t(k) * 32u);
      WgmmaN(n8, acc, da, db, (cc > 0 || k > 0) ? 1 : 0);
    }
    WgCommit();
    if (cc == nChunks - 1) {
      WgWait<0>();
#pragma unroll
      for (int i = 0; i < 32; ++i) WgKeep(acc[i]);
      // The tile's products: acc[4j + e] at row rowA, acc[4j + 2 + e] at row rowA + 8, key 8j + 2·(lane % 4) + e.
#pragma unroll
      for (int j = 0; j < 8; ++j)
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
      if ((ct + 1) * kWgBN >= nk) {  // the column's last tile: reduce over the quad and write
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v = best[h];
          int vi = bidx[h];
#pragma unroll
          for (int x = 1; x <= 2; x <<= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, v, x);
            const int oi = __shfl_xor_sync(0xffffffffu, vi, x);
            if (WgBetter(ov, oi, v, vi)) {
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
    } else {
      WgWait<1>();  // the previous chunk's products are done: its buffer may be refilled next round
    }
    if (++cc == nChunks) {  // the consumer's position, as the producer's
      cc = 0;
      if (++ct * kWgBN >= nk) {
        ct = 0;
        cs = nextColumn(cs + 1);
      }
    }
    stage = stage + 1 == kWgStages ? 0 : stage + 1;
  }
  WgWait<0>();
  WgCpWait<0>();
#else
  // Not sm_90a code: the host never launches this (WgmmaBuilt asks the device first), so reaching here is a bug.
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
