// The trainer's step on a CUDA device: the GPU twin of train_core's LossAndGrad + AdamWUpdate, with
// W_q, W_s and their AdamW moments resident in device memory between steps (only the batch is
// uploaded each step). In a CPU build (no GAVEL_WITH_CUDA) train_device_none.cpp answers
// "unavailable" and nothing here is ever constructed.
//
// Precision (see train_cuda.cu):
//  - Fp32: every product in float32 on CUDA cores (cuBLAS SGEMM without TF32, a register-tiled
//    max-sim); the twin of the CPU up to the order of float32 accumulations.
//  - Bf16: the max-sim's search runs on bf16 tensor cores (bf16 unit vectors, fp32 accumulate) and
//    only picks the argmax key; the chosen key's score is then recomputed in float32, so m, the loss
//    and the gradients are fp32 values at the bf16-picked keys (the GEMMs stay fp32). Differs from
//    the CPU only where two keys' products lie within bf16 rounding of each other: a near tie, where
//    either key is a valid subgradient.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/train_core.h"
#include "train/train_resident.h"

namespace gavel::train::device {

enum class Precision { Fp32 = 0, Bf16 = 1 };

// True when this addon was compiled with CUDA and a device answers; otherwise false and, when `why`
// is given, the reason in words.
bool Available(std::string* why = nullptr);

struct StepParams {
  double tau = 40;
  bool keysGiven = false;  // skill rows are dim-wide unit keys (W_s frozen)
  bool update = false;     // apply AdamW step `t` after the gradient
  int64_t t = 0;
  AdamWParams adam;
  bool returnGrads = false;  // download gWq (and gWs) into the result
  PairOptions pairs;         // forced argmax / keep the per-pair m and argmax
  // A resident batch (b.resident): the store's layout, whose chunks are this trainer's (NewChunk);
  // the step gathers the entries' rows from them on the device (f16 → f32) instead of uploading.
  const ResidentStore* store = nullptr;
};

struct StepResult {
  LossGrad lg;  // loss; gradients only when returnGrads; pair detail when asked
  double gradNorm = 0;
  double uploadMs = 0, computeMs = 0;  // batch upload (host → device) and the rest, wall clock
};

class DeviceTrainer {
 public:
  virtual ~DeviceTrainer() = default;
  // Host ↔ device copies of the weights (dim × nEmbd each) and AdamW moments.
  virtual void SetWeights(const float* wq, const float* ws) = 0;
  virtual void SetMoments(const float* mq, const float* vq, const float* ms, const float* vs) = 0;
  virtual void GetWeights(float* wq, float* ws) const = 0;
  virtual void GetMoments(float* mq, float* vq, float* ms, float* vs) const = 0;
  // Loss and gradient over the batch (shapes already validated), then AdamW when asked. Throws
  // Failure(INVALID_ARGUMENT) for non-finite states, weights or loss (weights then untouched),
  // Failure(CUDA_ERROR) / Failure(OUT_OF_MEMORY) from the device.
  virtual StepResult Step(const Batch& b, const StepParams& p) = 0;
  // Copies a batch's query and skill states (on the JS thread, several threads at once) into pinned
  // host memory owned by the trainer, whence Step's upload runs at full PCIe speed; sets b.qStaged
  // and b.sStaged. Valid until the next Stage: one step at a time.
  virtual void Stage(const float* q, size_t qFloats, const float* s, size_t sFloats, Batch& b) = 0;
  virtual std::string DeviceName() const = 0;
  // The resident store's chunks (train_resident.h), in device memory: NewChunk appends one of
  // `halves` binary16 values (Failure(OUT_OF_MEMORY) when the device has no room, nothing kept);
  // FillChunk copies f16 bits from the host into chunk c at value offset `at` (synchronously);
  // DropChunks frees the chunks from index `from` on (all of them for 0).
  virtual void NewChunk(size_t halves) = 0;
  virtual void FillChunk(int32_t c, size_t at, const uint16_t* src, size_t n) = 0;
  virtual void DropChunks(size_t from) = 0;
};

// Allocates the weights (zero) and moments (zero) on the device. Throws Failure(CUDA_UNAVAILABLE) in
// a CPU build or without a device.
std::unique_ptr<DeviceTrainer> Create(int64_t nEmbd, int64_t dim, Precision precision);

}  // namespace gavel::train::device
