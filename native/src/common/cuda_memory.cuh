// What the CUDA sources share for errors and device memory, written once: the glance's twin
// (kernels/maxsim.cu) and the trainer's (train/train_cuda.cu) both turn a CUDA error into a typed
// Failure and keep grow-only device buffers that are reused across calls.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/failure.h"

namespace gavel::cuda {

/** Throws a typed Failure for a CUDA error: OUT_OF_MEMORY for a failed allocation, else CUDA_ERROR. */
inline void Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  const std::string msg = std::string(what) + ": " + cudaGetErrorString(e);
  if (e == cudaErrorMemoryAllocation) throw Failure(Code::OUT_OF_MEMORY, "CUDA " + msg);
  throw Failure(Code::CUDA_ERROR, msg);
}

/** A device buffer that grows (never shrinks) to the largest size asked; Ensure keeps no contents. */
template <typename T>
struct Buf {
  T* p = nullptr;
  size_t cap = 0;
  Buf() = default;
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() {
    if (p != nullptr) cudaFree(p);
  }
  T* Ensure(size_t n) {
    if (n <= cap) return p;
    if (p != nullptr) cudaFree(p);
    p = nullptr;
    cap = 0;
    const size_t want = std::max<size_t>(n + n / 8, 64);  // an eighth of headroom: fewer regrowths
    Check(cudaMalloc(&p, want * sizeof(T)), "cudaMalloc");
    cap = want;
    return p;
  }
  int64_t Bytes() const { return int64_t(cap * sizeof(T)); }
};

}  // namespace gavel::cuda
