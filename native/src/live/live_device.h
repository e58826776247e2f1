// The live accumulator on a CUDA device (live_cuda.cu), behind a plain interface so that the rest of
// the addon compiles the same with or without CUDA (live_device_none.cpp answers in a CPU build).
//
// A (one float64 per column, the stored A/scale of live_core.h) stays on the device. An append of b
// rows is only queued on the bank's stream (kernels/device.h: DeviceBank::Stream), in order:
//   1. the rows copied into a pinned host slot (a ring of kSlots, each reused once the device has
//      read it: an event per slot) and from there to the device, asynchronously;
//   2. the projection y = W_q h (W_q resident, float32) and the normalisation (its norm in float64),
//      the query rounded to f16 and zero-padded as the glance's;
//   3. the bank's max-sim over the columns (DeviceBank::EnqueueMaxSim: the glance's kernel), the
//      glance's top-k (kernels/topk.cuh) per row;
//   4. the fold: one block walks the rows in order and adds w_j·inv·m to A at each row's top-k
//      columns (distinct within a row, so no atomics; the rows' order is the CPU's).
//   5. (Publish, after the append's last batch) an asynchronous copy of A into a pinned host snapshot
//      with an event: two snapshots, so the newest one whose copy has completed is never written
//      while a newer copy is in flight.
// Nothing waits for the device on this path. Latest(wait = true) waits for the newest snapshot's copy;
// Latest(wait = false) returns the newest one whose copy has completed, never waiting. Column changes
// (Remap, SetColumns) and growing a buffer wait for the stream: they follow bank changes, not tokens.
// The pinned row slots are allocated together, at construction (64 rows each) and when an append
// needs more, so the appends of a decode loop allocate nothing.
//
// Against the CPU path (tests on the device): the queries are f16 as in the device glance, so m and
// the top-k follow the device glance's contract (kernels/device.h); the fold is the same sum.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace gavel::kernels::device {
class DeviceBank;
}

namespace gavel::live::device {

// What a published snapshot of A stands for (the host's state right after that append's last batch):
// its sequence number, the stored W (A and W share the scale), the rows appended and the columns.
struct Snapshot {
  uint64_t seq = 0;
  double wsum = 0;
  int64_t tokens = 0;
  std::shared_ptr<const std::vector<int32_t>> handles;
};

class DeviceLive {
 public:
  virtual ~DeviceLive() = default;
  // The columns (device rows of each one's first key and its key count), nCols of them; waits for
  // the stream before replacing them.
  virtual void SetColumns(const std::vector<int64_t>& row, const std::vector<int64_t>& rows) = 0;
  // A' [c] = from[c] ≥ 0 ? A[from[c]] : 0 over the new columns (from.size() of them).
  virtual void Remap(const std::vector<int32_t>& from) = 0;
  // Queues one batch: b rows of `width` floats (width nEmbd: raw states, projected here; width dim:
  // queries already projected on the host), A·renorm first when renorm ≠ 1, then the vote of each
  // row j with weight w_j·inv (w_j = decayWeights(b)[j]) folded into A with top-k k.
  virtual void Append(const float* rows, int64_t b, int64_t width, double renorm, double inv, int64_t k) = 0;
  // A back on the host (waits for the stream).
  virtual std::vector<double> Read() = 0;
  // Queues a copy of A (as the appends queued so far leave it) into a pinned snapshot tagged `meta`.
  virtual void Publish(const Snapshot& meta) = 0;
  // The newest published snapshot (wait: after waiting for its copy), or the newest whose copy has
  // completed (no wait): A (meta.handles->size() doubles, pinned host memory valid until the next
  // Publish or Discard) and its meta; nullptr when there is none (nothing published since the last
  // Discard, or, without waiting, none completed yet).
  virtual const double* Latest(bool wait, Snapshot& meta) = 0;
  // Forgets the published snapshots (a reset).
  virtual void Discard() = 0;
  // A = 0.
  virtual void Zero() = 0;
};

// A device accumulator over `bank`'s device copy (which must outlive it), with W_q (dim × nEmbd)
// uploaded once. Throws Failure(CUDA_UNAVAILABLE) in a CPU build.
std::unique_ptr<DeviceLive> CreateDeviceLive(kernels::device::DeviceBank& bank, const float* wq, int64_t nEmbd,
                                             int64_t dim);

}  // namespace gavel::live::device
