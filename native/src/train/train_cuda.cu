// The trainer's step on CUDA (train_device.h): the twin of train_core.cpp's LossAndGrad and
// AdamWUpdate, with the weights and AdamW moments resident on the device.
//
// One step, on one stream:
//  1. upload the batch (states, offsets, candidates) and a work list built on the host;
//  2. U = H·Wᵀ for queries and skill states (cuBLAS SGEMM, fp32 without TF32), rows
//     normalised in place (norms in double), bf16 copies for the search in bf16 mode;
//  3. max-sim per (task, candidate, 64 query rows): float32 CUDA-core tiles (fp32 mode: m and
//     argmax), or bf16 wmma tiles that pick the argmax followed by an fp32 rescoring of the picked
//     key (bf16 mode);
//  4. per task: m̄, the loss and ∂L/∂m̄ (double); per query row: gYq = Σ coef·d_argmax and the
//     scatter gYs[argmax] += coef·q (float atomics: the sum's order varies between runs);
//  5. the normalisation's backward, gW = gYᵀ·H (cuBLAS), ‖g‖², and AdamW in place.
// Buffers grow to the largest batch seen and are reused.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/cuda_memory.cuh"
#include "common/failure.h"
#include "common/parallel.h"
#include "train/train_cuda_index.cuh"
#include "train/train_cuda_kernels.cuh"
#include "train/train_device.h"

namespace gavel::train::device {
namespace {

using cuda::Buf;
using cuda::Check;

void CheckBlas(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  if (s == CUBLAS_STATUS_ALLOC_FAILED) throw Failure(Code::OUT_OF_MEMORY, std::string("cuBLAS ") + what + ": out of memory");
  throw Failure(Code::CUDA_ERROR, std::string("cuBLAS ") + what + ": status " + std::to_string(int(s)));
}


template <typename T>
T* Upload(Buf<T>& b, const T* host, size_t n, cudaStream_t st) {
  T* d = b.Ensure(n);
  if (n > 0) Check(cudaMemcpyAsync(d, host, n * sizeof(T), cudaMemcpyHostToDevice, st), "copying the batch to the device");
  return d;
}

unsigned Blocks(int64_t n, int threads, int64_t cap = 65535) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(cap, (n + threads - 1) / threads)));
}

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

class CudaTrainer final : public DeviceTrainer {
 public:
  CudaTrainer(int64_t nEmbd, int64_t dim, Precision precision)
      : nEmbd_(nEmbd), dim_(dim), dimP_((dim + 63) / 64 * 64), precision_(precision) {
    Check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a CUDA stream");
    CheckBlas(cublasCreate(&blas_), "create");
    CheckBlas(cublasSetStream(blas_, stream_), "set stream");
    // fp32 products in both precisions: bf16 mode differs from the CPU only in its argmax search.
    CheckBlas(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH), "set math mode");
    const size_t n = size_t(nEmbd * dim);
    for (Buf<float>* b : {&wq_, &ws_, &mq_, &vq_, &ms_, &vs_, &gWq_, &gWs_}) {
      b->Ensure(n);
      Check(cudaMemsetAsync(b->p, 0, n * sizeof(float), stream_), "clearing the weights");
    }
    flags_.Ensure(kFlags);
    scalars_.Ensure(1);
    Check(cudaStreamSynchronize(stream_), "allocating the trainer");
    cudaDeviceProp prop{};
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) name_ = prop.name;
  }
  ~CudaTrainer() override {
    for (__half* c : chunks_) cudaFree(c);
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
    if (blas_ != nullptr) cublasDestroy(blas_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  void SetWeights(const float* wq, const float* ws) override {
    Put(wq_, wq);
    Put(ws_, ws);
    Sync("setting the weights");
  }
  void SetMoments(const float* mq, const float* vq, const float* ms, const float* vs) override {
    Put(mq_, mq);
    Put(vq_, vq);
    Put(ms_, ms);
    Put(vs_, vs);
    Sync("setting the optimizer state");
  }
  void GetWeights(float* wq, float* ws) const override {
    Get(wq_, wq);
    Get(ws_, ws);
    Sync("reading the weights");
  }
  void GetMoments(float* mq, float* vq, float* ms, float* vs) const override {
    Get(mq_, mq);
    Get(vq_, vq);
    Get(ms_, ms);
    Get(vs_, vs);
    Sync("reading the optimizer state");
  }
  std::string DeviceName() const override { return name_; }

  StepResult Step(const Batch& b, const StepParams& p) override;

  void NewChunk(size_t halves) override {
    __half* c = nullptr;
    Check(cudaMalloc(reinterpret_cast<void**>(&c), std::max<size_t>(halves, 1) * sizeof(__half)), "allocating resident states");
    chunks_.push_back(c);
  }
  void FillChunk(int32_t c, size_t at, const uint16_t* src, size_t n) override {
    if (c < 0 || size_t(c) >= chunks_.size()) throw Failure(Code::INTERNAL, "no such resident chunk");
    // Synchronous from pageable memory: the source is the caller's, freed when this returns.
    Check(cudaMemcpy(chunks_[c] + at, src, n * sizeof(uint16_t), cudaMemcpyHostToDevice), "copying resident states");
  }
  void DropChunks(size_t from) override {
    Check(cudaStreamSynchronize(stream_), "waiting for the stream");  // no step reads them any more
    while (chunks_.size() > from) {
      cudaFree(chunks_.back());
      chunks_.pop_back();
    }
  }

  void Stage(const float* q, size_t qFloats, const float* s, size_t sFloats, Batch& b) override {
    const size_t need = qFloats + sFloats;
    if (need > pinnedCap_) {
      if (pinned_ != nullptr) cudaFreeHost(pinned_);
      pinned_ = nullptr;
      pinnedCap_ = 0;
      const size_t want = need + need / 8;
      Check(cudaHostAlloc(reinterpret_cast<void**>(&pinned_), want * sizeof(float), cudaHostAllocDefault), "pinning host memory");
      pinnedCap_ = want;
    }
    // ~8 threads: one memcpy stream reaches a fraction of the host's memory bandwidth.
    const size_t chunk = size_t(1) << 22;  // floats (16 MiB)
    const size_t nChunks = (need + chunk - 1) / chunk;
    const unsigned nt = unsigned(std::min<size_t>(8, std::max<size_t>(1, nChunks)));
    Parallel(nt, [&](unsigned th) {
      for (size_t c = th; c < nChunks; c += nt) {
        const size_t a = c * chunk, e = std::min(need, a + chunk);
        for (size_t x = a; x < e;) {
          const bool inQ = x < qFloats;
          const size_t end = inQ ? std::min(e, qFloats) : e;
          std::memcpy(pinned_ + x, inQ ? q + x : s + (x - qFloats), (end - x) * sizeof(float));
          x = end;
        }
      }
    });
    b.qStaged = pinned_;
    b.sStaged = pinned_ + qFloats;
  }

 private:
  int64_t nEmbd_, dim_, dimP_;
  Precision precision_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::string name_ = "CUDA device";
  Buf<float> wq_, ws_, mq_, vq_, ms_, vs_, gWq_, gWs_;
  // per-step buffers
  Buf<float> q_, s_, yq_, ys_, gyq_, gys_, m_;
  Buf<__nv_bfloat16> qb_, kb_;
  Buf<double> rq_, rs_, mbar_, coef_, loss_, scalars_;
  Buf<int32_t> qOff_, sOff_, cOff_, cand_, rowTask_, am_;
  Buf<uint8_t> pos_;
  Buf<int64_t> pairOff_;
  Buf<Work> work_;
  Buf<int> flags_;
  Buf<GatherEntry> gather_;
  Buf<int32_t> keep_;
  std::vector<__half*> chunks_;  // the resident store's chunks (NewChunk)
  float* pinned_ = nullptr;  // staged states (Stage), cudaHostAlloc'd
  size_t pinnedCap_ = 0;

  void Put(Buf<float>& d, const float* h) {
    Check(cudaMemcpyAsync(d.p, h, size_t(nEmbd_ * dim_) * sizeof(float), cudaMemcpyHostToDevice, stream_), "copying to the device");
  }
  void Get(const Buf<float>& d, float* h) const {
    Check(cudaMemcpyAsync(h, d.p, size_t(nEmbd_ * dim_) * sizeof(float), cudaMemcpyDeviceToHost, stream_), "copying from the device");
  }
  void Sync(const char* what) const { Check(cudaStreamSynchronize(stream_), what); }
  void Launched(const char* what) const { Check(cudaGetLastError(), what); }

  // C (n × m, row-major) = A (n × k, row-major) · Bᵀ (B: m × k, row-major).
  void GemmABt(const float* A, int64_t n, int64_t k, const float* B, int64_t m, float* C) {
    const float one = 1.f, zero = 0.f;
    // column-major: Cᵀ (m × n) = B (op T of Bᵀ col-major view, m × k) · Aᵀ (k × n)
    CheckBlas(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, int(m), int(n), int(k), &one, B, int(k), A, int(k), &zero, C, int(m)),
              "sgemm (projection)");
  }
  // gW (dim × nEmbd, row-major) = gYᵀ (dim × n) · H (n × nEmbd).
  void GemmWeightGrad(const float* gY, const float* H, int64_t n, float* gW) {
    const float one = 1.f, zero = 0.f;
    if (n == 0) {
      Check(cudaMemsetAsync(gW, 0, size_t(nEmbd_ * dim_) * sizeof(float), stream_), "clearing a gradient");
      return;
    }
    // column-major: gWᵀ (nEmbd × dim) = Hᵀ (nEmbd × n, H's col-major view) · gY (n × dim, op T of gYᵀ view)
    CheckBlas(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, int(nEmbd_), int(dim_), int(n), &one, H, int(nEmbd_), gY, int(dim_),
                          &zero, gW, int(nEmbd_)),
              "sgemm (weight gradient)");
  }
  void Normalize(float* U, int64_t n, double* r, __nv_bfloat16* Ub) {
    if (n == 0) return;
    NormalizeRowsKernel<<<Blocks(n * 32, 256, std::numeric_limits<int32_t>::max()), 256, 0, stream_>>>(
        U, n, int(dim_), r, Ub, int(dimP_), flags_.p);
    Launched("launching the normalisation");
  }
  void CheckFinite(const float* x, int64_t n, int slot) {
    if (n == 0) return;
    NonFiniteKernel<<<Blocks(n, 256, 4096), 256, 0, stream_>>>(x, n, flags_.p, slot);
    Launched("launching the finiteness check");
  }
};

// long function: the step's phases in order (see the file's head), on one stream.
StepResult CudaTrainer::Step(const Batch& b, const StepParams& p) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const int64_t nTasks = b.nTasks(), nSkills = b.nSkills();
  const int64_t nQ = b.qOff[nTasks], nS = b.sOff[nSkills];
  const int64_t sWidth = p.keysGiven ? dim_ : nEmbd_;
  const int64_t wn = nEmbd_ * dim_;
  const bool bf16 = precision_ == Precision::Bf16;
  HostIndex h = BuildIndex(b);
  const int64_t nPairs = h.pairOff[nTasks];
  if (p.pairs.forceArgmax != nullptr) CheckForced(b, h, p.pairs);
  if (nQ > std::numeric_limits<int32_t>::max() / 2 || int64_t(h.work.size()) > std::numeric_limits<int32_t>::max())
    throw Failure(Code::INVALID_ARGUMENT, "the batch is too large for one CUDA step");
  if (double(nQ) * dimP_ > 9e18 / 2 || double(nS) * dimP_ > 9e18 / 2) throw Failure(Code::INVALID_ARGUMENT, "the batch is too large");

  // 1. upload (a resident batch uploads its gather list instead of the skills' rows)
  const bool resident = b.resident;
  if (resident && (p.store == nullptr || p.store->width != sWidth))
    throw Failure(Code::INTERNAL, "a resident batch without its store");
  const float* dq = Upload(q_, b.Q(), size_t(nQ * nEmbd_), stream_);
  float* ds = resident ? s_.Ensure(size_t(nS * sWidth)) : Upload(s_, b.S(), size_t(nS * sWidth), stream_);
  std::vector<GatherEntry> gather;
  int32_t maxRows = 1;
  if (resident) {
    gather.resize(b.refs.size());
    for (size_t e = 0; e < b.refs.size(); ++e) {
      const int32_t sk = b.refs[e];
      GatherEntry& g = gather[e];
      g.rows = b.sOff[e + 1] - b.sOff[e];
      g.src = g.rows > 0 ? chunks_.at(size_t(p.store->chunk[sk])) + p.store->row0[sk] * sWidth : nullptr;
      g.dst = b.sOff[e];
      g.keep0 = b.keepOff[e];
      g.keepN = b.keepOff[e + 1] - b.keepOff[e];
      maxRows = std::max(maxRows, g.rows);
    }
    Upload(gather_, gather.data(), gather.size(), stream_);
    Upload(keep_, b.keep.data(), b.keep.size(), stream_);
  }
  DevIndex ix{};
  ix.qOff = Upload(qOff_, b.qOff.data(), b.qOff.size(), stream_);
  ix.sOff = Upload(sOff_, b.sOff.data(), b.sOff.size(), stream_);
  ix.cOff = Upload(cOff_, b.candOff.data(), b.candOff.size(), stream_);
  ix.cand = Upload(cand_, b.cand.data(), b.cand.size(), stream_);
  ix.pos = Upload(pos_, b.pos.data(), b.pos.size(), stream_);
  ix.pairOff = Upload(pairOff_, h.pairOff.data(), h.pairOff.size(), stream_);
  ix.rowTask = Upload(rowTask_, h.rowTask.data(), h.rowTask.size(), stream_);
  const Work* dwork = Upload(work_, h.work.data(), h.work.size(), stream_);
  int32_t* am = am_.Ensure(size_t(nPairs));
  if (p.pairs.forceArgmax != nullptr) Upload(am_, p.pairs.forceArgmax, size_t(nPairs), stream_);
  Sync("copying the batch to the device");
  const auto t1 = Clock::now();

  // 2. the resident gather, checks and projections
  if (resident && !gather.empty()) {
    const dim3 grid(unsigned(gather.size()), unsigned(std::min(maxRows, 64)));
    GatherHalfKernel<<<grid, 128, 0, stream_>>>(gather_.p, keep_.Ensure(1), int(sWidth), ds);
    Launched("launching the resident gather");
  }
  Check(cudaMemsetAsync(flags_.p, 0, kFlags * sizeof(int), stream_), "clearing flags");
  CheckFinite(wq_.p, wn, kWeightsBad);
  if (!p.keysGiven) CheckFinite(ws_.p, wn, kWeightsBad);
  CheckFinite(dq, nQ * nEmbd_, kQueriesBad);
  CheckFinite(ds, nS * sWidth, kSkillsBad);
  float* yq = yq_.Ensure(size_t(nQ * dim_));
  double* rq = rq_.Ensure(size_t(nQ));
  __nv_bfloat16* qb = bf16 ? qb_.Ensure(size_t(nQ * dimP_)) : nullptr;
  __nv_bfloat16* kb = bf16 ? kb_.Ensure(size_t(nS * dimP_)) : nullptr;
  GemmABt(dq, nQ, nEmbd_, wq_.p, dim_, yq);
  Normalize(yq, nQ, rq, qb);
  const float* ys = ds;
  double* rs = nullptr;
  if (!p.keysGiven) {
    float* ysOwn = ys_.Ensure(size_t(nS * dim_));
    rs = rs_.Ensure(size_t(nS));
    GemmABt(ds, nS, nEmbd_, ws_.p, dim_, ysOwn);
    Normalize(ysOwn, nS, rs, kb);
    ys = ysOwn;
  } else if (bf16 && nS > 0) {
    ToBf16Kernel<<<Blocks(nS * dimP_, 256, 8192), 256, 0, stream_>>>(ds, nS, int(dim_), kb, int(dimP_));
    Launched("launching the bf16 conversion");
  }

  // 3. max-sim
  float* m = m_.Ensure(size_t(nPairs));
  const unsigned nWork = unsigned(h.work.size());
  if (p.pairs.forceArgmax == nullptr && nWork > 0) {
    if (bf16) {
      MaxSimBf16Kernel<<<nWork, kBfThreads, 0, stream_>>>(qb, kb, int(dimP_), dwork, am);
      Launched("launching the bf16 max-sim");
    } else {
      MaxSimF32Kernel<<<nWork, kF32Threads, 0, stream_>>>(yq, ys, int(dim_), dwork, m, am);
      Launched("launching the fp32 max-sim");
    }
  }
  if (bf16 || p.pairs.forceArgmax != nullptr) {
    RescoreKernel<<<unsigned(nQ), 256, 0, stream_>>>(yq, ys, int(dim_), ix, am, m, flags_.p, kForcedBad);
    Launched("launching the rescoring");
  }

  // 4. loss and the pairs' gradients
  double* coef = coef_.Ensure(b.cand.size());
  double* loss = loss_.Ensure(size_t(nTasks));
  TaskLossKernel<<<unsigned(nTasks), kLossThreads, 0, stream_>>>(m, ix, p.tau, 1.0 / double(nTasks), mbar_.Ensure(b.cand.size()),
                                                                 coef, loss);
  Launched("launching the loss");
  float* gyq = gyq_.Ensure(size_t(nQ * dim_));
  float* gys = nullptr;
  if (!p.keysGiven) {
    gys = gys_.Ensure(size_t(nS * dim_));
    Check(cudaMemsetAsync(gys, 0, size_t(nS * dim_) * sizeof(float), stream_), "clearing gradients");
  }
  GradPairsKernel<<<unsigned(nQ), int(std::min<int64_t>(256, (dim_ + 31) / 32 * 32)), 0, stream_>>>(yq, ys, int(dim_), ix, am,
                                                                                                   coef, gyq, gys);
  Launched("launching the pairs' gradient");

  // 5. backward through the normalisation and the projections; ‖g‖²
  NormalizeBackwardKernel<<<Blocks(nQ * 32, 256, std::numeric_limits<int32_t>::max()), 256, 0, stream_>>>(yq, rq, gyq, nQ,
                                                                                                          int(dim_));
  Launched("launching the normalisation's backward");
  GemmWeightGrad(gyq, dq, nQ, gWq_.p);
  if (!p.keysGiven) {
    if (nS > 0) {
      NormalizeBackwardKernel<<<Blocks(nS * 32, 256, std::numeric_limits<int32_t>::max()), 256, 0, stream_>>>(ys, rs, gys, nS,
                                                                                                            int(dim_));
      Launched("launching the normalisation's backward");
    }
    GemmWeightGrad(gys, ds, nS, gWs_.p);
  }
  Check(cudaMemsetAsync(scalars_.p, 0, sizeof(double), stream_), "clearing the norm");
  SumSquaresKernel<<<Blocks(wn, 256, 1024), 256, 0, stream_>>>(gWq_.p, wn, scalars_.p);
  if (!p.keysGiven) SumSquaresKernel<<<Blocks(wn, 256, 1024), 256, 0, stream_>>>(gWs_.p, wn, scalars_.p);
  Launched("launching the gradient norm");

  std::vector<double> lossHost(static_cast<size_t>(nTasks));
  int flagsHost[kFlags] = {0};
  double ss = 0;
  Check(cudaMemcpyAsync(lossHost.data(), loss, size_t(nTasks) * sizeof(double), cudaMemcpyDeviceToHost, stream_), "reading the loss");
  Check(cudaMemcpyAsync(flagsHost, flags_.p, sizeof(flagsHost), cudaMemcpyDeviceToHost, stream_), "reading flags");
  Check(cudaMemcpyAsync(&ss, scalars_.p, sizeof(double), cudaMemcpyDeviceToHost, stream_), "reading the norm");
  Sync("running the training step");
  if (flagsHost[kWeightsBad]) throw Failure(Code::INVALID_ARGUMENT, "the weights hold NaN or Infinity");
  if (flagsHost[kQueriesBad]) throw Failure(Code::INVALID_ARGUMENT, "queryStates hold NaN or Infinity");
  if (flagsHost[kSkillsBad]) throw Failure(Code::INVALID_ARGUMENT, "skillStates hold NaN or Infinity");
  if (flagsHost[kOverflow]) throw Failure(Code::INVALID_ARGUMENT, "W h overflows float32 (states or weights far too large)");
  if (flagsHost[kForcedBad]) throw Failure(Code::INTERNAL, "an argmax fell outside its skill");
  StepResult out;
  for (int64_t t = 0; t < nTasks; ++t) out.lg.loss += lossHost[t];
  out.lg.loss *= 1.0 / double(nTasks);
  if (!std::isfinite(out.lg.loss)) throw Failure(Code::INVALID_ARGUMENT, "the loss came out non-finite");
  out.gradNorm = std::sqrt(ss);

  if (p.update) {
    const double c1 = 1.0 - std::pow(p.adam.beta1, double(p.t)), c2 = 1.0 - std::pow(p.adam.beta2, double(p.t));
    const AdamWParams& a = p.adam;
    AdamWKernel<<<Blocks(wn, 256, 4096), 256, 0, stream_>>>(wq_.p, mq_.p, vq_.p, gWq_.p, wn, a.lr, a.beta1, a.beta2, a.eps,
                                                             a.weightDecay, c1, c2);
    if (!p.keysGiven)
      AdamWKernel<<<Blocks(wn, 256, 4096), 256, 0, stream_>>>(ws_.p, ms_.p, vs_.p, gWs_.p, wn, a.lr, a.beta1, a.beta2, a.eps,
                                                               a.weightDecay, c1, c2);
    Launched("launching AdamW");
  }
  if (p.returnGrads) {
    out.lg.gWq.resize(size_t(wn));
    Get(gWq_, out.lg.gWq.data());
    if (!p.keysGiven) {
      out.lg.gWs.resize(size_t(wn));
      Get(gWs_, out.lg.gWs.data());
    }
  }
  if (p.pairs.keep) {
    out.lg.m.resize(size_t(nPairs));
    out.lg.argmax.resize(size_t(nPairs));
    Check(cudaMemcpyAsync(out.lg.m.data(), m, size_t(nPairs) * sizeof(float), cudaMemcpyDeviceToHost, stream_), "reading m");
    Check(cudaMemcpyAsync(out.lg.argmax.data(), am, size_t(nPairs) * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_),
          "reading argmax");
  }
  Sync("finishing the training step");
  const auto t2 = Clock::now();
  out.uploadMs = Ms(t0, t1);
  out.computeMs = Ms(t1, t2);
  return out;
}

}  // namespace

bool Available(std::string* why) { return cuda::DeviceAvailable(why); }

std::unique_ptr<DeviceTrainer> Create(int64_t nEmbd, int64_t dim, Precision precision) {
  std::string why;
  if (!Available(&why)) throw Failure(Code::CUDA_UNAVAILABLE, "the CUDA trainer is unavailable: " + why);
  return std::make_unique<CudaTrainer>(nEmbd, dim, precision);
}

}  // namespace gavel::train::device
