// Where each skill's keys live in the bank's device copy, and what a bank change must upload: plain
// C++ (no CUDA), so the bookkeeping is tested in a CPU build (NativeBank._deviceLayoutProbe).
//
// The device copy is one buffer of rows (CapacityRows() ≥ End()). A skill keeps the rows it was
// given until it is removed; a new skill is appended at End(). So a bank change uploads only the
// new skills' rows, and a removal uploads nothing (its rows become a hole, which no glance reads:
// the device kernels walk each column's own row range, never the buffer whole). When holes would
// exceed a third of End(), the next sync compacts: every live skill is placed afresh from row 0
// and uploaded again (rare: amortised over the removals that made the holes).
//
// Handles are never reused by a bank (bank_core.h), so a handle names one immutable key block for
// the bank's lifetime; the layout follows handles only.
//
// A sync of the snapshot synced last (same generation: Snapshot::generation changes with every
// mutation, so equal generations mean equal entries) returns at once, without a pass over the
// skills: the steady state of a live context, one glance per token over an unchanged bank. Every
// other sync takes a fresh epoch, so an epoch names one placement of the skills (what a cache of
// the columns' rows, bank_core.h, keys on).
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace gavel::bank {

struct Snapshot;

// A fresh value (≥ 1) of one process-wide counter: snapshot generations and layout epochs.
uint64_t NewGeneration();

struct LayoutPlan {
  struct Upload {
    int64_t entry;  // position in the snapshot's entries
    int64_t row;    // first device row
  };
  std::vector<Upload> uploads;  // in entry order
  int64_t end = 0;              // rows in use after the sync (live rows + holes)
  int64_t uploadedRows = 0;
  bool compacted = false;       // every live skill was placed afresh (uploads hold all of them)
};

class DeviceLayout {
 public:
  // Brings the layout to `s` and says what to upload. Afterwards Row(h) holds for every entry of s.
  LayoutPlan Sync(const Snapshot& s);
  // First device row of the skill with this handle (it must be placed: after Sync of a snapshot
  // holding it).
  int64_t Row(int32_t handle) const { return slots_.at(handle).row; }
  int64_t End() const { return end_; }
  int64_t LiveRows() const { return live_; }
  // Changes with every sync that did not find the snapshot synced last; 0 before the first.
  uint64_t Epoch() const { return epoch_; }

 private:
  struct Slot {
    int64_t row, rows;
  };
  std::unordered_map<int32_t, Slot> slots_;
  int64_t end_ = 0, live_ = 0;
  uint64_t synced_ = 0;  // generation of the snapshot synced last (0: none)
  uint64_t epoch_ = 0;
};

}  // namespace gavel::bank
