// The trainer's resident skill store: every skill's rows (backbone states, or dim-wide unit
// keys while W_s is frozen) held once as IEEE binary16 (round to nearest even, src/util/half.ts's
// conversion), so a step names skills by library index instead of carrying their states. The layout
// (which chunk and row each skill starts at) lives here for both trainers; the bytes live in host
// chunks for the CPU trainer and in device chunks for the CUDA one (train_device.h's chunk calls).
// Chunks are at most kChunkBytes (or one skill, if larger): no 12 GB buffer is ever reallocated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "train/train_core.h"

namespace gavel::train {

// float32 → binary16 bits, round to nearest even; overflow → ±Inf, NaN → quiet NaN (as half.ts).
uint16_t HalfFromFloat(float x);
// binary16 bits → float32 (exact).
float FloatFromHalf(uint16_t h);
// The largest float32 that rounds to a finite binary16 is just below 65520.
constexpr float kHalfLimit = 65520.f;

struct ResidentStore {
  static constexpr size_t kChunkBytes = size_t(256) << 20;
  int64_t width = 0;           // floats per row; 0 while empty (set by the first add)
  std::vector<int32_t> chunk;  // per skill: its chunk
  std::vector<int64_t> row0;   // per skill: its first row within that chunk
  std::vector<int32_t> rows;   // per skill: its rows
  std::vector<int64_t> chunkRows, chunkUsed;  // per chunk: capacity and rows used
  // The CPU trainer's chunks (the CUDA trainer keeps its own on the device).
  std::vector<std::unique_ptr<uint16_t[]>> host;
  int64_t Skills() const { return static_cast<int64_t>(rows.size()); }
  // Bytes the chunks take (capacity, not only rows used).
  double Bytes() const {
    double r = 0;
    for (int64_t c : chunkRows) r += double(c) * double(width) * 2.0;
    return r;
  }
  void Clear() { *this = ResidentStore(); }
};

// Placement of one addSkills call: per new skill its chunk and first row, and the chunks to create
// (their rows). Existing chunks are filled first where the next skill fits in the last one.
struct Placement {
  std::vector<int32_t> chunk;
  std::vector<int64_t> row0;
  std::vector<int64_t> newChunkRows;  // chunks store.chunkRows.size(), +1, … to create
  int64_t lastUsedAfter = 0;          // the last existing chunk's rows used afterwards
};
Placement Place(const ResidentStore& s, const int32_t* rows, int64_t n, int64_t width);

// Checks every value finite and within binary16's range, then converts them into dst (parallel).
// Throws Failure(INVALID_ARGUMENT) naming the first bad index.
void CheckAndConvert(const float* src, size_t n, uint16_t* dst, unsigned threads);

// The CPU trainer's gather: fills b.s with the rows the batch's resident entries name (f16 → f32),
// entry e at rows b.sOff[e] …; an entry with keep rows takes those rows of its skill in order.
void GatherHost(const ResidentStore& s, Batch& b, unsigned threads);

}  // namespace gavel::train
