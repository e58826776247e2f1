// The glance's max-sim on CUDA (device.h): the twin of the CPU MaxSim in simd_body.inc.
//
// One block per (skill, tile of 64 query rows). The block walks its skill's keys in tiles of 64 and
// computes the 64 × 64 inner products of each pair of tiles like a small SGEMM: operands staged
// through shared memory 16 dimensions at a time, each of the 256 threads holding a 4 × 4 register
// tile (4 query rows × 4 keys). A thread keeps the running max (and its key) of its 4 rows over the
// keys it sees; at the end the 16 threads that share rows reduce by warp shuffles (they are 16
// consecutive lanes). Keys past the skill's end are masked, never read.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/cuda_tiles.cuh"
#include "common/failure.h"
#include "kernels/device.h"

namespace gavel::kernels::device {
namespace {

constexpr int kTileQ = cuda::kTileRows;  // query rows per block
constexpr int kTileK = cuda::kTileRows;  // keys per inner tile
constexpr int kTileD = cuda::kTileDims;  // dimensions staged per step
constexpr int kThreads = cuda::kTileThreads;
constexpr int64_t kSkillsPerLaunch = 4096;  // between two polls of the stop flag

void Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  const std::string msg = std::string(what) + ": " + cudaGetErrorString(e);
  if (e == cudaErrorMemoryAllocation) throw Failure(Code::OUT_OF_MEMORY, "CUDA " + msg);
  throw Failure(Code::CUDA_ERROR, msg);
}

// (value, index) ordering of the max: larger value, or equal value and lower index; index -1 (no
// key seen) loses to everything.
__device__ __forceinline__ bool Better(float v, int i, float bv, int bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
  return v > bv || (v == bv && i < bi);
}

__global__ void MaxSimKernel(const float* __restrict__ Q, int nq, const float* __restrict__ K,
                             const int64_t* __restrict__ off, int dim, int64_t nSkills, int64_t s0,
                             float* __restrict__ m, int* __restrict__ am, int* __restrict__ bad) {
  const int64_t s = s0 + blockIdx.x;
  const int q0 = blockIdx.y * kTileQ;
  const int64_t k0 = off[s], k1 = off[s + 1];
  __shared__ float Qs[kTileD][kTileQ + 4];
  __shared__ float Ks[kTileD][kTileK + 4];
  const int tid = threadIdx.x;
  const int tx = tid & 15;   // key group: keys tx*4 .. tx*4+3 of the tile
  const int ty = tid >> 4;   // row group: rows ty*4 .. ty*4+3 of the tile
  float best[4];
  int bidx[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    best[i] = -FLT_MAX;
    bidx[i] = -1;
  }
  for (int64_t kb = k0; kb < k1; kb += kTileK) {
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
    for (int d0 = 0; d0 < dim; d0 += kTileD) {
      for (int e = tid; e < kTileQ * kTileD; e += kThreads) {
        const int r = e / kTileD, c = e % kTileD;
        const int qi = q0 + r, d = d0 + c;
        Qs[c][r] = (qi < nq && d < dim) ? Q[int64_t(qi) * dim + d] : 0.f;
        const int64_t kj = kb + r;
        Ks[c][r] = (kj < k1 && d < dim) ? K[kj * dim + d] : 0.f;
      }
      __syncthreads();
      cuda::TileFma(Qs, Ks, tx, ty, acc);
      __syncthreads();
    }
    // Keys in increasing order within the thread, strict ">" (via Better): ties keep the lower key.
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t kj = kb + tx * 4 + j;
      if (kj >= k1) continue;
      const int local = int(kj - k0);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        // NaN/Inf in the keys (or queries): reported, as the CPU twin does, instead of ranked.
        if (!isfinite(acc[i][j])) *bad = 1;
        if (Better(acc[i][j], local, best[i], bidx[i])) {
          best[i] = acc[i][j];
          bidx[i] = local;
        }
      }
    }
  }
  // Reduce over the 16 lanes sharing these rows (lanes differ in their low 4 bits).
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float v = best[i];
    int ix = bidx[i];
#pragma unroll
    for (int w = 8; w >= 1; w >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, v, w);
      const int oi = __shfl_xor_sync(0xffffffffu, ix, w);
      if (Better(ov, oi, v, ix)) {
        v = ov;
        ix = oi;
      }
    }
    const int qi = q0 + ty * 4 + i;
    if (tx == 0 && qi < nq) {
      m[int64_t(qi) * nSkills + s] = ix < 0 ? -INFINITY : v;
      am[int64_t(qi) * nSkills + s] = ix;
    }
  }
}

template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    if (count > 0) Check(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc");
  }
  ~DeviceBuffer() {
    if (p != nullptr) cudaFree(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

class CudaKeys final : public DeviceKeys {
 public:
  CudaKeys(const SkillKeys& keys, int64_t dim)
      : dim_(dim), nSkills_(keys.nSkills), rows_(keys.offsets[keys.nSkills]),
        keys_(size_t(rows_ * dim)), off_(size_t(keys.nSkills + 1)) {
    // One copy per skill (skills live in separate host blocks); a skill's rows are contiguous.
    for (int64_t s = 0; s < nSkills_; ++s) {
      const int64_t r0 = keys.offsets[s], r1 = keys.offsets[s + 1];
      if (r1 > r0)
        Check(cudaMemcpy(keys_.p + r0 * dim, keys.base[s], size_t((r1 - r0) * dim) * sizeof(float), cudaMemcpyHostToDevice),
              "copying keys to the device");
    }
    Check(cudaMemcpy(off_.p, keys.offsets, size_t(nSkills_ + 1) * sizeof(int64_t), cudaMemcpyHostToDevice),
          "copying offsets to the device");
  }

  void MaxSim(const float* queries, int64_t nq, float* m, int32_t* argmax, const std::atomic<bool>* stop) const override {
    if (nq == 0 || nSkills_ == 0) return;
    if (nq > int64_t(kTileQ) * 65535) throw Failure(Code::INVALID_ARGUMENT, "glance: too many query rows for one CUDA launch");
    const size_t cells = size_t(nq * nSkills_);
    DeviceBuffer<float> q(size_t(nq * dim_));
    DeviceBuffer<float> dm(cells);
    DeviceBuffer<int> da(cells);
    DeviceBuffer<int> bad(1);
    Check(cudaMemset(bad.p, 0, sizeof(int)), "clearing the error flag");
    Check(cudaMemcpy(q.p, queries, size_t(nq * dim_) * sizeof(float), cudaMemcpyHostToDevice), "copying queries");
    const unsigned gy = unsigned((nq + kTileQ - 1) / kTileQ);
    for (int64_t s0 = 0; s0 < nSkills_; s0 += kSkillsPerLaunch) {
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) throw Failure(Code::ABORTED, "glance aborted");
      const unsigned gx = unsigned(std::min<int64_t>(kSkillsPerLaunch, nSkills_ - s0));
      MaxSimKernel<<<dim3(gx, gy), kThreads>>>(q.p, int(nq), keys_.p, off_.p, int(dim_), nSkills_, s0, dm.p, da.p, bad.p);
      Check(cudaGetLastError(), "launching the max-sim kernel");
      Check(cudaDeviceSynchronize(), "running the max-sim kernel");
    }
    int badHost = 0;
    Check(cudaMemcpy(&badHost, bad.p, sizeof(int), cudaMemcpyDeviceToHost), "reading the error flag");
    if (badHost != 0)
      throw Failure(Code::INVALID_ARGUMENT, "glance: a score came out non-finite; the bank holds NaN, Inf or overflowing values");
    Check(cudaMemcpy(m, dm.p, cells * sizeof(float), cudaMemcpyDeviceToHost), "copying max-sim scores back");
    Check(cudaMemcpy(argmax, da.p, cells * sizeof(int), cudaMemcpyDeviceToHost), "copying max-sim argmax back");
  }

  int64_t Skills() const override { return nSkills_; }
  int64_t Rows() const override { return rows_; }

 private:
  int64_t dim_, nSkills_, rows_;
  DeviceBuffer<float> keys_;
  DeviceBuffer<int64_t> off_;
};

}  // namespace

bool Available(std::string* why) { return cuda::DeviceAvailable(why); }

std::unique_ptr<DeviceKeys> Upload(const SkillKeys& keys, int64_t dim) {
  std::string why;
  if (!Available(&why)) throw Failure(Code::CUDA_UNAVAILABLE, why);
  if (dim < 1 || dim > (1 << 24)) throw Failure(Code::INVALID_ARGUMENT, "glance: bad key dimension for the device");
  return std::make_unique<CudaKeys>(keys, dim);
}

}  // namespace gavel::kernels::device
