// The in-memory bank's logic (see bank_core.h for the copy-on-write design).
#include "common/cores.h"
#include "bank/bank_core.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <unordered_set>

#include "common/failure.h"
#include "common/half.h"
#include "common/parallel.h"
#include "common/settings.h"

namespace gavel::bank {

void GlanceRegistry::Add(const std::shared_ptr<RunningGlance>& g) {
  std::lock_guard<std::mutex> lock(mu_);
  running_.push_back(g);
}

void GlanceRegistry::Remove(const RunningGlance* g) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < running_.size(); ++i)
    if (running_[i].get() == g) {
      running_[i] = running_.back();
      running_.pop_back();
      return;
    }
}

int GlanceRegistry::Abort(int64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (auto& g : running_)
    if (ticket < 0 || g->ticket == ticket) {
      g->stop.store(true, std::memory_order_relaxed);
      ++n;
    }
  return n;
}

bool GlanceOnDevice() {
  switch (settings::GlanceDevice(settings::Current().glanceDevice.load(std::memory_order_relaxed))) {
    case settings::GlanceDevice::kCpu: return false;
    case settings::GlanceDevice::kCuda: return true;  // Upload then says why, if it cannot
    default: break;
  }
  static const bool available = kernels::device::Available();  // asked of the driver once
  return available;
}

const kernels::I8Skill& I8Of(const KeyBlock& b, int64_t dim) {
  std::call_once(b.i8Once, [&] {
    b.i8 = kernels::QuantizeSkill(b.half.empty() ? b.data.data() : nullptr, b.half.empty() ? nullptr : b.half.data(),
                                  b.rows, dim);
  });
  return b.i8;
}

namespace {

// GAVEL_GLANCE_EXACT8=on: a CPU glance that does not ask for the full m goes through the int8
// prefilter. Off by default: the first such glance of a bank quantises every block (about as long as
// one exact glance of a long task), which a one-shot process never earns back.
bool Exact8(kernels::Isa isa) {
  (void)isa;
  return settings::GlanceExact8(settings::Current().glanceExact8.load(std::memory_order_relaxed)) ==
         settings::GlanceExact8::kOn;
}

int64_t BlockBytes(const KeyBlock& b) {
  return static_cast<int64_t>(b.data.capacity() * sizeof(float) + b.half.capacity() * sizeof(uint16_t) +
                              sizeof(KeyBlock) + 32);  // + control block
}

// A glance on the device: bring the device copy up to the job's snapshot (only what changed since
// the last device glance), then the glance over the job's columns, each named by its rows there.
void DeviceGlance(GlanceJob& job, GlanceOut& out) {
  DeviceCache& dc = *job.device;
  std::lock_guard<std::mutex> lock(dc.mu);
  SyncDeviceCopy(dc, *job.snap, job.dim);
  const int64_t n = static_cast<int64_t>(job.cols->handles.size());
  const int64_t *rowP = nullptr, *rowsP = nullptr;
  uint64_t columnsKey = 0;
  std::vector<int64_t> row, rows;  // a restricted glance's columns
  if (!job.restricted) {  // every skill in entry order: the cached columns of this layout epoch
    WholeBankColumns(*job.snap, dc.layout, dc.cols);
    rowP = dc.cols.row.data();
    rowsP = dc.cols.rows.data();
    columnsKey = dc.cols.epoch;
  } else {
    row.resize(static_cast<size_t>(n));
    rows.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      row[i] = dc.layout.Row(job.cols->handles[i]);
      rows[i] = job.cols->offsets[i + 1] - job.cols->offsets[i];
    }
    rowP = row.data();
    rowsP = rows.data();
  }
  kernels::device::GlanceArgs a{job.queries.data(), job.nq, job.weights.data(), job.k, rowP, rowsP, n, job.detail, columnsKey};
  kernels::device::GlanceOut d;
  dc.dev->Glance(a, d, &job.run->stop);
  out.r = std::move(d.r);
  out.columns = std::move(d.columns);
  out.onDevice = true;
  out.maxSimMs = d.maxSimMs;
  out.topKMs = d.topKMs;
  out.copyMs = d.copyMs;
}

}  // namespace

void SyncDeviceCopy(DeviceCache& dc, const Snapshot& snap, int64_t dim) {
  if (!dc.dev) dc.dev = kernels::device::CreateBank(dim);
  try {
    const LayoutPlan plan = dc.layout.Sync(snap);
    std::vector<kernels::device::Placement> ups;
    ups.reserve(plan.uploads.size());
    for (const LayoutPlan::Upload& u : plan.uploads) {
      const KeyBlock& b = *snap.entries[static_cast<size_t>(u.entry)].keys;
      ups.push_back({u.row, b.rows, b.half.empty() ? b.data.data() : nullptr, b.half.empty() ? nullptr : b.half.data()});
    }
    dc.dev->Update(plan.end, ups);
  } catch (...) {
    dc.layout = DeviceLayout();  // the device copy is in doubt: the next device sync uploads it whole
    dc.cols = ColumnCache();
    throw;
  }
}

bool WholeBankColumns(const Snapshot& s, const DeviceLayout& layout, ColumnCache& cache) {
  if (cache.epoch != 0 && cache.epoch == layout.Epoch()) return true;
  const size_t n = s.entries.size();
  cache.epoch = 0;  // until rebuilt
  cache.row.resize(n);
  cache.rows.resize(n);
  for (size_t i = 0; i < n; ++i) {
    cache.row[i] = layout.Row(s.entries[i].handle);
    cache.rows[i] = s.entries[i].keys->rows;
  }
  cache.epoch = layout.Epoch();
  return false;
}

GlanceOut RunGlance(GlanceJob& job) {
  struct Release {
    GlanceJob& j;
    ~Release() {
      j.registry->Remove(j.run.get());
      j.snap.reset();  // let add/remove mutate in place again as soon as possible
    }
  } release{job};
  GlanceOut out;
  const GlanceColumns& cols = *job.cols;
  const int64_t n = static_cast<int64_t>(cols.handles.size());
  const kernels::SkillKeys keys{cols.base.data(), cols.offsets.data(), n, cols.half.empty() ? nullptr : cols.half.data()};
  if (job.onDevice) {
    DeviceGlance(job, out);
  } else if (job.detail >= 0 && Exact8(job.isa)) {
    // The same glance through the int8 prefilter (bit for bit; kernels/i8_glance.h): g, and m and
    // argmax of the `detail` best columns.
    std::vector<const kernels::I8Skill*> i8(static_cast<size_t>(n));
    // As many threads as skills at most; each thread's range is cut by the same count.
    const unsigned nt = static_cast<unsigned>(std::min<int64_t>(CoresAvailable(), std::max<int64_t>(n, 1)));
    Parallel(nt, [&](unsigned t) {
      for (int64_t s = n * t / nt; s < n * (t + 1) / nt; ++s) i8[s] = &I8Of(*cols.blocks[s], job.dim);
    });
    out.r = kernels::GlanceI8(job.queries.data(), job.nq, keys, i8.data(), job.dim, job.weights.data(), job.k,
                              job.detail, job.isa, 0, out.columns, nullptr, &job.run->stop);
  } else {
    out.r = kernels::Glance(job.queries.data(), job.nq, keys, job.dim, job.weights.data(), job.k, job.isa, 0,
                            &job.run->stop);
    if (job.detail == 0) {  // no m or argmax asked
      out.r.m.clear();
      out.r.argmax.clear();
    } else if (job.detail > 0) {  // the device's detail contract, on the CPU: the best columns' m and argmax
      out.columns = kernels::TopColumns(out.r.g, job.detail);
      kernels::GlanceResult all = std::move(out.r);
      out.r.g = std::move(all.g);
      kernels::GatherSkills(all.m.data(), all.argmax.data(), job.nq, n, out.columns.data(),
                            static_cast<int64_t>(out.columns.size()), out.r);
    }
  }
  out.handles = cols.handles;
  return out;
}

int64_t Bank::bytes() const {
  return snap_->keyBytes + static_cast<int64_t>(snap_->entries.capacity() * sizeof(Entry) + sizeof(Snapshot));
}

Snapshot& Bank::Writable() {
  if (snap_.use_count() != 1) snap_ = std::make_shared<Snapshot>(*snap_);
  else std::atomic_thread_fence(std::memory_order_acquire);
  snap_->generation = NewGeneration();  // the caller mutates it next: a layout synced to it must sync again
  return *snap_;
}

int64_t Bank::Find(const Snapshot& s, int64_t handle) {
  auto it = std::lower_bound(s.entries.begin(), s.entries.end(), handle,
                             [](const Entry& e, int64_t h) { return e.handle < h; });
  return it != s.entries.end() && it->handle == handle ? it - s.entries.begin() : -1;
}

int32_t Bank::Add(std::vector<float> keys, int64_t rows) {
  if (nextHandle_ > std::numeric_limits<int32_t>::max())
    throw Failure(Code::INVALID_ARGUMENT, "this bank has issued 2^31 - 1 handles; build a new one");
  auto block = std::make_shared<KeyBlock>();
  if (half_) {
    block->half.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!FitsHalf(keys[i]))
        throw Failure(Code::INVALID_ARGUMENT, "keys[" + std::to_string(i) + "] (" + std::to_string(keys[i]) +
                                                  ") is beyond the range of this bank's f16 keys");
      block->half[i] = FloatToHalf(keys[i]);
    }
  } else {
    block->data = std::move(keys);
  }
  block->rows = rows;
  Snapshot& s = Writable();
  const int32_t handle = static_cast<int32_t>(nextHandle_++);
  s.entries.push_back(Entry{handle, block});
  s.rows += block->rows;
  s.keyBytes += BlockBytes(*block);
  return handle;
}

bool Bank::Remove(int64_t handle) {
  const int64_t at = Find(*snap_, handle);
  if (at < 0) return false;
  Snapshot& s = Writable();
  s.rows -= s.entries[at].keys->rows;
  s.keyBytes -= BlockBytes(*s.entries[at].keys);
  s.entries.erase(s.entries.begin() + at);
  return true;
}

void Bank::Clear() { snap_ = std::make_shared<Snapshot>(); }  // a running glance keeps its own snapshot

std::vector<int32_t> Bank::Handles() const {
  std::vector<int32_t> h(snap_->entries.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = snap_->entries[i].handle;
  return h;
}

std::shared_ptr<GlanceJob> Bank::PrepareGlance(std::vector<float> queries, std::vector<float> weights, int64_t nq,
                                               int64_t k, bool restricted, const int32_t* only, int64_t nOnly,
                                               int64_t ticket, int64_t detail) {
  auto job = std::make_shared<GlanceJob>();
  job->snap = snap_;
  const Snapshot& s = *job->snap;
  std::vector<int64_t> pick;  // entry positions, in result order
  if (restricted) {
    pick.resize(static_cast<size_t>(nOnly));
    std::unordered_set<int32_t> seen;
    seen.reserve(static_cast<size_t>(nOnly));
    for (int64_t i = 0; i < nOnly; ++i) {
      const int32_t h = only[i];
      const int64_t at = Find(s, h);
      const std::string which = "handles[" + std::to_string(i) + "] (" + std::to_string(h) + ")";
      if (at < 0) throw Failure(Code::INVALID_ARGUMENT, which + " is not in this bank");
      if (!seen.insert(h).second) throw Failure(Code::INVALID_ARGUMENT, which + " is repeated");
      pick[i] = at;
    }
  }
  const int64_t nSkills = restricted ? nOnly : static_cast<int64_t>(s.entries.size());
  kernels::CheckResultSize(nq, nSkills);
  if (!restricted && whole_ && whole_->generation == s.generation) {
    job->cols = whole_;  // the bank has not changed since the last whole-bank glance
  } else {
    auto cols = std::make_shared<GlanceColumns>();
    if (half_) cols->half.resize(static_cast<size_t>(nSkills));
    else cols->base.resize(static_cast<size_t>(nSkills));
    cols->offsets.assign(static_cast<size_t>(nSkills) + 1, 0);
    cols->handles.resize(static_cast<size_t>(nSkills));
    cols->blocks.resize(static_cast<size_t>(nSkills));
    for (int64_t i = 0; i < nSkills; ++i) {
      const Entry& e = s.entries[static_cast<size_t>(restricted ? pick[static_cast<size_t>(i)] : i)];
      if (half_) cols->half[i] = e.keys->half.data();
      else cols->base[i] = e.keys->data.data();
      cols->offsets[i + 1] = cols->offsets[i] + e.keys->rows;
      cols->handles[i] = e.handle;
      cols->blocks[i] = e.keys.get();
    }
    if (!restricted) {
      cols->generation = s.generation;
      whole_ = cols;
    }
    job->cols = std::move(cols);
  }
  job->queries = std::move(queries);
  job->weights = std::move(weights);
  job->nq = nq;
  job->dim = dim_;
  job->k = k;
  job->isa = kernels::CurrentIsa();
  job->run = std::make_shared<RunningGlance>();
  job->run->ticket = ticket;
  job->registry = registry_;
  job->detail = detail;
  job->restricted = restricted;
  job->onDevice = (!restricted || nSkills > 0) && GlanceOnDevice();
  job->device = device_;
  registry_->Add(job->run);
  return job;
}

LayoutProbe Bank::ProbeLayout() {
  LayoutProbe p;
  p.plan = probe_.Sync(*snap_);
  p.columnsReused = WholeBankColumns(*snap_, probe_, probeCols_);  // as a whole-bank device glance does
  p.rows = probeCols_.row;
  p.live = probe_.LiveRows();
  return p;
}

}  // namespace gavel::bank
