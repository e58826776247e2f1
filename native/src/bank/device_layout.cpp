// The device copy's row layout (device_layout.h).
#include "bank/device_layout.h"

#include <atomic>
#include <unordered_set>

#include "bank/bank_core.h"

namespace gavel::bank {

uint64_t NewGeneration() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

LayoutPlan DeviceLayout::Sync(const Snapshot& s) {
  LayoutPlan plan;
  if (synced_ != 0 && s.generation == synced_) {  // the same entries as last time: nothing moves
    plan.end = end_;
    return plan;
  }
  synced_ = epoch_ = 0;  // until this sync completes
  // Drop the skills the snapshot no longer holds: their rows become holes.
  std::unordered_set<int32_t> held;
  held.reserve(s.entries.size());
  for (const Entry& e : s.entries) held.insert(e.handle);
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (held.count(it->first) == 0) {
      live_ -= it->second.rows;
      it = slots_.erase(it);
    } else {
      ++it;
    }
  }
  int64_t fresh = 0;
  for (const Entry& e : s.entries)
    if (slots_.count(e.handle) == 0) fresh += e.keys->rows;
  // Compact when the holes after this sync would exceed a third of the rows in use.
  const int64_t endAfter = end_ + fresh, liveAfter = live_ + fresh;
  if (3 * (endAfter - liveAfter) > endAfter) {
    slots_.clear();
    end_ = live_ = 0;
    plan.compacted = true;
  }
  for (size_t i = 0; i < s.entries.size(); ++i) {
    const Entry& e = s.entries[i];
    if (slots_.count(e.handle) != 0) continue;
    const int64_t rows = e.keys->rows;
    slots_.emplace(e.handle, Slot{end_, rows});
    if (rows > 0) plan.uploads.push_back({static_cast<int64_t>(i), end_});
    end_ += rows;
    live_ += rows;
    plan.uploadedRows += rows;
  }
  plan.end = end_;
  synced_ = s.generation;
  epoch_ = NewGeneration();
  return plan;
}

}  // namespace gavel::bank
