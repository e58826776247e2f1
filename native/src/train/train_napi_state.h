// The NativeTrainer's state and the pieces of its N-API surface that need no class: the trainer's
// State, argument readers (batch, pair options, matrices) that validate every JS input before any
// memory is touched, the portable Gaussian initialisation, and the step's work (ComputeStep) that a
// worker thread runs on the device or the CPU. Used by train_napi.cpp only.
#pragma once
#include <napi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels_core.h"
#include "train/train_core.h"
#include "train/train_device.h"
#include "train/train_resident.h"

namespace gavel::trainer_napi {

struct State {
  int64_t nEmbd = 0, dim = 0;
  double tau = 40;
  train::AdamWParams adam;
  bool freezeWs = false;
  unsigned threads = 0;
  int64_t step = 0;
  // CPU trainer: the weights and moments live here. CUDA trainer (dev set): they live on the device
  // and these stay empty.
  std::vector<float> wq, ws, mq, vq, ms, vs;
  std::unique_ptr<train::device::DeviceTrainer> dev;
  train::device::Precision precision = train::device::Precision::Bf16;
  // The resident skills (addSkills): layout for both trainers, bytes in host chunks (CPU) or on the
  // device (dev's chunks).
  train::ResidentStore store;
  std::atomic<bool> busy{false};
};

// Test options of lossAndGrad (see train_core.h's PairOptions), copied off the JS thread.
struct PairRequest {
  bool keep = false;
  std::vector<int32_t> force;
  bool forced = false;
};

struct StepOut {
  double loss = 0, gradNorm = 0;
  std::vector<float> gWq, gWs, m;
  std::vector<int32_t> argmax;
  bool frozen = false, keep = false;
  double uploadMs = 0, computeMs = 0;
};

// Offsets: n + 1 entries, 0 first, non-decreasing, last = total.
void CheckOffsets(const Napi::Int32Array& off, const std::string& name, int64_t minLen);

// splitmix64 → uniform → Box–Muller: a portable Gaussian (std::normal_distribution differs by library).
void GaussianInit(std::vector<float>& w, uint64_t seed, double scale);

// An optional string field: absent → dflt.
std::string StringOption(const Napi::Object& o, const char* key, const char* dflt);

// The batch, validated and copied (the worker never touches JS memory); staged for the device when
// the trainer has one. A resident batch (skillRefs, keepOffsets, keepRows instead of skillStates and
// skillOffsets) is checked against the resident store; its rows are gathered by ComputeStep.
std::shared_ptr<train::Batch> ReadBatch(const State& s, const Napi::Value& v);

// step's and lossAndGrad's second argument: { keepPairs?: boolean, forceArgmax?: Int32Array }.
std::shared_ptr<PairRequest> ReadPairRequest(const Napi::Value& v);

// A dim × nEmbd matrix argument, finite (and ≥ 0 unless `finite`: second moments), copied.
void ReadTrainerMatrix(const State& s, const Napi::Value& v, const std::string& name, std::vector<float>& into, bool finite);

// addSkills(states, rows): appends skills to the resident store, all or nothing (see binding.ts).
void AddResidentSkills(State& s, const Napi::Value& states, const Napi::Value& rows);

// The step's work, on a worker thread: on the device when the trainer has one, else on CPU threads
// (a resident batch's rows gathered into batch.s first).
StepOut ComputeStep(State& s, train::Batch& batch, const PairRequest& pr, kernels::Isa isa, bool update);

}  // namespace gavel::trainer_napi
