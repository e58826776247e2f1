// The glance on a CUDA device (maxsim.cu), behind a plain interface so that the rest of the addon
// compiles the same with or without CUDA. In a CPU build (no GAVEL_WITH_CUDA) device_none.cpp
// answers "unavailable" and nothing here is ever constructed.
//
// The device holds a bank's keys as f16 (common/half.h says why f16) in one grow-only buffer of
// rows laid out by bank/device_layout.h; a glance names its columns by (first row, row count), so
// a restricted glance runs on the device too and holes left by removals are never read.
//
// One glance: the queries are rounded to f16; a fused tensor-core kernel (WMMA 16×16×16, fp32
// accumulate) computes m and argmax per (token, column) into device memory, never to the host; a
// second kernel picks each token's top-k columns there; only those nq × k (column, m) pairs come
// back, and the host sums the vote g in double and in token order, as the CPU twin's Vote() does,
// so for equal m the two give bit-identical g. m and argmax leave the device only for the columns
// asked (`detail`, the best few by g, for explanations) or, with detail < 0, whole.
//
// Contract against the CPU twin (kernels_core.h, the reference in the tests): for a column with
// keys, m is the largest inner product of the f16-rounded query with the skill's f16 keys,
// accumulated in float32 (so |m − m_cpu| ≤ ~2·2⁻¹¹ for unit vectors, in practice ~1e-4), argmax its
// key index within the skill (ties to the lower index); a column without keys scores m = -1 with
// argmax -1; top-k ties go to the lower column. The tests state the tolerances.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels_core.h"

namespace gavel::kernels::device {

// True when this addon was compiled with CUDA and a device answers; otherwise false and, when `why`
// is given, the reason in words.
bool Available(std::string* why = nullptr);

// One skill's keys on the host, to be copied to device rows [row, row + rows): float32 or f16.
struct Placement {
  int64_t row;
  int64_t rows;
  const float* f32;     // one of these two is set
  const uint16_t* f16;
};

struct GlanceArgs {
  const float* queries;  // nq × dim, finite
  int64_t nq;
  const float* weights;  // nq, finite, ≥ 0, positive sum
  int64_t k;             // ≥ 1
  const int64_t* row;    // per column: first device row
  const int64_t* rows;   // per column: key count (0: m = -1)
  int64_t nCols;
  // m and argmax brought back: -1 every column (nq × nCols), else the `detail` best columns by g
  // (nq × detail, in `columns` order).
  int64_t detail;
  // Nonzero: row and rows equal those of every earlier glance given the same key, so the device may
  // reuse its copy of them instead of uploading them again. 0: unknown (they are uploaded).
  uint64_t columnsKey = 0;
};

struct GlanceOut {
  GlanceResult r;
  std::vector<int64_t> columns;  // with detail ≥ 0: the columns of r.m / r.argmax
  // Device time of the phases, from CUDA events (ms): max-sim, top-k, and copies (queries in, the
  // top-k pairs and the detail columns out).
  double maxSimMs = 0, topKMs = 0, copyMs = 0;
};

// A bank's keys on the device, with the workspace its glances reuse. Not thread-safe: the bank
// serialises Update and Glance (one device; a glance holds the workspace throughout).
class DeviceBank {
 public:
  virtual ~DeviceBank() = default;
  // Makes rows [0, endRows) valid (growing the buffer when needed, keeping rows already there) and
  // copies each placement's keys in, converted to f16. Throws Failure(OUT_OF_MEMORY) when the device
  // cannot hold them, Failure(INVALID_ARGUMENT) for a key outside f16's range, Failure(CUDA_ERROR).
  virtual void Update(int64_t endRows, const std::vector<Placement>& uploads) = 0;
  // Polls `stop` between launches of ≈4K columns; Failure(ABORTED) when stopped.
  virtual void Glance(const GlanceArgs& a, GlanceOut& out, const std::atomic<bool>* stop) = 0;
  // For the live accumulator (native/src/live), which queues its own kernels after the bank's on the
  // bank's stream (so a later Update, which may move the keys, waits for them): that stream (a
  // cudaStream_t) and the padded dimension of the device's key and query rows.
  virtual void* Stream() = 0;
  virtual int64_t PaddedDim() const = 0;
  // Queues the max-sim of nq device queries (f16 bits, nq × PaddedDim(), zero past dim) over the
  // nCols columns of device arrays dRow / dRows into dm (device, nq × nCols floats; m alone, -1 for a
  // column without keys), the kernel the glance would pick, on Stream(), and returns without waiting
  // for the device (no stop polling, no synchronisation; a workspace that must grow waits for the
  // stream first). Same m as a glance of the same queries.
  virtual void EnqueueMaxSim(const uint16_t* dq, int64_t nq, const int64_t* dRow, const int64_t* dRows, int64_t nCols,
                             float* dm) = 0;
  // Rows the key buffer holds, and the bytes of device memory held (keys + workspace).
  virtual int64_t CapacityRows() const = 0;
  virtual int64_t DeviceBytes() const = 0;
};

// A device copy for keys of this dimension. Throws Failure(CUDA_UNAVAILABLE) in a CPU build or
// without a device.
std::unique_ptr<DeviceBank> CreateBank(int64_t dim);

}  // namespace gavel::kernels::device
