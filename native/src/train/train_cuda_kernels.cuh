// The kernels of the trainer's CUDA step (train_cuda.cu drives them; train_device.h says what the
// step computes). Layout: row-major float32 matrices (rows × dim), bf16 copies padded to dimP (a
// multiple of 64) with zeros. A "pair" is (task t, query row i of t, candidate c of t), numbered
// pairOff[t] + i·nc(t) + c as in train_core.h.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cfloat>
#include <cstdint>

#include "common/cuda_tiles.cuh"

namespace gavel::train::device {

// One block of the max-sim: up to 64 query rows of one task against all keys of one candidate.
struct Work {
  int32_t q0;   // first global query row of the tile
  int32_t nq;   // rows in the tile (1 … 64)
  int32_t k0;   // the candidate skill's first global key row
  int32_t nk;   // its rows (≥ 1)
  int64_t out;  // pair index of (tile row 0, this candidate)
  int32_t stride;  // nc of the task: pairs between two rows
  int32_t pad;
};

// Flags raised by kernels (slots of one int array).
enum Flag { kWeightsBad = 0, kQueriesBad = 1, kSkillsBad = 2, kOverflow = 3, kForcedBad = 4, kFlags = 5 };

__device__ __forceinline__ bool Better(float v, int i, float bv, int bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
  return v > bv || (v == bv && i < bi);
}

__device__ __forceinline__ double WarpSum(double v) {
#pragma unroll
  for (int w = 16; w >= 1; w >>= 1) v += __shfl_xor_sync(0xffffffffu, v, w);
  return v;
}

__global__ void NonFiniteKernel(const float* __restrict__ x, int64_t n, int* flags, int slot) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    if (!isfinite(x[i])) flags[slot] = 1;
}

// Row i of U ← normalize(row i) in place (one warp per row, the norm in double); r[i] = ‖U_i‖, 0 for
// a zero row (which stays zero). When Ub is given, also its bf16 copy padded to dimP.
__global__ void NormalizeRowsKernel(float* __restrict__ U, int64_t n, int dim, double* __restrict__ r,
                                    __nv_bfloat16* __restrict__ Ub, int dimP, int* flags) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (row >= n) return;
  float* u = U + row * dim;
  double ss = 0;
  for (int o = lane; o < dim; o += 32) ss += double(u[o]) * double(u[o]);
  ss = WarpSum(ss);
  if (!isfinite(ss)) {
    if (lane == 0) flags[kOverflow] = 1;
    ss = 0;
  }
  const double norm = ss > 0 ? sqrt(ss) : 0.0, inv = ss > 0 ? 1.0 / norm : 0.0;
  if (lane == 0) r[row] = norm;
  for (int o = lane; o < dim; o += 32) {
    const float y = static_cast<float>(double(u[o]) * inv);
    u[o] = y;
    if (Ub != nullptr) Ub[row * dimP + o] = __float2bfloat16_rn(y);
  }
  if (Ub != nullptr)
    for (int o = dim + lane; o < dimP; o += 32) Ub[row * dimP + o] = __float2bfloat16_rn(0.f);
}

// Given keys (W_s frozen): their bf16 copy, padded.
__global__ void ToBf16Kernel(const float* __restrict__ X, int64_t n, int dim, __nv_bfloat16* __restrict__ Xb, int dimP) {
  const int64_t total = n * dimP;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = e / dimP;
    const int o = int(e - row * dimP);
    Xb[e] = __float2bfloat16_rn(o < dim ? X[row * dim + o] : 0.f);
  }
}

// ---- max-sim, float32 (CUDA cores): the glance kernel's tiling (kernels/maxsim.cu) over Work items.
constexpr int kF32Tile = cuda::kTileRows, kF32D = cuda::kTileDims, kF32Threads = cuda::kTileThreads;

__global__ void __launch_bounds__(kF32Threads) MaxSimF32Kernel(const float* __restrict__ Q, const float* __restrict__ K,
                                                                int dim, const Work* __restrict__ work,
                                                                float* __restrict__ m, int32_t* __restrict__ am) {
  const Work w = work[blockIdx.x];
  __shared__ float Qs[kF32D][kF32Tile + 4];
  __shared__ float Ks[kF32D][kF32Tile + 4];
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  float best[4];
  int bidx[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    best[i] = -FLT_MAX;
    bidx[i] = -1;
  }
  for (int kb = 0; kb < w.nk; kb += kF32Tile) {
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
    for (int d0 = 0; d0 < dim; d0 += kF32D) {
      for (int e = tid; e < kF32Tile * kF32D; e += kF32Threads) {
        const int r = e / kF32D, c = e % kF32D, d = d0 + c;
        Qs[c][r] = (r < w.nq && d < dim) ? Q[int64_t(w.q0 + r) * dim + d] : 0.f;
        Ks[c][r] = (kb + r < w.nk && d < dim) ? K[int64_t(w.k0 + kb + r) * dim + d] : 0.f;
      }
      __syncthreads();
      cuda::TileFma(Qs, Ks, tx, ty, acc);
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int key = kb + tx * 4 + j;
      if (key >= w.nk) continue;
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (Better(acc[i][j], key, best[i], bidx[i])) {
          best[i] = acc[i][j];
          bidx[i] = key;
        }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float v = best[i];
    int ix = bidx[i];
#pragma unroll
    for (int s = 8; s >= 1; s >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, v, s);
      const int oi = __shfl_xor_sync(0xffffffffu, ix, s);
      if (Better(ov, oi, v, ix)) {
        v = ov;
        ix = oi;
      }
    }
    const int r = ty * 4 + i;
    if (tx == 0 && r < w.nq) {
      m[w.out + int64_t(r) * w.stride] = v;
      am[w.out + int64_t(r) * w.stride] = ix;
    }
  }
}

// ---- max-sim search, bf16 tensor cores (wmma 16×16×16, fp32 accumulate) ----------------------
// 4 warps; the block's 64 query rows × 64 keys per tile, warp w owning rows 16w … 16w+15 (four
// 16×16 accumulators). Operands staged 64 dimensions at a time (16-byte loads, rows padded by 8
// bf16 against bank conflicts); the tile's products land in shared memory, where two lanes per row
// scan 32 keys each in increasing order (strict >: ties keep the lower key) and keep the running
// best across tiles. Only the argmax is written: the score is recomputed in fp32 (RescoreKernel).
constexpr int kBfTile = 64, kBfD = 64, kBfLd = kBfD + 8, kBfLdC = kBfTile + 4, kBfThreads = 128;

__global__ void __launch_bounds__(kBfThreads) MaxSimBf16Kernel(const __nv_bfloat16* __restrict__ Q,
                                                                const __nv_bfloat16* __restrict__ K, int dimP,
                                                                const Work* __restrict__ work, int32_t* __restrict__ am) {
  using namespace nvcuda;
  const Work w = work[blockIdx.x];
  __shared__ __align__(128) __nv_bfloat16 As[kBfTile * kBfLd];
  __shared__ __align__(128) __nv_bfloat16 Bs[kBfTile * kBfLd];
  __shared__ __align__(128) float Cs[kBfTile * kBfLdC];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int half = lane & 1;
  const float* myC = Cs + (warp * 16 + (lane >> 1)) * kBfLdC + half * 32;
  float best = -FLT_MAX;
  int bidx = -1;
  for (int kb = 0; kb < w.nk; kb += kBfTile) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[j], 0.f);
    for (int d0 = 0; d0 < dimP; d0 += kBfD) {
      // 64 rows × 64 bf16 = 512 16-byte vectors per operand, 4 per thread.
#pragma unroll
      for (int e = tid; e < kBfTile * 8; e += kBfThreads) {
        const int r = e >> 3, v = e & 7;
        uint4 a = make_uint4(0, 0, 0, 0), b = make_uint4(0, 0, 0, 0);
        if (r < w.nq) a = *reinterpret_cast<const uint4*>(Q + int64_t(w.q0 + r) * dimP + d0 + v * 8);
        if (kb + r < w.nk) b = *reinterpret_cast<const uint4*>(K + int64_t(w.k0 + kb + r) * dimP + d0 + v * 8);
        *reinterpret_cast<uint4*>(As + r * kBfLd + v * 8) = a;
        *reinterpret_cast<uint4*>(Bs + r * kBfLd + v * 8) = b;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kBfD; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
        wmma::load_matrix_sync(fa, As + warp * 16 * kBfLd + kk, kBfLd);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          // B (dims × keys) is Bs read column-major: element (dim k, key n) at Bs[n·ld + k].
          wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
          wmma::load_matrix_sync(fb, Bs + j * 16 * kBfLd + kk, kBfLd);
          wmma::mma_sync(acc[j], fa, fb, acc[j]);
        }
      }
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
      wmma::store_matrix_sync(Cs + warp * 16 * kBfLdC + j * 16, acc[j], kBfLdC, wmma::mem_row_major);
    __syncwarp();
    const int kFirst = kb + half * 32;
    const int kEnd = min(32, w.nk - kFirst);
    for (int j = 0; j < kEnd; ++j) {
      const float v = myC[j];
      if (bidx < 0 || v > best) {
        best = v;
        bidx = kFirst + j;
      }
    }
    __syncwarp();
  }
  const float ov = __shfl_xor_sync(0xffffffffu, best, 1);
  const int oi = __shfl_xor_sync(0xffffffffu, bidx, 1);
  if (Better(ov, oi, best, bidx)) bidx = oi;
  const int r = warp * 16 + (lane >> 1);
  if (half == 0 && r < w.nq) am[w.out + int64_t(r) * w.stride] = bidx;
}

// The batch's index arrays on the device (all int32 except pairOff).
struct DevIndex {
  const int32_t* qOff;
  const int32_t* sOff;
  const int32_t* cOff;
  const int32_t* cand;
  const uint8_t* pos;
  const int64_t* pairOff;
  const int32_t* rowTask;  // task of each query row
};

// m of every pair of query row i (one block per row, a warp per candidate): ⟨Yq_i, Ys_argmax⟩ in
// float32. Also range-checks the argmax values (forced ones may be wrong): flag `badSlot`.
__global__ void RescoreKernel(const float* __restrict__ Yq, const float* __restrict__ Ys, int dim, DevIndex ix,
                              const int32_t* __restrict__ am, float* __restrict__ m, int* flags, int badSlot) {
  const int i = blockIdx.x, t = ix.rowTask[i];
  const int c0 = ix.cOff[t], nc = ix.cOff[t + 1] - c0;
  const int64_t p0 = ix.pairOff[t] + int64_t(i - ix.qOff[t]) * nc;
  const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  const float* q = Yq + int64_t(i) * dim;
  for (int c = threadIdx.x >> 5; c < nc; c += nw) {
    const int s = ix.cand[c0 + c];
    const int k = am[p0 + c];
    if (k < 0 || k >= ix.sOff[s + 1] - ix.sOff[s]) {
      if (lane == 0) flags[badSlot] = 1;
      continue;
    }
    const float* d = Ys + int64_t(ix.sOff[s] + k) * dim;
    float acc = 0.f;
    for (int o = lane; o < dim; o += 32) acc = fmaf(q[o], d[o], acc);
#pragma unroll
    for (int w = 16; w >= 1; w >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, w);
    if (lane == 0) m[p0 + c] = acc;
  }
}

// Per task (one block): m̄(c) = τ·mean_i m, L_t = lse_all − lse_pos, coef(c) = ∂L/∂m̄(c)/(T·nq).
constexpr int kLossThreads = 256;

__global__ void __launch_bounds__(kLossThreads) TaskLossKernel(const float* __restrict__ m, DevIndex ix, double tau,
                                                               double invT, double* __restrict__ mbar,
                                                               double* __restrict__ coef, double* __restrict__ loss) {
  const int t = blockIdx.x, tid = threadIdx.x;
  const int nq = ix.qOff[t + 1] - ix.qOff[t], c0 = ix.cOff[t], nc = ix.cOff[t + 1] - c0;
  const int64_t p0 = ix.pairOff[t];
  __shared__ double red[kLossThreads];
  __shared__ double red2[kLossThreads];
  double mx = -INFINITY;
  for (int c = tid; c < nc; c += kLossThreads) {
    double s = 0;
    for (int i = 0; i < nq; ++i) s += m[p0 + int64_t(i) * nc + c];
    const double v = tau * s / double(nq);
    mbar[c0 + c] = v;
    mx = fmax(mx, v);
  }
  red[tid] = mx;
  __syncthreads();
  for (int w = kLossThreads / 2; w >= 1; w >>= 1) {
    if (tid < w) red[tid] = fmax(red[tid], red[tid + w]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  double zAll = 0, zPos = 0;
  for (int c = tid; c < nc; c += kLossThreads) {
    const double e = exp(mbar[c0 + c] - mx);
    zAll += e;
    if (ix.pos[c0 + c]) zPos += e;
  }
  red[tid] = zAll;
  red2[tid] = zPos;
  __syncthreads();
  for (int w = kLossThreads / 2; w >= 1; w >>= 1) {
    if (tid < w) {
      red[tid] += red[tid + w];
      red2[tid] += red2[tid + w];
    }
    __syncthreads();
  }
  zAll = red[0];
  zPos = red2[0];
  if (tid == 0) loss[t] = log(zAll) - log(zPos);
  for (int c = tid; c < nc; c += kLossThreads) {
    const double e = exp(mbar[c0 + c] - mx);
    const double d = tau * (e / zAll - (ix.pos[c0 + c] ? e / zPos : 0.0));
    coef[c0 + c] = d * invT / double(nq);
  }
}

// Per query row i (one block, threads over dims): gYq_i = Σ_c coef(c)·Ys_argmax (candidates in
// order, float32 as the CPU); unless the keys are given, gYs_argmax += coef(c)·Yq_i (atomics).
__global__ void GradPairsKernel(const float* __restrict__ Yq, const float* __restrict__ Ys, int dim, DevIndex ix,
                                const int32_t* __restrict__ am, const double* __restrict__ coef,
                                float* __restrict__ gYq, float* __restrict__ gYs) {
  const int i = blockIdx.x, t = ix.rowTask[i];
  const int c0 = ix.cOff[t], nc = ix.cOff[t + 1] - c0;
  const int64_t p0 = ix.pairOff[t] + int64_t(i - ix.qOff[t]) * nc;
  const float* q = Yq + int64_t(i) * dim;
  for (int o = threadIdx.x; o < dim; o += blockDim.x) {
    float acc = 0.f;
    const float qo = q[o];
    for (int c = 0; c < nc; ++c) {
      const int64_t key = ix.sOff[ix.cand[c0 + c]] + am[p0 + c];
      const float w = static_cast<float>(coef[c0 + c]);
      acc += w * Ys[key * dim + o];
      if (gYs != nullptr) atomicAdd(gYs + key * dim + o, w * qo);
    }
    gYq[int64_t(i) * dim + o] = acc;
  }
}

// The backward of y = u/‖u‖ in place (one warp per row): g ← (g − y⟨y, g⟩)/‖u‖, 0 where ‖u‖ = 0.
__global__ void NormalizeBackwardKernel(const float* __restrict__ Y, const double* __restrict__ r, float* __restrict__ G,
                                        int64_t n, int dim) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (row >= n) return;
  float* g = G + row * dim;
  const float* y = Y + row * dim;
  if (r[row] == 0) {
    for (int o = lane; o < dim; o += 32) g[o] = 0.f;
    return;
  }
  double dot = 0;
  for (int o = lane; o < dim; o += 32) dot += double(y[o]) * double(g[o]);
  dot = WarpSum(dot);
  const double inv = 1.0 / r[row];
  for (int o = lane; o < dim; o += 32) g[o] = static_cast<float>((double(g[o]) - double(y[o]) * dot) * inv);
}

__global__ void SumSquaresKernel(const float* __restrict__ x, int64_t n, double* out) {
  double s = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    s += double(x[i]) * double(x[i]);
  s = WarpSum(s);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}

// AdamW with decoupled weight decay, fp32 state, math in double (train_core's AdamWUpdate).
__global__ void AdamWKernel(float* __restrict__ w, float* __restrict__ m, float* __restrict__ v, const float* __restrict__ g,
                            int64_t n, double lr, double b1, double b2, double eps, double wd, double c1, double c2) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double gi = g[i];
    const double mi = __dadd_rn(__dmul_rn(b1, double(m[i])), __dmul_rn(1 - b1, gi));
    const double vi = __dadd_rn(__dmul_rn(b2, double(v[i])), __dmul_rn(__dmul_rn(1 - b2, gi), gi));
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
    double wi = w[i];
    wi = __dsub_rn(wi, __dmul_rn(__dmul_rn(lr, wd), wi));
    wi = __dsub_rn(wi, __dmul_rn(lr, mi / c1) / (sqrt(vi / c2) + eps));
    w[i] = static_cast<float>(wi);
  }
}

// One resident batch entry for the gather: its skill's first row in a resident chunk (binary16),
// the batch rows it fills (dst …), and its kept rows keep[keep0 … keep0 + rows − 1] (keepN 0: all).
struct GatherEntry {
  const __half* src;
  int32_t dst;
  int32_t rows;
  int32_t keep0;
  int32_t keepN;
};

// The resident gather: block (e, y) converts rows y, y + gridDim.y, … of entry e from f16 to f32
// into the step's skill buffer (the rows an explicit batch would have carried, exactly: every
// binary16 value is a float32).
__global__ void GatherHalfKernel(const GatherEntry* __restrict__ entries, const int32_t* __restrict__ keep, int width,
                                 float* __restrict__ out) {
  const GatherEntry g = entries[blockIdx.x];
  for (int j = blockIdx.y; j < g.rows; j += gridDim.y) {
    const int64_t r = g.keepN > 0 ? keep[g.keep0 + j] : j;
    const __half* src = g.src + r * width;
    float* o = out + (int64_t(g.dst) + j) * width;
    for (int c = threadIdx.x; c < width; c += blockDim.x) o[c] = __half2float(src[c]);
  }
}

}  // namespace gavel::train::device
