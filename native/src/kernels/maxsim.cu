// The glance on CUDA (device.h): f16 keys resident on the device, a fused tensor-core max-sim, the
// top-k selection on the device, the vote's sum on the host. The CPU twin is kernels_core's Glance.
// One max-sim per GPU generation, one contract (ChooseKernel picks; the GAVEL_GLANCE_KERNEL setting,
// common/settings.h, may force WMMA):
//   - wgmma (kernels/maxsim_wgmma.cuh): Hopper's warpgroup MMA, its keys brought by TMA (or a loader
//     warpgroup's cp.async) through mbarriers, where the device code is sm_90a's (a probe kernel says)
//     and 64 query rows of the dimension fit in shared memory: 320–595 TFLOP/s on an H100 at 100K
//     skills × 256 dimensions and neighbouring shapes (docs/BENCHMARKS.md), against the WMMA kernel's ~100;
//   - WMMA (below): elsewhere (other GPUs, non-sm_90a builds, dims past ~1,600).
// The top-k after either is kernels/topk.cuh's.
//
// Why fused max-sims rather than cuBLAS GEMM + a reduction: the products of a glance are nq × rows
// floats (1,300 × 20M = 104 GB at 100K skills × 200 keys), so a GEMM that writes them and a kernel
// that reads them back move ~200 GB through HBM (~60 ms on an H100) whatever the GEMM's speed;
// reducing each tile to its per-(row, skill) max on chip moves only the keys (f16) and m/argmax
// (nq × skills). The WMMA kernel's tiling follows the trainer's bf16 search kernel
// (train/train_cuda_kernels.cuh): one block per (column, 64 query rows), 4 warps of 16 rows × 64
// keys, operands staged 64 dimensions at a time.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "common/cuda_tiles.cuh"
#include "common/cuda_memory.cuh"
#include "common/failure.h"
#include "common/half.h"
#include "common/settings.h"
#include "kernels/device.h"
#include "kernels/kernels_core.h"
#include "kernels/maxsim_wgmma.cuh"
#include "kernels/topk.cuh"

namespace gavel::kernels::device {
namespace {

constexpr int kTile = 64;              // query rows per block, and keys per tile
constexpr int kD = 64;                 // dimensions staged per step; rows are padded to a multiple
constexpr int kLd = kD + 8;            // shared row stride in halves (16-byte rows, fewer bank conflicts)
constexpr int kLdC = kTile + 4;        // shared row stride of the products
constexpr int kThreads = 128;          // 4 warps; warp w owns query rows 16w … 16w + 15
// Between two polls of the stop flag: ~15 ms of max-sim at dim 256 on an H200; fewer,
// larger launches lose less to each launch's last partial wave and to the syncs between them.
constexpr int64_t kColsPerLaunch = 65536;

using cuda::Buf;
using cuda::Check;

// (value, index) order of the max-sim and the top-k (kernels/topk.cuh): larger value, or equal value
// and lower index; index -1 (nothing seen) loses to everything.
using topk::OrderBetter;

// Shared memory of MaxSimKernel: one 64-dimension slab of the query tile, one of keys, the products
// (36 KiB: under the 48 KiB a block gets without opting in).
constexpr size_t kMaxSimSmem = (kTile * kLd + kTile * kLd) * sizeof(__half) + kTile * kLdC * sizeof(float);

// m[i·nCols + c], am[…] for the block's column c = c0 + blockIdx.x and query rows q0 … q0 + 63.
// Q is nq × dimP, K rows × dimP (f16, zero-padded past dim, so the padding adds nothing).
// Both operands are staged 64 dimensions at a time. (Keeping the query tile resident instead halves
// the loads but was slower at every measured shape on an H100, 25% at dim 256 and 3x at dim 768: the
// staged loads were already hidden; docs/BENCHMARKS.md.)
__global__ void __launch_bounds__(kThreads) MaxSimKernel(const __half* __restrict__ Q, int nq,
                                                         const __half* __restrict__ K, int dimP,
                                                         const int64_t* __restrict__ colRow,
                                                         const int64_t* __restrict__ colRows, int64_t nCols, int64_t c0,
                                                         float* __restrict__ m, int32_t* __restrict__ am) {
  using namespace nvcuda;
  const int64_t c = c0 + blockIdx.x;
  const int q0 = blockIdx.y * kTile;
  const int64_t k0 = colRow[c];
  const int nk = int(colRows[c]);
  // Offsets in bytes are multiples of 32 (WMMA's pointer alignment): 64·lda·2 with lda ≡ 8 (mod 64).
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int lda = kLd;
  __half* As = reinterpret_cast<__half*>(smem);
  __half* Bs = As + kTile * lda;
  float* Cs = reinterpret_cast<float*>(Bs + kTile * kLd);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int half = lane & 1;               // two lanes per query row, 32 keys of a tile each
  const int myRow = warp * 16 + (lane >> 1);
  const float* myC = Cs + myRow * kLdC + half * 32;
  float best = -FLT_MAX;
  int bidx = -1;
  for (int kb = 0; kb < nk; kb += kTile) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[j], 0.f);
    for (int d0 = 0; d0 < dimP; d0 += kD) {
      // 64 rows × 64 halves = 512 16-byte vectors per operand, 4 per thread; rows past the end zero.
#pragma unroll
      for (int e = tid; e < kTile * 8; e += kThreads) {
        const int r = e >> 3, v = e & 7;
        uint4 a = make_uint4(0, 0, 0, 0);
        if (q0 + r < nq) a = *reinterpret_cast<const uint4*>(Q + int64_t(q0 + r) * dimP + d0 + v * 8);
        *reinterpret_cast<uint4*>(As + r * kLd + v * 8) = a;
        uint4 b = make_uint4(0, 0, 0, 0);
        if (kb + r < nk) b = *reinterpret_cast<const uint4*>(K + (k0 + kb + r) * dimP + d0 + v * 8);
        *reinterpret_cast<uint4*>(Bs + r * kLd + v * 8) = b;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kD; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
        wmma::load_matrix_sync(fa, As + warp * 16 * lda + kk, lda);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          // B (dims × keys) is Bs read column-major: element (dim k, key n) at Bs[n·ld + k].
          wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
          wmma::load_matrix_sync(fb, Bs + j * 16 * kLd + kk, kLd);
          wmma::mma_sync(acc[j], fa, fb, acc[j]);
        }
      }
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
      wmma::store_matrix_sync(Cs + warp * 16 * kLdC + j * 16, acc[j], kLdC, wmma::mem_row_major);
    __syncwarp();
    // Keys in increasing order, strict ">": ties keep the lower key, as on the CPU.
    const int kFirst = kb + half * 32;
    const int kEnd = min(32, nk - kFirst);
    for (int j = 0; j < kEnd; ++j) {
      const float v = myC[j];
      if (bidx < 0 || v > best) {
        best = v;
        bidx = kFirst + j;
      }
    }
    __syncwarp();  // the warp's next store_matrix_sync overwrites only its own rows of Cs
  }
  const float ov = __shfl_xor_sync(0xffffffffu, best, 1);
  const int oi = __shfl_xor_sync(0xffffffffu, bidx, 1);
  if (OrderBetter(ov, oi, best, bidx)) {
    best = ov;
    bidx = oi;
  }
  const int qi = q0 + myRow;
  if (half == 0 && qi < nq) {
    // A column without keys: m = -1 (the least inner product of unit vectors), as Vote() sets it.
    m[int64_t(qi) * nCols + c] = bidx < 0 ? -1.f : best;
    am[int64_t(qi) * nCols + c] = bidx;
  }
}

// The detail columns' m and argmax: out[i·nd + j] = m[i·nCols + cols[j]].
__global__ void GatherKernel(const float* __restrict__ m, const int32_t* __restrict__ am, int64_t nq, int64_t nCols,
                             const int64_t* __restrict__ cols, int64_t nd, float* __restrict__ om,
                             int32_t* __restrict__ oa) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < nq * nd; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / nd, j = e % nd;
    om[e] = m[i * nCols + cols[j]];
    oa[e] = am[i * nCols + cols[j]];
  }
}


struct Event {
  cudaEvent_t e = nullptr;
  Event() { Check(cudaEventCreate(&e), "creating a CUDA event"); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

float Elapsed(const Event& a, const Event& b) {
  float ms = 0;
  Check(cudaEventElapsedTime(&ms, a.e, b.e), "reading a CUDA event");
  return ms;
}

class CudaBank final : public DeviceBank {
 public:
  explicit CudaBank(int64_t dim) : dim_(dim), dimP_((dim + kD - 1) / kD * kD) {
    Check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a CUDA stream");
  }
  ~CudaBank() override {
    if (keys_ != nullptr) cudaFree(keys_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  void Update(int64_t endRows, const std::vector<Placement>& uploads) override {
    Grow(endRows);
    end_ = endRows;
    // Contiguous placements are staged together and copied in one transfer of ≤ 64 MiB.
    constexpr size_t kStage = size_t(64) << 20;
    std::vector<uint16_t> stage;
    int64_t stageRow = 0, stageRows = 0;
    const Isa isa = CurrentIsa();  // float32 keys are converted with F16C where the CPU has it
    auto flush = [&]() {
      if (stageRows == 0) return;
      Check(cudaMemcpyAsync(keys_ + stageRow * dimP_, stage.data(), size_t(stageRows * dimP_) * sizeof(__half),
                            cudaMemcpyHostToDevice, stream_),
            "copying keys to the device");
      Check(cudaStreamSynchronize(stream_), "copying keys to the device");
      stage.clear();
      stageRows = 0;
    };
    for (const Placement& p : uploads) {
      if (p.rows == 0) continue;
      if (stageRows > 0 && (p.row != stageRow + stageRows || stage.size() * sizeof(uint16_t) >= kStage)) flush();
      if (stageRows == 0) stageRow = p.row;
      const size_t at = stage.size();
      stage.resize(at + size_t(p.rows * dimP_), 0);
      uint16_t* dst = stage.data() + at;
      if (p.f16 != nullptr && dimP_ == dim_) {  // already in the device's format: one copy
        std::memcpy(dst, p.f16, size_t(p.rows * dim_) * sizeof(uint16_t));
        stageRows += p.rows;
        continue;
      }
      for (int64_t r = 0; r < p.rows; ++r) {
        if (p.f16 != nullptr) {
          std::memcpy(dst + r * dimP_, p.f16 + r * dim_, size_t(dim_) * sizeof(uint16_t));
        } else if (FloatsToHalf(p.f32 + r * dim_, dst + r * dimP_, dim_, isa) >= 0) {
          throw Failure(Code::INVALID_ARGUMENT, "glance: a key is outside the f16 range of the device copy");
        }
      }
      stageRows += p.rows;
    }
    flush();
  }

  void Glance(const GlanceArgs& a, GlanceOut& out, const std::atomic<bool>* stop) override {
    const int64_t nq = a.nq, nCols = a.nCols;
    out.r.g.assign(size_t(nCols), 0.f);
    out.r.m.clear();
    out.r.argmax.clear();
    out.columns.clear();
    if (nCols == 0 || nq == 0) return;
    if (nq > int64_t(kTile) * 65535) throw Failure(Code::INVALID_ARGUMENT, "glance: too many query rows for one CUDA launch");
    const int64_t kk = std::min(a.k, nCols);
    // Queries rounded to f16 on the host (F16C; the scalar loop this replaced took ~2 ns a value,
    // 0.4–0.8 ms at the benchmark's shapes), padded like the keys.
    std::vector<uint16_t> hq(size_t(nq * dimP_), 0);
    const Isa isa = CurrentIsa();
    for (int64_t i = 0; i < nq; ++i) {
      if (FloatsToHalf(a.queries + i * dim_, hq.data() + i * dimP_, dim_, isa) >= 0) {
        throw Failure(Code::INVALID_ARGUMENT, "glance: a query is outside the f16 range of the device glance");
      }
    }
    __half* dq = q_.Ensure(hq.size());
    int64_t* dRow = colRow_.Ensure(size_t(nCols));
    int64_t* dRows = colRows_.Ensure(size_t(nCols));
    float* dm = m_.Ensure(size_t(nq * nCols));
    const KernelChoice kc = ChooseKernel();
    // With TMA the max-sim over every column computes m alone: the vote reads nothing else, and the
    // detail columns' argmax comes from a second launch over those few columns (below), the same
    // kernel with the same tiles, so the same products and the same m and argmax as a full one.
    const bool mOnly = kc.kind == Kernel::kWgmma && kWgConfigs[kc.wg].tma && a.detail >= 0;
    int32_t* dam = mOnly ? nullptr : am_.Ensure(size_t(nq * nCols));
    int32_t* dtop = top_.Ensure(size_t(nq * kk));
    float* dtopM = topM_.Ensure(size_t(nq * kk));
    Event e0, e1, e2, e3, e4, e5;
    Check(cudaEventRecord(e0.e, stream_), "recording an event");
    Check(cudaMemcpyAsync(dq, hq.data(), hq.size() * sizeof(__half), cudaMemcpyHostToDevice, stream_), "copying queries");
    // The columns, unless the device holds these very ones already: same nonzero key and count (Ensure
    // above reallocates only for more columns than any before, so then the count differs).
    if (a.columnsKey == 0 || a.columnsKey != colsKey_ || nCols != colsN_) {
      colsKey_ = 0;  // until both copies are queued
      Check(cudaMemcpyAsync(dRow, a.row, size_t(nCols) * sizeof(int64_t), cudaMemcpyHostToDevice, stream_), "copying columns");
      Check(cudaMemcpyAsync(dRows, a.rows, size_t(nCols) * sizeof(int64_t), cudaMemcpyHostToDevice, stream_), "copying columns");
      colsKey_ = a.columnsKey;
      colsN_ = nCols;
    }
    Check(cudaEventRecord(e1.e, stream_), "recording an event");
    switch (kc.kind) {
      case Kernel::kWgmma: LaunchWgmma(kc, !mOnly, dq, nq, dRow, dRows, nCols, dm, dam, stop); break;
      default: LaunchWmma(dq, nq, dRow, dRows, nCols, dm, dam, stop); break;
    }
    Check(cudaEventRecord(e2.e, stream_), "recording an event");
    if (kc.onePassTopK && kk <= 16) {
      topk::TopKOnePass<16><<<unsigned(nq), topk::kTopThreads, 0, stream_>>>(dm, nCols, int(kk), dtop, dtopM);
    } else {
      topk::TopKPasses<<<unsigned(nq), topk::kTopThreads, 0, stream_>>>(dm, nCols, int(kk), dtop, dtopM);
    }
    Check(cudaGetLastError(), "launching the top-k kernel");
    Check(cudaEventRecord(e3.e, stream_), "recording an event");
    std::vector<int32_t> top(size_t(nq * kk));
    std::vector<float> topM(top.size());
    Check(cudaMemcpyAsync(top.data(), dtop, top.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_), "copying the top-k back");
    Check(cudaMemcpyAsync(topM.data(), dtopM, topM.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_), "copying the top-k back");
    Check(cudaStreamSynchronize(stream_), "running the glance");
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) throw Failure(Code::ABORTED, "glance aborted");

    // The vote, in double and in token order: the CPU twin's loop (kernels_core.cpp, Vote).
    double W = 0.0;
    for (int64_t i = 0; i < nq; ++i) W += a.weights[i];
    std::vector<double> acc(size_t(nCols), 0.0);
    for (int64_t i = 0; i < nq; ++i) {
      const double w = a.weights[i];
      if (w == 0.0) continue;
      for (int64_t j = 0; j < kk; ++j) {
        const int32_t s = top[size_t(i * kk + j)];
        if (s < 0 || s >= nCols) throw Failure(Code::INTERNAL, "glance: the device's top-k returned a bad column");
        acc[size_t(s)] += w * double(topM[size_t(i * kk + j)]);
      }
    }
    for (int64_t s = 0; s < nCols; ++s) out.r.g[size_t(s)] = float(acc[size_t(s)] / W);

    Check(cudaEventRecord(e4.e, stream_), "recording an event");
    std::vector<int64_t> detail;  // with m alone: the detail columns' rows and counts, copied below
    if (a.detail < 0) {
      out.r.m.resize(size_t(nq * nCols));
      out.r.argmax.resize(out.r.m.size());
      Check(cudaMemcpyAsync(out.r.m.data(), dm, out.r.m.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_), "copying m back");
      Check(cudaMemcpyAsync(out.r.argmax.data(), dam, out.r.argmax.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_),
            "copying argmax back");
    } else if (a.detail > 0) {
      out.columns = TopColumns(out.r.g, a.detail);
      const int64_t nd = int64_t(out.columns.size());
      float* dom = dm_.Ensure(size_t(nq * nd));
      int32_t* doa = da_.Ensure(size_t(nq * nd));
      if (mOnly) {
        // the detail columns' rows and counts (2 · nd), then the max-sim with argmax over them alone;
        // detail outlives the copy (the sync below)
        detail.resize(size_t(2 * nd));
        for (int64_t j = 0; j < nd; ++j) {
          detail[size_t(j)] = a.row[out.columns[size_t(j)]];
          detail[size_t(nd + j)] = a.rows[out.columns[size_t(j)]];
        }
        int64_t* dDet = cols_.Ensure(detail.size());
        Check(cudaMemcpyAsync(dDet, detail.data(), detail.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream_),
              "copying the detail columns");
        LaunchWgmma(kc, true, dq, nq, dDet, dDet + nd, nd, dom, doa, nullptr);
      } else {
        int64_t* dcols = cols_.Ensure(size_t(nd));
        Check(cudaMemcpyAsync(dcols, out.columns.data(), size_t(nd) * sizeof(int64_t), cudaMemcpyHostToDevice, stream_),
              "copying the detail columns");
        GatherKernel<<<unsigned(std::min<int64_t>(1024, (nq * nd + 255) / 256)), 256, 0, stream_>>>(dm, dam, nq, nCols, dcols, nd,
                                                                                                    dom, doa);
        Check(cudaGetLastError(), "launching the gather kernel");
      }
      out.r.m.resize(size_t(nq * nd));
      out.r.argmax.resize(out.r.m.size());
      Check(cudaMemcpyAsync(out.r.m.data(), dom, out.r.m.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_), "copying m back");
      Check(cudaMemcpyAsync(out.r.argmax.data(), doa, out.r.argmax.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_),
            "copying argmax back");
    }
    Check(cudaEventRecord(e5.e, stream_), "recording an event");
    Check(cudaStreamSynchronize(stream_), "running the glance");
    out.maxSimMs = Elapsed(e1, e2);
    out.topKMs = Elapsed(e2, e3);
    out.copyMs = Elapsed(e0, e1) + Elapsed(e3, e4) + Elapsed(e4, e5);
  }

  void* Stream() override { return stream_; }
  int64_t PaddedDim() const override { return dimP_; }

  void EnqueueMaxSim(const uint16_t* dq, int64_t nq, const int64_t* dRow, const int64_t* dRows, int64_t nCols,
                     float* dm) override {
    if (nCols == 0 || nq == 0) return;
    if (nq > int64_t(kTile) * 65535) throw Failure(Code::INVALID_ARGUMENT, "live: too many query rows for one CUDA launch");
    const KernelChoice kc = ChooseKernel();
    const bool mOnly = kc.kind == Kernel::kWgmma && kWgConfigs[kc.wg].tma;
    int32_t* dam = nullptr;
    if (!mOnly) {
      // the argmax the kernel writes and nothing reads; a larger buffer waits for what reads the old one
      if (size_t(nq * nCols) > liveAm_.cap) Check(cudaStreamSynchronize(stream_), "growing the live workspace");
      dam = liveAm_.Ensure(size_t(nq * nCols));
    }
    const __half* q = reinterpret_cast<const __half*>(dq);
    enqueueOnly_ = true;
    try {
      switch (kc.kind) {
        case Kernel::kWgmma: LaunchWgmma(kc, !mOnly, q, nq, dRow, dRows, nCols, dm, dam, nullptr); break;
        default: LaunchWmma(q, nq, dRow, dRows, nCols, dm, dam, nullptr); break;
      }
    } catch (...) {
      enqueueOnly_ = false;
      throw;
    }
    enqueueOnly_ = false;
  }

  int64_t CapacityRows() const override { return capRows_; }
  int64_t DeviceBytes() const override {
    return capRows_ * dimP_ * int64_t(sizeof(__half)) + q_.Bytes() + colRow_.Bytes() + colRows_.Bytes() + m_.Bytes() +
           am_.Bytes() + top_.Bytes() + topM_.Bytes() + cols_.Bytes() + dm_.Bytes() + da_.Bytes() + liveAm_.Bytes();
  }

 private:
  // launch(c0, n) for the columns in launches of at most kColsPerLaunch, the stop flag polled between
  // them (a launch cannot be stopped once queued).
  template <typename Launch>
  void InLaunches(int64_t nCols, const std::atomic<bool>* stop, Launch launch) {
    for (int64_t c0 = 0; c0 < nCols; c0 += kColsPerLaunch) {
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) throw Failure(Code::ABORTED, "glance aborted");
      launch(c0, std::min(kColsPerLaunch, nCols - c0));
      Check(cudaGetLastError(), "launching the max-sim kernel");
      if (!enqueueOnly_ && c0 + kColsPerLaunch < nCols) Check(cudaStreamSynchronize(stream_), "running the max-sim kernel");
    }
  }

  // The WMMA max-sim, one block per column and 64 query rows.
  void LaunchWmma(const __half* dq, int64_t nq, const int64_t* dRow, const int64_t* dRows, int64_t nCols, float* dm,
                  int32_t* dam, const std::atomic<bool>* stop) {
    const unsigned gy = unsigned((nq + kTile - 1) / kTile);
    InLaunches(nCols, stop, [&](int64_t c0, int64_t n) {
      MaxSimKernel<<<dim3(unsigned(n), gy), kThreads, kMaxSimSmem, stream_>>>(dq, int(nq), keys_, int(dimP_), dRow, dRows, nCols, c0, dm, dam);
    });
  }

  // Which max-sim runs (the settings are read at each glance, so benches can switch them with
  // configure()): wgmma where the device code has it and its shared memory fits this dimension, else
  // WMMA; GAVEL_GLANCE_KERNEL=wmma forces WMMA.
  // The top-k is the one-read kernel (kernels/topk.cuh) for k ≤ 16, the k-pass one above that or with
  // GAVEL_GLANCE_TOPK=passes: the same output bit for bit (native/test/topk_emu.cpp on a CPU; on an
  // H100 bench/cuda/topk-explore.cu, and the glance twins through the addon on an H200).
  // Through the addon on the H200 the one-read top-k took 0.92 ms against 3.48 at 100K x 256 x 1,300
  // rows and 0.04 against 0.07 at 10K x 768, and no more at any of the benchmarked shapes.
  enum class Kernel { kWmma, kWgmma };
  struct KernelChoice {
    Kernel kind = Kernel::kWmma;
    int wg = -1;  // wgmma: the index of its configuration in kWgConfigs
    bool onePassTopK = true;
  };
  // wgmma's configurations, in order of preference: the first whose shared memory fits this
  // dimension runs (bench/cuda/maxsim-explore.cu's runs on an H100 and an H200, docs/BENCHMARKS.md): 192 rows ×
  // 128-key tiles by TMA, 4 stages, 32 columns a block (dims up to 384), 128 × 64 by TMA (up to 768),
  // 128 × 64 by cp.async, 64 × 64 by cp.async (up to 1,536). LaunchWgmma instantiates each.
  struct WgConfig {
    int bm, tn, stages;
    bool tma;  // keys loaded by TMA (else the loader warpgroup's cp.async)
    int g;     // columns a block
  };
  static constexpr WgConfig kWgConfigs[] = {{192, 128, 4, true, 32}, {128, 64, 4, true, 16}, {128, 64, 4, false, 16}, {64, 64, 4, false, 16}};
  KernelChoice ChooseKernel() {
    const settings::Settings& set = settings::Current();
    KernelChoice c;
    c.onePassTopK = !set.topKPasses.load(std::memory_order_relaxed);
    if (settings::GlanceKernel(set.glanceKernel.load(std::memory_order_relaxed)) == settings::GlanceKernel::kWmma) return c;
    const size_t optIn = size_t(SmemOptIn());
    if (!WgmmaBuilt()) return c;
    // GAVEL_GLANCE_LOADER=cp.async, or no TMA maps for this bank (MakeWgKeyMaps), keeps the loader
    // warpgroup's cp.async.
    const bool tmaOk = !set.cpAsyncLoader.load(std::memory_order_relaxed) && KeyMaps();
    for (int i = 0; i < int(std::size(kWgConfigs)); ++i) {
      const WgConfig& f = kWgConfigs[i];
      if ((f.tma && !tmaOk) || wgmma::WgmmaSmem(f.bm, f.tn, f.stages, dimP_) > optIn) continue;
      c.kind = Kernel::kWgmma;
      c.wg = i;
      return c;
    }
    return c;
  }
  // The wgmma max-sim of configuration kWgConfigs[kc.wg] over columns dRow/dRows; withArgmax false:
  // m alone (am is not written), only for TMA configurations (those alone are instantiated so).
  void LaunchWgmma(const KernelChoice& kc, bool withArgmax, const __half* dq, int64_t nq, const int64_t* dRow, const int64_t* dRows,
                   int64_t nCols, float* dm, int32_t* dam, const std::atomic<bool>* stop) {
    switch (kc.wg) {
      case 0: LaunchWg<0>(withArgmax, dq, nq, dRow, dRows, nCols, dm, dam, stop); break;
      case 1: LaunchWg<1>(withArgmax, dq, nq, dRow, dRows, nCols, dm, dam, stop); break;
      case 2: LaunchWg<2>(withArgmax, dq, nq, dRow, dRows, nCols, dm, dam, stop); break;
      default: LaunchWg<3>(withArgmax, dq, nq, dRow, dRows, nCols, dm, dam, stop); break;
    }
  }
  template <int I>
  void LaunchWg(bool withArgmax, const __half* dq, int64_t nq, const int64_t* dRow, const int64_t* dRows, int64_t nCols, float* dm,
                int32_t* dam, const std::atomic<bool>* stop) {
    static_assert(std::size(kWgConfigs) == 4, "LaunchWgmma's switch names every configuration");
    constexpr WgConfig f = kWgConfigs[I];
    if constexpr (f.tma) {
      if (!withArgmax) return LaunchWg<f.bm, f.tn, f.stages, true, false>(f.g, dq, nq, dRow, dRows, nCols, dm, dam, stop);
    }
    LaunchWg<f.bm, f.tn, f.stages, f.tma, true>(f.g, dq, nq, dRow, dRows, nCols, dm, dam, stop);
  }
  // One configuration's launches; g columns a block.
  template <int BM, int TN, int ST, bool TMA, bool AM>
  void LaunchWg(int g, const __half* dq, int64_t nq, const int64_t* dRow, const int64_t* dRows, int64_t nCols, float* dm,
                int32_t* dam, const std::atomic<bool>* stop) {
    const auto kernel = wgmma::WgmmaMaxSim<BM, TN, ST, TMA, AM>;
    const size_t smem = wgmma::WgmmaSmem(BM, TN, ST, dimP_);
    Check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), "setting the max-sim kernel's shared memory");
    const unsigned gx = unsigned((nq + BM - 1) / BM);
    InLaunches(nCols, stop, [&](int64_t c0, int64_t n) {
      // x: the query-row blocks, so those reading one group of skills run together and share it in L2
      const dim3 grid(gx, unsigned((n + g - 1) / g));
      kernel<<<grid, unsigned(128 + BM * 2), smem, stream_>>>(dq, int(nq), keys_, int(dimP_), dRow, dRows, nCols, c0, n, g, dm, dam, maps_);
    });
  }
  // TMA maps over the key buffer, remade when it moves (Grow): false where they cannot be made (no
  // driver entry point, no rows yet, more rows than 32-bit coordinates reach).
  bool KeyMaps() {
    if (keys_ == nullptr) return false;
    if (mapsFor_ != keys_ || mapsRows_ != capRows_) {
      mapsOk_ = *wgmma::MakeWgKeyMaps(keys_, capRows_, dimP_, &maps_) == '\0';
      mapsFor_ = keys_;
      mapsRows_ = capRows_;
    }
    return mapsOk_;
  }
  // Whether the loaded device code has wgmma (an sm_90a build on a compute-capability 9.0 device):
  // asked of the device once, by a one-thread kernel compiled in the same file.
  bool WgmmaBuilt() {
    if (wgmmaBuilt_ < 0) {
      int* d = nullptr;
      int h = 0;
      Check(cudaMalloc(&d, sizeof(int)), "cudaMalloc (probe)");
      wgmma::WgmmaProbe<<<1, 1, 0, stream_>>>(d);
      cudaError_t e = cudaGetLastError();
      if (e == cudaSuccess) e = cudaMemcpyAsync(&h, d, sizeof(int), cudaMemcpyDeviceToHost, stream_);
      if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
      cudaFree(d);
      Check(e, "probing the device code for wgmma");
      wgmmaBuilt_ = h == 1 ? 1 : 0;
    }
    return wgmmaBuilt_ == 1;
  }
  // The shared memory a block may opt in to (227 KiB on an H100), read once.
  int SmemOptIn() {
    if (smemOptIn_ < 0) {
      int dev = 0;
      Check(cudaGetDevice(&dev), "reading the device");
      Check(cudaDeviceGetAttribute(&smemOptIn_, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "reading the device's shared memory");
    }
    return smemOptIn_;
  }

  // Grow-only key buffer that keeps its rows: a larger one (×1.5 headroom, so n appends cost
  // O(log n) reallocations), rows [0, end_) copied over on the device, the old one freed.
  void Grow(int64_t rows) {
    if (rows <= capRows_) return;
    const int64_t want = std::max<int64_t>({rows, capRows_ + capRows_ / 2, 1024});
    __half* p = nullptr;
    Check(cudaMalloc(&p, size_t(want * dimP_) * sizeof(__half)), "cudaMalloc (keys)");
    if (end_ > 0) {
      const cudaError_t e = cudaMemcpyAsync(p, keys_, size_t(end_ * dimP_) * sizeof(__half), cudaMemcpyDeviceToDevice, stream_);
      const cudaError_t s = e == cudaSuccess ? cudaStreamSynchronize(stream_) : e;
      if (s != cudaSuccess) {
        cudaFree(p);
        Check(s, "moving keys to a larger buffer");
      }
    }
    if (keys_ != nullptr) cudaFree(keys_);
    keys_ = p;
    capRows_ = want;
  }

  int64_t dim_, dimP_;
  cudaStream_t stream_ = nullptr;
  __half* keys_ = nullptr;
  int64_t capRows_ = 0, end_ = 0;
  int smemOptIn_ = -1, wgmmaBuilt_ = -1;
  wgmma::WgKeyMaps maps_{};  // for keys_ of capRows_ rows (KeyMaps)
  const __half* mapsFor_ = nullptr;
  int64_t mapsRows_ = -1;
  bool mapsOk_ = false;
  Buf<__half> q_;
  Buf<int64_t> colRow_, colRows_, cols_;  // cols_: the detail columns (or their rows and counts)
  // What colRow_ / colRows_ hold: the colsN_ columns of GlanceArgs::columnsKey colsKey_ (0: unknown).
  uint64_t colsKey_ = 0;
  int64_t colsN_ = 0;
  Buf<float> m_, topM_, dm_;
  Buf<int32_t> am_, top_, da_;
  Buf<int32_t> liveAm_;        // EnqueueMaxSim's argmax (written by the kernels that need it, never read)
  bool enqueueOnly_ = false;   // inside EnqueueMaxSim: InLaunches queues without waiting
};

}  // namespace

bool Available(std::string* why) { return cuda::DeviceAvailable(why); }

std::unique_ptr<DeviceBank> CreateBank(int64_t dim) {
  std::string why;
  if (!Available(&why)) throw Failure(Code::CUDA_UNAVAILABLE, why);
  if (dim < 1 || dim > (1 << 24)) throw Failure(Code::INVALID_ARGUMENT, "glance: bad key dimension for the device");
  return std::make_unique<CudaBank>(dim);
}

}  // namespace gavel::kernels::device
