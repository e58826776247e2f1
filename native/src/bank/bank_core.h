// The in-memory bank as plain C++ (no N-API): every installed skill's keys, held natively across
// glances, with the running glances' abort flags, the bank's copy on a CUDA device and the policy of
// where a whole-bank glance runs. bank_napi.cpp validates JS arguments and calls this.
//
// Concurrency is copy-on-write:
//  - One skill's keys are an immutable KeyBlock, shared by pointer.
//  - The bank's current state is a Snapshot: the entries (handle, block) sorted by handle, which is
//    also insertion order since handles only grow and are never reused.
//  - PrepareGlance() takes a reference to the current snapshot on the JS thread, when the glance is
//    called, and RunGlance (on workers) reads only that snapshot and its blocks: the glance sees
//    exactly the skills held at the call, whatever add/remove/clear happen while it runs, and nothing
//    it reads is ever written.
//  - Add/Remove/Clear (JS thread only, like every method of Bank) mutate the snapshot in place when
//    nobody else holds it, else first replace it by a copy (the entries only, O(skills) pointers: the
//    keys are shared). Only the JS thread ever creates references to a snapshot, so a use count of 1
//    read there cannot go up concurrently; the acquire fence orders the in-place writes after the
//    last reads of a glance that just released its reference (its decrement is a release).
// So add/remove never wait for a glance, and a glance never waits for them.
//
// Cancellation: each glance gets its own flag, registered (with the caller's ticket) before the call
// returns and unregistered when its work ends; Abort(ticket) raises the flags of the running glances
// with that ticket (all of them for ticket < 0). The kernels poll the flag between ≈64 KiB blocks of
// keys, so a glance rejects with ABORTED within a fraction of a millisecond per thread.
//
// Key precision: a bank holds its keys as float32 (the default: the CPU glance is then exact to
// float32 rounding, the reference) or as f16 (half the memory; common/half.h says why f16). The
// CPU max-sim converts f16 keys as it packs them; the device copy is f16 either way.
//
// The device copy (DeviceCache) follows the bank incrementally: bank/device_layout.h places each
// skill's rows once, so a glance after a change uploads only the skills added since the last
// device glance (see there for removals and compaction). Device glances are serialised by the
// cache's mutex, which also guards the device's workspace (reused across glances).
//
// Disposal (NativeBank.dispose): Abort(-1), then the Bank is destroyed, dropping its references to
// the snapshot, the registry and the device copy. A running glance holds its own references
// (GlanceJob), so what it reads is freed only when it ends: never a use-after-free.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "bank/device_layout.h"
#include "kernels/device.h"
#include "kernels/i8_glance.h"
#include "kernels/kernels_core.h"

namespace gavel::bank {

struct KeyBlock {
  std::vector<float> data;     // rows × dim, in a float32 bank
  std::vector<uint16_t> half;  // rows × dim f16 bit patterns, in an f16 bank
  int64_t rows = 0;
  // The keys in int8 for the CPU glance's prefilter (kernels/i8_glance.h, GAVEL_GLANCE_EXACT8): made
  // by the first glance that reads them (I8Of), then as immutable as the keys.
  mutable std::once_flag i8Once;
  mutable kernels::I8Skill i8;
};

// Block b's int8 keys, quantised on first use (thread-safe).
const kernels::I8Skill& I8Of(const KeyBlock& b, int64_t dim);

struct Entry {
  int32_t handle;
  std::shared_ptr<const KeyBlock> keys;
};

struct Snapshot {
  std::vector<Entry> entries;  // sorted by handle
  int64_t rows = 0;
  int64_t keyBytes = 0;
  // Fresh (NewGeneration) for each snapshot made and at each mutation (Bank::Writable), never reused:
  // two snapshots with equal generations hold the same entries (DeviceLayout's fast path).
  uint64_t generation = NewGeneration();
};

struct RunningGlance {
  std::atomic<bool> stop{false};
  int64_t ticket = 0;
};

class GlanceRegistry {
 public:
  void Add(const std::shared_ptr<RunningGlance>& g);
  void Remove(const RunningGlance* g);
  // Raises the flags of the running glances with this ticket (ticket < 0: all). Returns how many.
  int Abort(int64_t ticket);

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<RunningGlance>> running_;
};

// Where a whole-bank glance computes its max-sim: the GAVEL_GLANCE_DEVICE setting (common/settings.h),
// "cpu" | "cuda" | "auto" (default auto: CUDA when this addon was built with it and a device answers;
// the device is asked once).
bool GlanceOnDevice();

// The columns of a whole-bank device glance: each skill's first device row and row count, in entry
// order, kept for the layout epoch they were built for (0: none) so that glances over an unchanged
// bank neither rebuild them (a hash lookup per skill) nor upload them again (GlanceArgs::columnsKey).
struct ColumnCache {
  uint64_t epoch = 0;
  std::vector<int64_t> row, rows;
};

// Brings `cache` to the columns of every entry of `s` under `layout`, which must have just synced
// `s` (so its epoch names this placement of these entries). True when the cached ones held already.
bool WholeBankColumns(const Snapshot& s, const DeviceLayout& layout, ColumnCache& cache);

// The bank's keys on the device, brought up to date by each device glance (under `mu`) with the
// skills added since the last one; `layout` says where each skill's rows are, `cols` caches the
// whole-bank columns.
struct DeviceCache {
  std::mutex mu;
  DeviceLayout layout;
  ColumnCache cols;
  std::unique_ptr<kernels::device::DeviceBank> dev;
};

// Brings dc's device copy (made on first use) to `snap`: the skills added since the last sync are
// uploaded. The caller holds dc.mu. On failure the copy is marked in doubt (the next sync uploads it
// whole) and the Failure propagates. Device glances and the live accumulator (live/) both call it.
void SyncDeviceCopy(DeviceCache& dc, const Snapshot& snap, int64_t dim);

// A glance's columns: each one's keys (one of base/half, by the bank's key type), the prefix sums
// of their rows, their handles. Immutable once made: a whole-bank glance shares the one made for
// its snapshot's generation (Bank::whole_), so preparing it costs nothing per call at 100K skills.
struct GlanceColumns {
  std::vector<const float*> base;     // float32 bank
  std::vector<const uint16_t*> half;  // f16 bank
  std::vector<int64_t> offsets;
  std::vector<int32_t> handles;
  std::vector<const KeyBlock*> blocks;  // the columns' blocks (for their int8 keys)
  uint64_t generation = 0;  // the snapshot's, for a whole-bank set (0: a restricted one)
};

// Everything one glance reads, prepared on the JS thread and owned by its worker.
struct GlanceJob {
  std::shared_ptr<const Snapshot> snap;  // keeps every block read below alive
  bool onDevice = false;
  bool restricted = false;  // over a handle subset (else every skill, in entry order)
  std::shared_ptr<DeviceCache> device;
  std::vector<float> queries, weights;
  std::shared_ptr<const GlanceColumns> cols;  // read-only: keys of `snap`
  int64_t nq = 0, dim = 0, k = 0;
  // m and argmax in the result: every column (-1), or the `detail` best columns by g.
  int64_t detail = -1;
  kernels::Isa isa = kernels::Isa::Generic;
  std::shared_ptr<RunningGlance> run;
  std::shared_ptr<GlanceRegistry> registry;
};

struct GlanceOut {
  kernels::GlanceResult r;
  std::vector<int32_t> handles;
  std::vector<int64_t> columns;  // with detail ≥ 0: the columns r.m and r.argmax hold
  bool onDevice = false;
  double maxSimMs = 0, topKMs = 0, copyMs = 0;  // device time (device glances only)
};

// What a device sync would do now, computed on a layout of the probe's own (never the device's):
// the test hook behind NativeBank._deviceLayoutProbe, so the bookkeeping is tested without a GPU.
struct LayoutProbe {
  LayoutPlan plan;
  std::vector<int64_t> rows;  // first device row of each skill, in handles order (the column cache's)
  int64_t live = 0;
  bool columnsReused = false;  // the probe's column cache held these columns already
};

// The glance's work, on a worker thread: CPU kernels or the device copy, then the vote. Unregisters
// the job's abort flag and drops its snapshot before returning (or throwing).
GlanceOut RunGlance(GlanceJob& job);

class Bank {
 public:
  // halfKeys: hold keys as f16 (see above) instead of float32.
  explicit Bank(int64_t dim, bool halfKeys = false) : dim_(dim), half_(halfKeys) {}

  int64_t dim() const { return dim_; }
  bool halfKeys() const { return half_; }
  int64_t size() const { return static_cast<int64_t>(snap_->entries.size()); }
  int64_t rows() const { return snap_->rows; }
  // Native memory held by the current snapshot: keys plus bookkeeping, in bytes.
  int64_t bytes() const;

  // One skill's rows × dim keys (finite; the caller checked), moved in (an f16 bank rounds them to
  // nearest even and frees the floats). Returns its handle. Throws Failure(INVALID_ARGUMENT) once
  // 2^31 - 1 handles were issued, or in an f16 bank for a key beyond f16's range (|x| ≥ 65520).
  int32_t Add(std::vector<float> keys, int64_t rows);
  // False when no skill has this handle.
  bool Remove(int64_t handle);
  void Clear();
  std::vector<int32_t> Handles() const;
  // The current snapshot (immutable while referenced: the next mutation copies it). The glance
  // index (native/src/index) follows the bank through it.
  std::shared_ptr<const Snapshot> Current() const { return snap_; }
  // The device copy of the keys (shared with the live accumulator, native/src/live).
  std::shared_ptr<DeviceCache> Device() const { return device_; }
  // The registry the glances' abort flags are kept in.
  std::shared_ptr<GlanceRegistry> Registry() const { return registry_; }

  // A glance over every skill or (restricted) over the nOnly handles of `only` (distinct, held: else
  // Failure(INVALID_ARGUMENT); nOnly may be 0), registered for Abort. queries and weights are checked
  // already. detail < 0: m and argmax of every column; else of the `detail` best columns by g.
  std::shared_ptr<GlanceJob> PrepareGlance(std::vector<float> queries, std::vector<float> weights, int64_t nq, int64_t k,
                                           bool restricted, const int32_t* only, int64_t nOnly, int64_t ticket,
                                           int64_t detail = -1);
  LayoutProbe ProbeLayout();
  int Abort(int64_t ticket) { return registry_->Abort(ticket); }

 private:
  Snapshot& Writable();
  static int64_t Find(const Snapshot& s, int64_t handle);

  int64_t dim_;
  bool half_;
  std::shared_ptr<Snapshot> snap_ = std::make_shared<Snapshot>();
  int64_t nextHandle_ = 1;
  DeviceLayout probe_;  // ProbeLayout's own layout
  ColumnCache probeCols_;  // and column cache
  std::shared_ptr<GlanceRegistry> registry_ = std::make_shared<GlanceRegistry>();
  std::shared_ptr<DeviceCache> device_ = std::make_shared<DeviceCache>();
  std::shared_ptr<const GlanceColumns> whole_;  // the whole bank's columns at whole_->generation
};

}  // namespace gavel::bank
