// The glance's candidate max-sim (opt-in: GAVEL_GLANCE_KERNEL=mma, maxsim.cu), written
// without a GPU and not yet run on one: bench/cuda/maxsim-explore.cu checks it against a plain
// reference kernel and times it, and scripts/device/glance-twins.mjs against the CPU twin.
//
// Against MaxSimKernel (WMMA 16×16×16 through shared-memory fragments, one block per column and 64
// query rows, both operands staged 64 dimensions at a time with synchronous loads):
//   - mma.sync m16n8k16 (f16 in, fp32 accumulate) with operands loaded by ldmatrix;
//   - the block's BM query rows stay in shared memory for a group of G columns, so queries are read
//     once per G skills, not once per 64 keys;
//   - keys stream 64 keys × 64 dimensions at a time through a cp.async ring of kMmaStages buffers,
//     so the next chunk loads while this one multiplies;
//   - each warp holds 32 rows × 32 keys in registers; max and argmax are reduced there (the lower key
//     on equal values), across the quad by shuffles, across the two key-warps once per column;
//   - n8 key slices wholly past a column's last key are skipped (warp-uniform), so a 200-key skill
//     costs 200 keys of products, not 256.
// Same outputs as MaxSimKernel: m[q·nCols + c] and am[…] for every query row q and column c of the
// launch, m = −1 and am = −1 for a column without keys.
#pragma once

// GAVEL_MMA_HOST_EMULATION: compiled as host C++ by a lane-level emulator (native/test/maxsim_mma_emu.cpp),
// which supplies the CUDA builtins and the six warp primitives below, so this very kernel's indexing,
// fragments and reductions are tested on a CPU against a plain reference.
#ifndef GAVEL_MMA_HOST_EMULATION
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

#include <cfloat>
#include <cstddef>
#include <cstdint>

namespace gavel::kernels::mma {

constexpr int kBN = 64;              // keys per tile
constexpr int kDC = 64;              // dimensions per streamed chunk
constexpr int kLdK = kDC + 8;        // shared row stride of a key chunk in halves (144 B: ldmatrix without bank conflicts)
constexpr int kMmaStages = 3;        // cp.async ring depth

/** Dynamic shared memory of MmaMaxSim<BM> for dimP (a multiple of 64): the queries, the ring, the reduction. */
inline size_t MmaSmem(int bm, int64_t dimP) {
  return size_t(bm) * size_t(dimP + 8) * 2 + size_t(kMmaStages) * kBN * kLdK * 2 + size_t(bm) * 8;
}

// (value, index) order: larger value, or equal value and lower index; index −1 loses to everything.
__device__ __forceinline__ bool MmaBetter(float v, int i, float bv, int bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
  return v > bv || (v == bv && i < bi);
}
#ifndef GAVEL_MMA_HOST_EMULATION
__device__ __forceinline__ uint32_t SmemAddr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }
// 16 bytes global → shared, asynchronously; zero-filled when !valid (src must still be a readable address).
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void CpCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void CpWait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__device__ __forceinline__ void LdMatrixX4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
// c (16×8, fp32) += a (16×16, row-major f16) · b (16×8, f16, given as its 8 columns of 16)
__device__ __forceinline__ void Mma16816(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

// Grid (ceil(nLaunch / G), ceil(nq / BM)), BM · 2 threads (BM / 32 row groups × 2 key halves of a tile).
// Q: nq × dimP, K: rows × dimP (f16, zero-padded past dim); column c0 + j (j < nLaunch) owns keys
// colRow[c] … colRow[c] + colRows[c] − 1. dimP a multiple of kDC; MmaSmem(BM, dimP) bytes of shared memory.
template <int BM>
__global__ void __launch_bounds__(BM * 2) MmaMaxSim(const __half* __restrict__ Q, int nq, const __half* __restrict__ K, int dimP,
                                                    const int64_t* __restrict__ colRow, const int64_t* __restrict__ colRows,
                                                    int64_t nCols, int64_t c0, int64_t nLaunch, int G, float* __restrict__ m,
                                                    int32_t* __restrict__ am) {
  constexpr int kThreads = BM * 2;
  extern __shared__ __align__(128) unsigned char smem[];
  const int ldq = dimP + 8;
  __half* Qs = reinterpret_cast<__half*>(smem);
  __half* Ks = Qs + size_t(BM) * ldq;
  float* redV = reinterpret_cast<float*>(Ks + kMmaStages * kBN * kLdK);
  int* redI = reinterpret_cast<int*>(redV + BM);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wr = warp >> 1, wc = warp & 1;  // row group (32 rows), key half (32 keys of a tile)
  const int q0 = blockIdx.y * BM;
  const int64_t s0 = c0 + int64_t(blockIdx.x) * G;
  const int64_t s1 = c0 + (int64_t(blockIdx.x) * G + G < nLaunch ? int64_t(blockIdx.x) * G + G : nLaunch);
  const int nChunks = dimP / kDC;
  const auto keysOf = [&](int64_t s) { return int(colRows[s]); };
  const auto nextColumn = [&](int64_t s) {
    while (s < s1 && colRows[s] == 0) ++s;
    return s;
  };

  // the query tile, once (group 0 of the cp.async groups)
  {
    const int vecs = dimP / 8;
    for (int e = tid; e < BM * vecs; e += kThreads) {
      const int r = e / vecs, v = e % vecs;
      const bool ok = q0 + r < nq;
      CpAsync16(SmemAddr(Qs + r * ldq + v * 8), Q + int64_t(ok ? q0 + r : 0) * dimP + v * 8, ok);
    }
    CpCommit();
  }
  // The producer's position (column ps, key tile pt, chunk pc) runs kMmaStages − 1 chunks ahead of the
  // consumer's; past the last chunk it commits empty groups, so the wait counts stay uniform.
  int64_t ps = nextColumn(s0);
  int pt = 0, pc = 0;
  const auto issue = [&](int stage) {
    if (ps < s1) {
      const int nk = keysOf(ps);
      const int64_t kFirst = colRow[ps], k0 = kFirst + int64_t(pt) * kBN;
      __half* dst = Ks + stage * kBN * kLdK;
      for (int e = tid; e < kBN * (kDC / 8); e += kThreads) {
        const int r = e >> 3, v = e & 7;
        const bool ok = pt * kBN + r < nk;
        CpAsync16(SmemAddr(dst + r * kLdK + v * 8), K + (ok ? k0 + r : kFirst) * dimP + pc * kDC + v * 8, ok);
      }
      if (++pc == nChunks) {
        pc = 0;
        if (++pt * kBN >= nk) {
          pt = 0;
          ps = nextColumn(ps + 1);
        }
      }
    }
    CpCommit();
  };
  for (int i = 0; i < kMmaStages - 1; ++i) issue(i);

  // columns without keys: m = −1, am = −1 (none of their tiles streams)
  for (int64_t s = s0; s < s1; ++s)
    if (colRows[s] == 0)
      for (int r = tid; r < BM; r += kThreads)
        if (q0 + r < nq) {
          m[int64_t(q0 + r) * nCols + s] = -1.f;
          am[int64_t(q0 + r) * nCols + s] = -1;
        }

  float acc[2][4][4];
  float best[2][2];  // the column's best so far for the thread's 4 rows (2 m16 × upper / lower 8)
  int bidx[2][2];
  const auto resetBest = [&]() {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        best[i][h] = -FLT_MAX;
        bidx[i][h] = -1;
      }
  };
  resetBest();
  int64_t cs = nextColumn(s0);
  int ct = 0, cc = 0, stage = 0;
  while (cs < s1) {  // block-uniform: every __syncthreads below is reached by all threads
    const int nk = keysOf(cs);
    CpWait<kMmaStages - 2>();  // this stage's chunk (and the queries) landed
    __syncthreads();           // … for every thread; and the stage refilled next was consumed by all
    issue((stage + kMmaStages - 1) % kMmaStages);
    if (cc == 0) {
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    }
    const __half* Kst = Ks + stage * kBN * kLdK;
    const int keyBase = ct * kBN + wc * 32;  // the warp's first key, counted within the column
#pragma unroll
    for (int kk = 0; kk < kDC; kk += 16) {
      uint32_t a[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        // lanes 0–15: rows 0–15 at k, lanes 16–31: rows 0–15 at k + 8 → a0 … a3 of the m16n8k16 A fragment
        const int row = wr * 32 + i * 16 + (lane & 15);
        LdMatrixX4(SmemAddr(Qs + row * ldq + cc * kDC + kk + (lane >> 4) * 8), a[i][0], a[i][1], a[i][2], a[i][3]);
      }
#pragma unroll
      for (int jp = 0; jp < 2; ++jp) {
        if (keyBase + jp * 16 >= nk) continue;  // warp-uniform: both n8 slices past the column's keys
        // lanes 0–7 keys 0–7 at k, 8–15 keys 0–7 at k + 8, 16–23 keys 8–15 at k, 24–31 keys 8–15 at k + 8
        // → (b0, b1) of the first n8 slice, (b2, b3) of the second
        uint32_t b0, b1, b2, b3;
        const int key = wc * 32 + jp * 16 + (lane & 7) + ((lane >> 4) << 3);
        LdMatrixX4(SmemAddr(Kst + key * kLdK + kk + ((lane >> 3) & 1) * 8), b0, b1, b2, b3);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          Mma16816(acc[i][jp * 2], a[i], b0, b1);
          Mma16816(acc[i][jp * 2 + 1], a[i], b2, b3);
        }
      }
    }
    if (cc == nChunks - 1) {
      // The tile's products: c0, c1 at row lane / 4 and c2, c3 at row lane / 4 + 8 of each m16, keys
      // 2·(lane % 4) + {0, 1} of each n8. Best per row over the thread's 8 keys, then over the quad.
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float v = -FLT_MAX;
          int vi = -1;
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int k = keyBase + j * 8 + 2 * (lane & 3) + e;
              if (k < nk && MmaBetter(acc[i][j][h * 2 + e], k, v, vi)) {
                v = acc[i][j][h * 2 + e];
                vi = k;
              }
            }
#pragma unroll
          for (int x = 1; x <= 2; x <<= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, v, x);
            const int oi = __shfl_xor_sync(0xffffffffu, vi, x);
            if (MmaBetter(ov, oi, v, vi)) {
              v = ov;
              vi = oi;
            }
          }
          if (MmaBetter(v, vi, best[i][h], bidx[i][h])) {
            best[i][h] = v;
            bidx[i][h] = vi;
          }
        }
      if ((ct + 1) * kBN >= nk) {
        // The column's last tile: the two key halves of each row group meet in shared memory. redV/redI
        // are written again only at the next column's last tile, past this loop's next __syncthreads.
        if (wc == 1 && (lane & 3) == 0) {
#pragma unroll
          for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int r = wr * 32 + i * 16 + h * 8 + (lane >> 2);
              redV[r] = best[i][h];
              redI[r] = bidx[i][h];
            }
        }
        __syncthreads();
        if (wc == 0 && (lane & 3) == 0) {
#pragma unroll
          for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int r = wr * 32 + i * 16 + h * 8 + (lane >> 2);
              float v = best[i][h];
              int vi = bidx[i][h];
              if (MmaBetter(redV[r], redI[r], v, vi)) {
                v = redV[r];
                vi = redI[r];
              }
              if (q0 + r < nq) {
                m[int64_t(q0 + r) * nCols + cs] = v;
                am[int64_t(q0 + r) * nCols + cs] = vi;
              }
            }
        }
        resetBest();
      }
    }
    if (++cc == nChunks) {  // the consumer's position, as the producer's
      cc = 0;
      if (++ct * kBN >= nk) {
        ct = 0;
        cs = nextColumn(cs + 1);
      }
    }
    stage = (stage + 1) % kMmaStages;
  }
  CpWait<0>();
}

}  // namespace gavel::kernels::mma
