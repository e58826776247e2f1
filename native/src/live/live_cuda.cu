// The live accumulator on CUDA (live_device.h has the design): an append only queues work on the
// bank's stream; Read waits for it.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/cuda_memory.cuh"
#include "common/failure.h"
#include "kernels/device.h"
#include "kernels/topk.cuh"
#include "live/live_device.h"

namespace gavel::live::device {
namespace {

using cuda::Buf;
using cuda::Check;

constexpr int kProjThreads = 256;  // threads per output of the projection
constexpr int kProjRows = 16;      // rows per block of the projection
constexpr int kNormThreads = 256;
constexpr int kFoldThreads = 256;
constexpr int kSlots = 8;         // pinned host slots of the rows in flight
constexpr int64_t kSlotRows = 64;  // rows a slot holds from the start (they grow together)

// y[r·dim + o] = Σ_c W[o·nEmbd + c] · h[r·nEmbd + c]: one block per output o (its threads split c,
// so a token's projection spreads over dim blocks) and kProjRows rows.
__global__ void __launch_bounds__(kProjThreads) ProjectKernel(const float* __restrict__ W, const float* __restrict__ h,
                                                              int64_t b, int64_t nEmbd, int64_t dim, float* __restrict__ y) {
  const int64_t o = blockIdx.x;
  const int64_t r0 = int64_t(blockIdx.y) * kProjRows;
  const float* w = W + o * nEmbd;
  __shared__ float part[kProjThreads / 32];
  for (int64_t r = r0; r < min(b, r0 + kProjRows); ++r) {
    const float* x = h + r * nEmbd;
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < nEmbd; c += kProjThreads) s = fmaf(w[c], x[c], s);
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      float t = 0.f;
      for (int i = 0; i < kProjThreads / 32; ++i) t += part[i];
      y[r * dim + o] = t;
    }
    __syncthreads();  // part is written again by the next row
  }
}

// One block per row: q = y / ‖y‖ (the norm in float64; a zero row stays zero), as f16, zero past dim.
__global__ void __launch_bounds__(kNormThreads) NormalizeKernel(const float* __restrict__ y, int64_t dim, int64_t dimP,
                                                                __half* __restrict__ q) {
  const int64_t r = blockIdx.x;
  const float* row = y + r * dim;
  double s = 0;
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) s += double(row[i]) * double(row[i]);
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  __shared__ double part[kNormThreads / 32];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  double t = 0;
  for (int w = 0; w < kNormThreads / 32; ++w) t += part[w];
  const double inv = t > 0 ? 1.0 / sqrt(t) : 0.0;
  for (int64_t i = threadIdx.x; i < dimP; i += kNormThreads)
    q[r * dimP + i] = __float2half_rn(i < dim ? float(double(row[i]) * inv) : 0.f);
}

// A[c] *= f for every column.
__global__ void ScaleKernel(double* __restrict__ A, int64_t n, double f) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < n; c += int64_t(gridDim.x) * blockDim.x) A[c] *= f;
}

// A2[c] = from[c] ≥ 0 ? A[from[c]] : 0.
__global__ void RemapKernel(const double* __restrict__ A, const int32_t* __restrict__ from, int64_t n, double* __restrict__ A2) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < n; c += int64_t(gridDim.x) * blockDim.x)
    A2[c] = from[c] >= 0 ? A[from[c]] : 0.0;
}

// The vote of rows 0 … b−1 in order: A[top[j·kk + r]] += w_j · inv · topM[j·kk + r]. A row's kk
// columns are distinct, so its threads never meet; rows are separated by a barrier.
__global__ void __launch_bounds__(kFoldThreads) FoldKernel(double* __restrict__ A, const int32_t* __restrict__ top,
                                                           const float* __restrict__ topM, int64_t b, int kk, double inv) {
  for (int64_t j = 0; j < b; ++j) {
    // decayWeights(b)[j], rounded to float32 as the CPU's
    const double w = double(float(exp2(-double(b - 1 - j) / 64.0))) * inv;
    for (int r = threadIdx.x; r < kk; r += kFoldThreads) {
      const int32_t c = top[j * kk + r];
      if (c >= 0) A[c] += w * double(topM[j * kk + r]);
    }
    __syncthreads();
  }
}

unsigned Blocks(int64_t n, int threads) { return unsigned(std::min<int64_t>(1024, std::max<int64_t>(1, (n + threads - 1) / threads))); }

class CudaLive final : public DeviceLive {
 public:
  CudaLive(kernels::device::DeviceBank& bank, const float* wq, int64_t nEmbd, int64_t dim)
      : bank_(bank), stream_(static_cast<cudaStream_t>(bank.Stream())), nEmbd_(nEmbd), dim_(dim), dimP_(bank.PaddedDim()) {
    float* w = wq_.Ensure(size_t(dim * nEmbd));
    Check(cudaMemcpyAsync(w, wq, size_t(dim * nEmbd) * sizeof(float), cudaMemcpyHostToDevice, stream_), "copying W_q to the device");
    Check(cudaStreamSynchronize(stream_), "copying W_q to the device");
    for (Slot& s : slots_) Check(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "creating a CUDA event");
    for (Pub& p : pubs_) Check(cudaEventCreateWithFlags(&p.done, cudaEventDisableTiming), "creating a CUDA event");
    GrowSlots(size_t(kSlotRows * nEmbd));
  }
  ~CudaLive() override {
    cudaStreamSynchronize(stream_);  // nothing queued may outlive the buffers it reads
    if (slotHost_ != nullptr) cudaFreeHost(slotHost_);
    for (Slot& s : slots_)
      if (s.done != nullptr) cudaEventDestroy(s.done);
    for (Pub& p : pubs_) {
      if (p.host != nullptr) cudaFreeHost(p.host);
      if (p.done != nullptr) cudaEventDestroy(p.done);
    }
  }

  void SetColumns(const std::vector<int64_t>& row, const std::vector<int64_t>& rows) override {
    Check(cudaStreamSynchronize(stream_), "live: waiting for the stream");
    const size_t n = row.size();
    nCols_ = int64_t(n);
    if (n == 0) return;
    int64_t* r = colRow_.Ensure(n);
    int64_t* rs = colRows_.Ensure(n);
    Check(cudaMemcpyAsync(r, row.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice, stream_), "copying the live columns");
    Check(cudaMemcpyAsync(rs, rows.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice, stream_), "copying the live columns");
    Check(cudaStreamSynchronize(stream_), "copying the live columns");
  }

  void Remap(const std::vector<int32_t>& from) override {
    Check(cudaStreamSynchronize(stream_), "live: waiting for the stream");
    const int64_t n = int64_t(from.size());
    double* a2 = a2_.Ensure(size_t(std::max<int64_t>(n, 1)));
    if (n > 0) {
      int32_t* f = from_.Ensure(size_t(n));
      Check(cudaMemcpyAsync(f, from.data(), size_t(n) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_), "copying the live remap");
      if (aN_ == 0) a_.Ensure(1);  // RemapKernel reads A only where from[c] ≥ 0, none when there was no column
      RemapKernel<<<Blocks(n, 256), 256, 0, stream_>>>(a_.p, f, n, a2);
      Check(cudaGetLastError(), "launching the live remap");
    }
    Check(cudaStreamSynchronize(stream_), "remapping the live accumulators");
    std::swap(a_.p, a2_.p);
    std::swap(a_.cap, a2_.cap);
    aN_ = n;
  }

  void Append(const float* rows, int64_t b, int64_t width, double renorm, double inv, int64_t k) override {
    if (b <= 0 || nCols_ == 0) return;
    if (nCols_ != aN_) throw Failure(Code::INTERNAL, "live: the device accumulators do not match the columns");
    const int64_t kk = std::min<int64_t>(k, nCols_);
    // Buffers that must grow wait for what reads them now.
    const size_t nIn = size_t(b * width), nY = size_t(b * dim_), nQ = size_t(b * dimP_), nM = size_t(b * nCols_),
                 nT = size_t(b * kk);
    if (nIn > in_.cap || nY > y_.cap || nQ * sizeof(__half) > q_.cap * sizeof(uint16_t) || nM > m_.cap || nT > top_.cap ||
        nT > topM_.cap)
      Check(cudaStreamSynchronize(stream_), "growing the live workspace");
    float* din = in_.Ensure(nIn);
    float* dy = y_.Ensure(nY);
    __half* dq = reinterpret_cast<__half*>(q_.Ensure(nQ));
    float* dm = m_.Ensure(nM);
    int32_t* dtop = top_.Ensure(nT);
    float* dtopM = topM_.Ensure(nT);

    // 1. the rows through a pinned slot (waits only when the device is kSlots appends behind)
    if (nIn > slotCap_) {
      Check(cudaStreamSynchronize(stream_), "live: waiting for the pinned slots");
      GrowSlots(nIn);
    }
    Slot& s = slots_[next_];
    next_ = (next_ + 1) % kSlots;
    if (s.used) Check(cudaEventSynchronize(s.done), "live: waiting for a pinned slot");
    std::memcpy(s.host, rows, nIn * sizeof(float));
    Check(cudaMemcpyAsync(din, s.host, nIn * sizeof(float), cudaMemcpyHostToDevice, stream_), "copying the live rows");
    Check(cudaEventRecord(s.done, stream_), "recording an event");
    s.used = true;

    // 2. projection and normalisation
    const float* y = din;
    if (width == nEmbd_) {
      const dim3 grid(unsigned(dim_), unsigned((b + kProjRows - 1) / kProjRows));
      ProjectKernel<<<grid, kProjThreads, 0, stream_>>>(wq_.p, din, b, nEmbd_, dim_, dy);
      Check(cudaGetLastError(), "launching the live projection");
      y = dy;
    }
    NormalizeKernel<<<unsigned(b), kNormThreads, 0, stream_>>>(y, dim_, dimP_, dq);
    Check(cudaGetLastError(), "launching the live normalisation");

    // 3. max-sim and top-k
    bank_.EnqueueMaxSim(reinterpret_cast<const uint16_t*>(dq), b, colRow_.p, colRows_.p, nCols_, dm);
    if (kk <= 16) {
      kernels::topk::TopKOnePass<16><<<unsigned(b), kernels::topk::kTopThreads, 0, stream_>>>(dm, nCols_, int(kk), dtop, dtopM);
    } else {
      kernels::topk::TopKPasses<<<unsigned(b), kernels::topk::kTopThreads, 0, stream_>>>(dm, nCols_, int(kk), dtop, dtopM);
    }
    Check(cudaGetLastError(), "launching the live top-k");

    // 4. the fold
    if (renorm != 1) {
      ScaleKernel<<<Blocks(nCols_, 256), 256, 0, stream_>>>(a_.p, nCols_, renorm);
      Check(cudaGetLastError(), "launching the live renormalisation");
    }
    FoldKernel<<<1, kFoldThreads, 0, stream_>>>(a_.p, dtop, dtopM, b, int(kk), inv);
    Check(cudaGetLastError(), "launching the live fold");
  }

  std::vector<double> Read() override {
    std::vector<double> a(static_cast<size_t>(aN_), 0.0);
    if (aN_ > 0)
      Check(cudaMemcpyAsync(a.data(), a_.p, a.size() * sizeof(double), cudaMemcpyDeviceToHost, stream_), "copying the live scores back");
    Check(cudaStreamSynchronize(stream_), "reading the live scores");
    return a;
  }

  void Publish(const Snapshot& meta) override {
    Poll();
    // never the newest completed snapshot (a reader may want it while this copy is in flight); a
    // snapshot whose copy is still in flight may be overwritten (the stream orders the two copies)
    int t = done_ >= 0 ? 1 - done_ : (pubs_[0].valid && !pubs_[1].valid ? 1 : 0);
    Pub& p = pubs_[t];
    const size_t n = size_t(aN_);
    if (n > p.cap) {
      // its copy may still be in flight (also when a reset discarded it)
      if (!p.complete) Check(cudaEventSynchronize(p.done), "live: waiting for a score snapshot");
      if (p.host != nullptr) cudaFreeHost(p.host);
      p.host = nullptr;
      p.cap = 0;
      p.valid = false;
      const size_t cap = n + n / 4 + 1024;
      Check(cudaMallocHost(&p.host, cap * sizeof(double)), "cudaMallocHost (live scores)");
      p.cap = cap;
    }
    if (n > 0)
      Check(cudaMemcpyAsync(p.host, a_.p, n * sizeof(double), cudaMemcpyDeviceToHost, stream_), "copying the live scores back");
    Check(cudaEventRecord(p.done, stream_), "recording an event");
    p.meta = meta;
    p.valid = true;
    p.complete = false;
    newest_ = t;
  }

  const double* Latest(bool wait, Snapshot& meta) override {
    if (wait && newest_ >= 0 && pubs_[newest_].valid && !pubs_[newest_].complete) {
      Check(cudaEventSynchronize(pubs_[newest_].done), "reading the live scores");
      pubs_[newest_].complete = true;
    }
    Poll();
    const int i = wait ? newest_ : done_;
    if (i < 0 || !pubs_[i].valid || !pubs_[i].complete) return nullptr;
    meta = pubs_[i].meta;
    return pubs_[i].host;
  }

  void Discard() override {
    // a copy still in flight lands in a buffer nobody reads (`complete` stays as it was, so a
    // reallocation of that buffer still waits for it)
    for (Pub& p : pubs_) p.valid = false;
    newest_ = done_ = -1;
  }

  void Zero() override {
    if (aN_ > 0) Check(cudaMemsetAsync(a_.p, 0, size_t(aN_) * sizeof(double), stream_), "zeroing the live accumulators");
  }

 private:
  struct Slot {
    float* host = nullptr;  // within slotHost_
    cudaEvent_t done = nullptr;
    bool used = false;
  };
  // A pinned snapshot of A (Publish): readable while valid; complete once its event was seen done
  // (false from Publish until then, whether or not a reset has since made it invalid).
  struct Pub {
    double* host = nullptr;
    size_t cap = 0;
    cudaEvent_t done = nullptr;
    bool valid = false, complete = true;
    Snapshot meta;
  };

  // Every slot's host memory, in one pinned block of kSlots × cap floats (no copy may be in flight).
  void GrowSlots(size_t need) {
    const size_t cap = std::max(need, slotCap_ * 2);
    if (slotHost_ != nullptr) cudaFreeHost(slotHost_);
    slotHost_ = nullptr;
    slotCap_ = 0;
    Check(cudaMallocHost(&slotHost_, cap * kSlots * sizeof(float)), "cudaMallocHost (live rows)");
    slotCap_ = cap;
    for (int i = 0; i < kSlots; ++i) {
      slots_[i].host = slotHost_ + size_t(i) * cap;
      slots_[i].used = false;
    }
  }

  // Marks the snapshots whose copies have completed; done_ = the newest of them.
  void Poll() {
    done_ = -1;
    for (int i = 0; i < 2; ++i) {
      Pub& p = pubs_[i];
      if (!p.valid) continue;
      if (!p.complete) {
        const cudaError_t e = cudaEventQuery(p.done);
        if (e == cudaSuccess) p.complete = true;
        else if (e == cudaErrorNotReady) (void)cudaGetLastError();  // not an error: the copy is still in flight
        else Check(e, "querying a score snapshot");
      }
      if (p.complete && (done_ < 0 || p.meta.seq > pubs_[done_].meta.seq)) done_ = i;
    }
  }

  kernels::device::DeviceBank& bank_;
  cudaStream_t stream_;
  int64_t nEmbd_, dim_, dimP_;
  int64_t nCols_ = 0, aN_ = 0;
  Buf<float> wq_, in_, y_, m_, topM_;
  Buf<uint16_t> q_;
  Buf<int32_t> top_, from_;
  Buf<int64_t> colRow_, colRows_;
  Buf<double> a_, a2_;
  Slot slots_[kSlots];
  float* slotHost_ = nullptr;
  size_t slotCap_ = 0;
  int next_ = 0;
  Pub pubs_[2];
  int newest_ = -1, done_ = -1;
};

}  // namespace

std::unique_ptr<DeviceLive> CreateDeviceLive(kernels::device::DeviceBank& bank, const float* wq, int64_t nEmbd, int64_t dim) {
  return std::make_unique<CudaLive>(bank, wq, nEmbd, dim);
}

}  // namespace gavel::live::device
