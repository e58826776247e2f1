// logprobs_device.h on CUDA: the log-probs of a Score ubatch's targets, reduced from the logits where
// llama.cpp computed them (the host twin is HostLogProbs in logprob_reducer.cpp, which the tests
// compare with the host path; on the device scripts/device/logprobs-twins.mjs compares the two).
//
// One block a row: the row's max, then Σ exp(x − max) in float64 (as the host path), then the k
// targets' x − logsumexp. The row is read twice from HBM (152K floats a row for Qwen3): 1.4 GB for a
// 9-candidate verdict is ~1 ms on an H100, against copying it to the host and summing there.
//
// Called from llama.cpp's eval callback, so nothing here throws: any CUDA failure returns false and
// the caller copies the logits to the host instead.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "model/logprobs_device.h"

namespace gavel::logprobs_device {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ double WarpSum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void RowLogProbsKernel(const float* __restrict__ logits, int64_t nv, const int32_t* __restrict__ targets, int k,
                                  float* __restrict__ out) {
  __shared__ float smax[kWarps];
  __shared__ double ssum[kWarps];
  const int64_t row = blockIdx.x;
  const float* x = logits + row * nv;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < nv; i += kThreads) m = fmaxf(m, x[i]);
  m = WarpMax(m);
  if (lane == 0) smax[warp] = m;
  __syncthreads();
  if (warp == 0) {
    float w = lane < kWarps ? smax[lane] : -INFINITY;
    w = WarpMax(w);
    if (lane == 0) smax[0] = w;
  }
  __syncthreads();
  m = smax[0];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < nv; i += kThreads) s += double(expf(x[i] - m));
  s = WarpSum(s);
  if (lane == 0) ssum[warp] = s;
  __syncthreads();
  if (warp == 0) {
    double w = lane < kWarps ? ssum[lane] : 0.0;
    w = WarpSum(w);
    if (lane == 0) ssum[0] = w;
  }
  __syncthreads();
  const double lse = double(m) + log(ssum[0]);
  for (int j = threadIdx.x; j < k; j += kThreads) out[row * k + j] = float(double(x[targets[row * k + j]]) - lse);
}

// Per host thread (Score calls of different models may run at once on different worker threads):
// grow-only device buffers and a stream of its own.
struct Scratch {
  int32_t* targets = nullptr;
  float* out = nullptr;
  size_t cap = 0;
  cudaStream_t stream = nullptr;
  ~Scratch() {
    // at thread exit; errors (a runtime already torn down) are ignored
    if (targets != nullptr) cudaFree(targets);
    if (out != nullptr) cudaFree(out);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

thread_local Scratch scratch;

bool Ensure(size_t n) {
  if (n <= scratch.cap) return true;
  if (scratch.targets != nullptr) cudaFree(scratch.targets);
  if (scratch.out != nullptr) cudaFree(scratch.out);
  scratch.targets = nullptr;
  scratch.out = nullptr;
  scratch.cap = 0;
  if (cudaMalloc(&scratch.targets, n * sizeof(int32_t)) != cudaSuccess || cudaMalloc(&scratch.out, n * sizeof(float)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  scratch.cap = n;
  return true;
}

}  // namespace

bool RowLogProbs(const float* logits, int64_t nv, int64_t n, const int32_t* targets, int k, float* out) {
  if (logits == nullptr || nv <= 0 || n <= 0 || k <= 0 || n > (int64_t(1) << 31) - 1) return false;
  cudaPointerAttributes attr;
  int device = -1;
  if (cudaPointerGetAttributes(&attr, logits) != cudaSuccess || attr.type != cudaMemoryTypeDevice ||
      cudaGetDevice(&device) != cudaSuccess || attr.device != device) {
    cudaGetLastError();  // clear the sticky-free error of a failed query
    return false;
  }
  const size_t count = size_t(k) * size_t(n);
  if (!Ensure(count)) return false;
  if (scratch.stream == nullptr && cudaStreamCreateWithFlags(&scratch.stream, cudaStreamNonBlocking) != cudaSuccess) {
    scratch.stream = nullptr;
    cudaGetLastError();
    return false;
  }
  // The scheduler synchronised llama.cpp's stream before the callback: the logits are complete.
  if (cudaMemcpyAsync(scratch.targets, targets, count * sizeof(int32_t), cudaMemcpyHostToDevice, scratch.stream) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  RowLogProbsKernel<<<unsigned(n), kThreads, 0, scratch.stream>>>(logits, nv, scratch.targets, k, scratch.out);
  if (cudaGetLastError() != cudaSuccess) return false;
  if (cudaMemcpyAsync(out, scratch.out, count * sizeof(float), cudaMemcpyDeviceToHost, scratch.stream) != cudaSuccess ||
      cudaStreamSynchronize(scratch.stream) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

}  // namespace gavel::logprobs_device
