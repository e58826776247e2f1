// The CUDA step's host-side index of a batch (train_cuda.cu): each task's first pair, each query
// row's task, the max-sim's work list, and the check of forced argmax keys. Host code only; included
// by train_cuda.cu alone.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/failure.h"
#include "train/train_core.h"
#include "train/train_cuda_kernels.cuh"

namespace gavel::train::device {

// The host-side index of a batch: each task's first pair, each query row's task, the max-sim's work list.
struct HostIndex {
  std::vector<int64_t> pairOff;
  std::vector<int32_t> rowTask;
  std::vector<Work> work;
};

inline HostIndex BuildIndex(const Batch& b) {
  HostIndex h;
  h.pairOff = PairOffsets(b);
  const int64_t nTasks = b.nTasks();
  h.rowTask.resize(size_t(b.qOff[nTasks]));
  for (int64_t t = 0; t < nTasks; ++t) {
    const int32_t q0 = b.qOff[t], q1 = b.qOff[t + 1], c0 = b.candOff[t], nc = b.candOff[t + 1] - c0;
    std::fill(h.rowTask.begin() + q0, h.rowTask.begin() + q1, int32_t(t));
    for (int32_t c = 0; c < nc; ++c) {
      const int32_t s = b.cand[c0 + c];
      for (int32_t r = q0; r < q1; r += 64) {
        Work w{};
        w.q0 = r;
        w.nq = std::min(64, q1 - r);
        w.k0 = b.sOff[s];
        w.nk = b.sOff[s + 1] - b.sOff[s];
        w.out = h.pairOff[t] + int64_t(r - q0) * nc + c;
        w.stride = nc;
        h.work.push_back(w);
      }
    }
  }
  return h;
}

inline void CheckForced(const Batch& b, const HostIndex& h, const PairOptions& po) {
  const int64_t nTasks = b.nTasks();
  if (po.forceCount != h.pairOff[nTasks])
    throw Failure(Code::INVALID_ARGUMENT, "forceArgmax must hold one key index per (task, query row, candidate) pair (" +
                                              std::to_string(h.pairOff[nTasks]) + ")");
  for (int64_t t = 0; t < nTasks; ++t) {
    const int64_t nq = b.qOff[t + 1] - b.qOff[t], c0 = b.candOff[t], nc = b.candOff[t + 1] - c0;
    for (int64_t i = 0; i < nq; ++i)
      for (int64_t c = 0; c < nc; ++c) {
        const int32_t s = b.cand[c0 + c], k = po.forceArgmax[h.pairOff[t] + i * nc + c];
        if (k < 0 || k >= b.sOff[s + 1] - b.sOff[s]) throw Failure(Code::INVALID_ARGUMENT, "forceArgmax names a key outside its skill");
      }
  }
}

}  // namespace gavel::train::device
