// What the two CUDA max-sim kernels share, written once: the glance's (kernels/maxsim.cu) and the
// trainer's fp32 one (train/train_cuda_kernels.cuh) tile a block as 64 query rows × 64 keys, stage 16
// dimensions at a time in shared memory (rows padded by 4 against bank conflicts), and give each of
// 16 × 16 threads a 4 × 4 block of inner products. Also the device probe both twins answer with.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace gavel::cuda {

constexpr int kTileRows = 64;      // query rows, and keys, per block tile
constexpr int kTileDims = 16;      // dimensions staged per step
constexpr int kTileThreads = 256;  // 16 × 16 threads, 4 × 4 outputs each

/** A staged slab: kTileDims dimensions of kTileRows rows, transposed, padded by 4. */
using Slab = float[kTileDims][kTileRows + 4];

/** acc[i][j] += Σ_c Qs[c][4·ty + i] · Ks[c][4·tx + j] over one staged slab (in dimension order). */
__device__ __forceinline__ void TileFma(const Slab& Qs, const Slab& Ks, int tx, int ty, float (&acc)[4][4]) {
#pragma unroll
  for (int c = 0; c < kTileDims; ++c) {
    float a[4], b[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = Qs[c][ty * 4 + i];
#pragma unroll
    for (int j = 0; j < 4; ++j) b[j] = Ks[c][tx * 4 + j];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

/** Whether a CUDA device answers; if not, why (in `why`). */
inline bool DeviceAvailable(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why != nullptr) *why = e != cudaSuccess ? std::string("no CUDA device: ") + cudaGetErrorString(e) : "no CUDA device";
    return false;
  }
  return true;
}

}  // namespace gavel::cuda
