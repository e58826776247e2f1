// The in-memory bank's logic (see bank_core.h for the copy-on-write design).
#include "bank/bank_core.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <unordered_set>

#include "common/failure.h"

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
  static const bool on = [] {
    const char* v = std::getenv("GAVEL_GLANCE_DEVICE");
    const std::string mode = v == nullptr ? "auto" : v;
    if (mode == "cpu") return false;
    if (mode == "cuda") return true;  // Upload then says why, if it cannot
    return kernels::device::Available();
  }();
  return on;
}

namespace {

int64_t BlockBytes(const KeyBlock& b) {
  return static_cast<int64_t>(b.data.capacity() * sizeof(float) + sizeof(KeyBlock) + 32);  // + control block
}

// The max-sim of a device glance into out.r.m / out.r.argmax: the device always holds the whole
// bank (one copy serves every glance until it changes); a restricted glance gathers its columns.
void DeviceMaxSim(GlanceJob& job, const kernels::SkillKeys& keys, GlanceOut& out) {
  const bool restricted = job.gather;
  const kernels::SkillKeys whole =
      restricted ? kernels::SkillKeys{job.allBase.data(), job.allOffsets.data(), static_cast<int64_t>(job.allBase.size())}
                 : keys;
  std::shared_ptr<const kernels::device::DeviceKeys> dk;
  {
    std::lock_guard<std::mutex> lock(job.device->mu);
    if (job.device->version != job.version || !job.device->keys) {
      job.device->keys.reset();  // free the old copy first: device memory is the limit
      job.device->keys = kernels::device::Upload(whole, job.dim);
      job.device->version = job.version;
    }
    dk = job.device->keys;
  }
  if (!restricted) {
    const size_t cells = static_cast<size_t>(job.nq * keys.nSkills);
    out.r.m.resize(cells);
    out.r.argmax.resize(cells);
    dk->MaxSim(job.queries.data(), job.nq, out.r.m.data(), out.r.argmax.data(), &job.run->stop);
    return;
  }
  const int64_t nAll = whole.nSkills;
  std::vector<float> m(static_cast<size_t>(job.nq * nAll));
  std::vector<int32_t> argmax(m.size());
  dk->MaxSim(job.queries.data(), job.nq, m.data(), argmax.data(), &job.run->stop);
  kernels::GatherSkills(m.data(), argmax.data(), job.nq, nAll, job.pick.data(), keys.nSkills, out.r);
}

}  // namespace

GlanceOut RunGlance(GlanceJob& job) {
  struct Release {
    GlanceJob& j;
    ~Release() {
      j.registry->Remove(j.run.get());
      j.snap.reset();  // let add/remove mutate in place again as soon as possible
    }
  } release{job};
  GlanceOut out;
  const kernels::SkillKeys keys{job.base.data(), job.offsets.data(), static_cast<int64_t>(job.handles.size())};
  if (job.onDevice) {
    DeviceMaxSim(job, keys, out);
    kernels::Vote(out.r, job.nq, keys.offsets, keys.nSkills, job.weights.data(), job.k, 0, &job.run->stop);
  } else {
    out.r = kernels::Glance(job.queries.data(), job.nq, keys, job.dim, job.weights.data(), job.k, job.isa, 0,
                            &job.run->stop);
  }
  out.handles = std::move(job.handles);
  return out;
}

int64_t Bank::bytes() const {
  return snap_->keyBytes + static_cast<int64_t>(snap_->entries.capacity() * sizeof(Entry) + sizeof(Snapshot));
}

Snapshot& Bank::Writable() {
  ++version_;
  if (snap_.use_count() != 1) snap_ = std::make_shared<Snapshot>(*snap_);
  else std::atomic_thread_fence(std::memory_order_acquire);
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
  block->data = std::move(keys);
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
                                               int64_t ticket) {
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
  } else {
    pick.resize(s.entries.size());
    for (size_t i = 0; i < pick.size(); ++i) pick[i] = static_cast<int64_t>(i);
  }
  const int64_t nSkills = static_cast<int64_t>(pick.size());
  kernels::CheckResultSize(nq, nSkills);
  job->base.resize(pick.size());
  job->offsets.assign(pick.size() + 1, 0);
  job->handles.resize(pick.size());
  for (int64_t i = 0; i < nSkills; ++i) {
    const Entry& e = s.entries[pick[i]];
    job->base[i] = e.keys->data.data();
    job->offsets[i + 1] = job->offsets[i] + e.keys->rows;
    job->handles[i] = e.handle;
  }
  job->queries = std::move(queries);
  job->weights = std::move(weights);
  job->nq = nq;
  job->dim = dim_;
  job->k = k;
  job->isa = kernels::IsaFromEnv();
  job->run = std::make_shared<RunningGlance>();
  job->run->ticket = ticket;
  job->registry = registry_;
  job->version = version_;
  job->onDevice = (!restricted || nSkills > 0) && GlanceOnDevice();
  job->device = device_;
  if (job->onDevice && restricted) {
    job->gather = true;
    const int64_t nAll = static_cast<int64_t>(s.entries.size());
    kernels::CheckResultSize(nq, nAll);
    job->allBase.resize(s.entries.size());
    job->allOffsets.assign(s.entries.size() + 1, 0);
    for (int64_t i = 0; i < nAll; ++i) {
      job->allBase[i] = s.entries[i].keys->data.data();
      job->allOffsets[i + 1] = job->allOffsets[i] + s.entries[i].keys->rows;
    }
    job->pick = std::move(pick);
  }
  registry_->Add(job->run);
  return job;
}

}  // namespace gavel::bank
