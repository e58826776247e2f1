// NativeLive: a live context's accumulators (live_core.h) held natively over one NativeBank, so that
// an append of b rows (projection by W_q, normalisation, max-sim against the bank, top-k vote,
// decayed fold) is one call that returns nothing; the scores are read on demand.
//
// Where an append runs, decided once per object (the `device` argument, and for "auto" the glance's
// own policy, bank_core.h GlanceOnDevice):
//   - CUDA (live_device.h): A on the device, the append only queued on the bank's stream; the JS
//     thread never waits for the device except in scores() (and when a bank change moves columns).
//   - CPU: the bank's CPU glance of each batch (its snapshot, its kernels), folded into float64 on
//     the JS thread. Small work (rows × dim × (nEmbd + key rows) ≤ kSyncWork, ~1 ms on one core)
//     runs right there and append returns undefined; larger work runs on a worker and append returns
//     a Promise (the JS thread stays free), as the bank's glance does.
// Appends apply in call order: an append while one is still running on a worker is refused
// (INVALID_ARGUMENT), so the caller awaits each (src/route/live.ts queues them).
// Every argument is validated here before any memory is touched.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "bank/bank.h"
#include "bank/bank_core.h"
#include "common/napi_args.h"
#include "common/worker.h"
#include "kernels/kernels_core.h"
#include "live/live.h"
#include "live/live_core.h"
#include "live/live_device.h"

namespace gavel {
namespace {

constexpr napi_type_tag kLiveTag = {0x67617665'6c5f6c76ull, 0x3b1f55c0'd2a94e17ull};
// Multiply-adds below which a CPU append runs on the JS thread.
constexpr double kSyncWork = double(1 << 22);
// Floats of m (rows × columns) one device batch may hold: 256 MiB.
constexpr int64_t kDeviceM = int64_t(1) << 26;
// |W_q|max · |h|max · nEmbd below this: no projected value can overflow float32 on the device
// (the host projection, which checks, takes the rare rows beyond).
constexpr double kProjectBound = 1e37;

// The position of `handle` among the snapshot's entries (sorted by handle), or -1.
int64_t FindEntry(const bank::Snapshot& s, int32_t handle) {
  auto it = std::lower_bound(s.entries.begin(), s.entries.end(), handle,
                             [](const bank::Entry& e, int32_t h) { return e.handle < h; });
  return it != s.entries.end() && it->handle == handle ? it - s.entries.begin() : -1;
}

// One CPU batch's glance, as the fold reads it.
struct CpuBatch {
  std::vector<float> g;
  double wb = 0;
  int64_t b = 0;
};
struct CpuOut {
  std::vector<CpuBatch> batches;
  std::vector<int32_t> handles;
};

class NativeLive : public Napi::ObjectWrap<NativeLive> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeLive",
                       {InstanceMethod("append", &NativeLive::Append), InstanceMethod("scores", &NativeLive::Scores),
                        InstanceMethod("reset", &NativeLive::Reset), InstanceMethod("abort", &NativeLive::Abort),
                        InstanceMethod("dispose", &NativeLive::Dispose),
                        InstanceAccessor("tokens", &NativeLive::Tokens, nullptr),
                        InstanceAccessor("device", &NativeLive::Device, nullptr)});
  }

  // new NativeLive(bank: NativeBank, wq: Float32Array, nEmbd: number, dim: number, device?: "auto" | "cpu")
  explicit NativeLive(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeLive>(info) {
    Guard(info, "NativeLive", [&]() -> Napi::Value {
      info.This().As<Napi::Object>().TypeTag(&kLiveTag);
      CheckArity(info, 4);
      bank::Bank& b = UnwrapBank(info[0], "bank");
      Napi::Float32Array wq = Float32Arg(info[1], "wq");
      nEmbd_ = IntArg(info[2], "nEmbd", 1);
      dim_ = IntArg(info[3], "dim", 1);
      if (dim_ != b.dim()) Bad("dim (" + std::to_string(dim_) + ") must equal the bank's (" + std::to_string(b.dim()) + ")");
      if (int64_t(wq.ElementLength()) != nEmbd_ * dim_)
        Bad("wq must hold dim × nEmbd (" + std::to_string(dim_) + " × " + std::to_string(nEmbd_) + ") floats, got " +
            std::to_string(wq.ElementLength()));
      if (int64_t bad = FirstNonFinite(wq.Data(), nEmbd_ * dim_); bad >= 0) Bad("wq[" + std::to_string(bad) + "] is not finite");
      std::string device = "auto";
      if (info.Length() > 4 && !info[4].IsUndefined()) device = StringArg(info[4], "device");
      if (device != "auto" && device != "cpu") Bad("device must be \"auto\" or \"cpu\", got \"" + device + "\"");
      wq_ = std::make_shared<const std::vector<float>>(CopyTyped<float>(wq));
      for (float x : *wq_) maxAbsWq_ = std::max(maxAbsWq_, double(std::fabs(x)));
      onDevice_ = device == "auto" && bank::GlanceOnDevice();
      if (onDevice_) acc_.DropHostA();
      bank_ = Napi::Persistent(info[0].As<Napi::Object>());
      return info.Env().Undefined();
    });
  }

 private:
  void Use(const Napi::CallbackInfo& info) const {
    CheckTag(info, &kLiveTag, "NativeLive");
    if (disposed_) Disposed("live context");
    if (!wq_) Bad("this live context was not constructed with valid arguments");
  }

  // append(states: Float32Array, handles: Int32Array | null, k: number): undefined | Promise<undefined>
  // states: rows × nEmbd (finite); handles: the columns (distinct, held by the bank), null for every
  // skill of the bank in its order; k: the vote's top-k (≥ 1).
  Napi::Value Append(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeLive.append", [&]() -> Napi::Value {
      Use(info);
      CheckArity(info, 3);
      Napi::Float32Array states = Float32Arg(info[0], "states");
      const int64_t len = int64_t(states.ElementLength());
      const int64_t n = RowsOf(len, "states", nEmbd_, "nEmbd");
      if (int64_t bad = FirstNonFinite(states.Data(), len); bad >= 0) Bad("states[" + std::to_string(bad) + "] is not finite");
      const bool restricted = !info[1].IsUndefined() && !info[1].IsNull();
      Napi::Int32Array only;
      if (restricted) only = Int32Arg(info[1], "handles");
      const int64_t k = IntArg(info[2], "k", 1);
      if (busy_) Bad("an append is still running on this live context (await it before the next)");
      bank::Bank& b = UnwrapBank(bank_.Value(), "bank");
      const int64_t nOnly = restricted ? int64_t(only.ElementLength()) : 0;
      if (restricted ? nOnly == 0 : b.size() == 0) Bad("no skill to score (the bank is empty or handles is)");
      if (n == 0) return info.Env().Undefined();
      if (onDevice_) {
        AppendDevice(b, states.Data(), n, restricted ? only.Data() : nullptr, nOnly, restricted, k);
        return info.Env().Undefined();
      }
      return AppendCpu(info, b, states, n, restricted ? only.Data() : nullptr, nOnly, restricted, k);
    });
  }

  Napi::Value AppendCpu(const Napi::CallbackInfo& info, bank::Bank& b, const Napi::Float32Array& states, int64_t n,
                        const int32_t* only, int64_t nOnly, bool restricted, int64_t k) {
    // One glance job per batch, prepared here (the bank's snapshot now; restricted handles checked).
    auto jobs = std::make_shared<std::vector<std::shared_ptr<bank::GlanceJob>>>();
    auto weights = std::make_shared<std::vector<double>>();
    try {
      for (int64_t start = 0; start < n; start += live::kBatchRows) {
        const int64_t bs = std::min(live::kBatchRows, n - start);
        std::vector<float> w = live::DecayWeights(bs);
        weights->push_back(live::WeightSum(w));
        auto job = b.PrepareGlance({}, std::move(w), bs, k, restricted, only, nOnly, 0, 0);
        job->onDevice = false;
        jobs->push_back(std::move(job));
      }
    } catch (...) {
      for (auto& j : *jobs) j->registry->Remove(j->run.get());
      throw;
    }
    auto rows = std::make_shared<std::vector<float>>(CopyTyped<float>(states));
    auto wq = wq_;
    const int64_t nEmbd = nEmbd_, dim = dim_;
    const kernels::Isa isa = kernels::CurrentIsa();
    runs_.clear();
    for (auto& j : *jobs) runs_.push_back(j->run);
    auto work = [jobs, weights, rows, wq, nEmbd, dim, isa, n]() {
      CpuOut out;
      size_t next = 0;
      try {
        for (int64_t start = 0; start < n; start += live::kBatchRows, ++next) {
          bank::GlanceJob& job = *(*jobs)[next];
          const int64_t bs = job.nq;
          if (job.run->stop.load(std::memory_order_relaxed)) throw Failure(Code::ABORTED, "live append aborted");
          job.queries = kernels::ProjectNormalize(rows->data() + start * nEmbd, bs, nEmbd, wq->data(), dim, isa, 0);
          bank::GlanceOut g = bank::RunGlance(job);
          out.batches.push_back({std::move(g.r.g), (*weights)[next], bs});
          if (out.handles.empty()) out.handles = std::move(g.handles);
        }
      } catch (...) {
        // the jobs not run (or whose run threw before RunGlance) leave the bank's registry
        for (size_t i = next; i < jobs->size(); ++i) (*jobs)[i]->registry->Remove((*jobs)[i]->run.get());
        throw;
      }
      return out;
    };
    double keyRows = double(b.rows());
    const double cost = double(n) * double(dim_) * (double(nEmbd_) + keyRows);
    if (cost <= kSyncWork) {
      CpuOut out = work();
      runs_.clear();
      Fold(out);
      return info.Env().Undefined();
    }
    busy_ = true;
    return PromiseWorker<CpuOut>::Start(
        info.Env(), work,
        [this](Napi::Env env, CpuOut& out) -> Napi::Value {
          if (!disposed_) Fold(out);
          return env.Undefined();
        },
        info.This().As<Napi::Object>(),
        [this]() {
          busy_ = false;
          runs_.clear();
        });
  }

  void Fold(const CpuOut& out) {
    std::vector<int32_t> from;
    for (const CpuBatch& bt : out.batches) {
      acc_.Remap(out.handles.data(), int64_t(out.handles.size()), from);
      const live::Step st = acc_.Advance(bt.b, bt.wb);
      acc_.Fold(st, bt.g.data(), bt.wb);
    }
  }

  void AppendDevice(bank::Bank& b, const float* states, int64_t n, const int32_t* only, int64_t nOnly, bool restricted,
                    int64_t k) {
    if (!dc_) dc_ = b.Device();
    std::lock_guard<std::mutex> lock(dc_->mu);
    std::shared_ptr<const bank::Snapshot> snap = b.Current();
    bank::SyncDeviceCopy(*dc_, *snap, dim_);
    if (!dev_) dev_ = live::device::CreateDeviceLive(*dc_->dev, wq_->data(), nEmbd_, dim_);
    // The columns: unchanged while the bank (its generation), its device placement (the layout's
    // epoch) and the handle list are.
    const uint64_t epoch = dc_->layout.Epoch();
    bool same = colsSet_ && snap->generation == colGen_ && epoch == colEpoch_ && restricted == colRestricted_;
    if (same && restricted)
      same = int64_t(colOnly_.size()) == nOnly && std::memcmp(colOnly_.data(), only, size_t(nOnly) * sizeof(int32_t)) == 0;
    if (!same) {
      std::vector<int32_t> handles;
      std::vector<int64_t> row, rows;
      if (!restricted) {
        bank::WholeBankColumns(*snap, dc_->layout, dc_->cols);
        row = dc_->cols.row;
        rows = dc_->cols.rows;
        handles.reserve(snap->entries.size());
        for (const bank::Entry& e : snap->entries) handles.push_back(e.handle);
      } else {
        std::unordered_set<int32_t> seen;
        seen.reserve(size_t(nOnly));
        for (int64_t i = 0; i < nOnly; ++i) {
          const int64_t at = FindEntry(*snap, only[i]);
          const std::string which = "handles[" + std::to_string(i) + "] (" + std::to_string(only[i]) + ")";
          if (at < 0) Bad(which + " is not in this bank");
          if (!seen.insert(only[i]).second) Bad(which + " is repeated");
          handles.push_back(only[i]);
          row.push_back(dc_->layout.Row(only[i]));
          rows.push_back(snap->entries[size_t(at)].keys->rows);
        }
      }
      colsSet_ = false;  // until both are on the device
      std::vector<int32_t> from;
      if (acc_.Remap(handles.data(), int64_t(handles.size()), from)) dev_->Remap(from);
      dev_->SetColumns(row, rows);
      colsSet_ = true;
      colGen_ = snap->generation;
      colEpoch_ = epoch;
      colRestricted_ = restricted;
      colOnly_.assign(only, only + (restricted ? nOnly : 0));
      colHandles_ = std::make_shared<const std::vector<int32_t>>(acc_.handles());
    }
    const int64_t nCols = int64_t(acc_.handles().size());
    const int64_t batch = std::clamp<int64_t>(kDeviceM / std::max<int64_t>(nCols, 1), 1, live::kBatchRows);
    for (int64_t start = 0; start < n; start += batch) {
      const int64_t bs = std::min(batch, n - start);
      const float* rows = states + start * nEmbd_;
      double maxAbs = 0;
      for (int64_t i = 0; i < bs * nEmbd_; ++i) maxAbs = std::max(maxAbs, double(std::fabs(rows[i])));
      std::vector<float> projected;  // rows whose projection could overflow: projected (and checked) here
      if (maxAbs * maxAbsWq_ * double(nEmbd_) >= kProjectBound)
        projected = kernels::ProjectNormalize(rows, bs, nEmbd_, wq_->data(), dim_, kernels::CurrentIsa(), 0);
      const double wb = live::WeightSum(live::DecayWeights(bs));
      const live::Step st = acc_.Advance(bs, wb);
      if (projected.empty()) dev_->Append(rows, bs, nEmbd_, st.renorm, st.inv, k);
      else dev_->Append(projected.data(), bs, dim_, st.renorm, st.inv, k);
    }
    // the scores as this append leaves them, copied back without waiting (scores(false) reads them)
    live::device::Snapshot meta;
    meta.seq = ++pubSeq_;
    meta.wsum = acc_.wsum();
    meta.tokens = acc_.tokens();
    meta.handles = colHandles_;
    dev_->Publish(meta);
  }

  // scores(wait = true): { handles: Int32Array, g: Float64Array, tokens: number } — g = A / W per
  // column after `tokens` appended rows. On the device, wait (the default) waits for the queued
  // appends and reads the scores after the last one (tokens = this.tokens); wait false never waits
  // and reads the newest append whose device work has completed (tokens ≤ this.tokens; 0 and zeros
  // over the current columns when none has since the context began or was reset). On the CPU every
  // append that returned (or resolved) is complete: both read the same.
  Napi::Value Scores(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeLive.scores", [&]() -> Napi::Value {
      Use(info);
      bool wait = true;
      if (info.Length() > 0 && !info[0].IsUndefined()) {
        if (!info[0].IsBoolean()) Bad("wait must be a boolean");
        wait = info[0].As<Napi::Boolean>().Value();
      }
      Napi::Env env = info.Env();
      Napi::Object o = Napi::Object::New(env);
      if (onDevice_ && dev_) {
        live::device::Snapshot meta;
        const double* a = dev_->Latest(wait, meta);
        if (a != nullptr && meta.handles && (!wait || meta.tokens == acc_.tokens())) {
          const std::vector<int32_t>& h = *meta.handles;
          Napi::Float64Array g = Napi::Float64Array::New(env, h.size());
          double* gp = g.Data();
          for (size_t s = 0; s < h.size(); ++s) gp[s] = meta.wsum > 0 ? a[s] / meta.wsum : 0.0;
          o.Set("handles", ToTyped(env, h));
          o.Set("g", g);
          o.Set("tokens", Napi::Number::New(env, double(meta.tokens)));
          return o;
        }
        if (!wait) {  // nothing completed yet: zeros over the current columns
          o.Set("handles", ToTyped(env, acc_.handles()));
          o.Set("g", Napi::Float64Array::New(env, acc_.handles().size()));
          o.Set("tokens", Napi::Number::New(env, 0));
          return o;
        }
        // no snapshot of the last append (none since a reset, or an append that failed part-way)
        std::vector<double> a2 = dev_->Read();
        o.Set("handles", ToTyped(env, acc_.handles()));
        o.Set("g", ToTyped(env, acc_.Scores(&a2)));
      } else {
        o.Set("handles", ToTyped(env, acc_.handles()));
        o.Set("g", ToTyped(env, acc_.Scores()));
      }
      o.Set("tokens", Napi::Number::New(env, double(acc_.tokens())));
      return o;
    });
  }

  // reset(): forgets every row (the columns stay; the next append starts a new context).
  Napi::Value Reset(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeLive.reset", [&]() -> Napi::Value {
      Use(info);
      acc_.Reset();
      if (dev_) {
        dev_->Zero();
        dev_->Discard();
      }
      return info.Env().Undefined();
    });
  }

  // abort(): a running CPU append rejects with ABORTED (its batches not yet folded are dropped).
  Napi::Value Abort(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeLive.abort", [&]() -> Napi::Value {
      CheckTag(info, &kLiveTag, "NativeLive");
      int n = 0;
      for (auto& r : runs_) {
        r->stop.store(true, std::memory_order_relaxed);
        ++n;
      }
      return Napi::Number::New(info.Env(), n);
    });
  }

  // dispose(): aborts a running append and frees the accumulators (and their device memory).
  // Idempotent; every other use then throws DISPOSED.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeLive.dispose", [&]() -> Napi::Value {
      CheckTag(info, &kLiveTag, "NativeLive");
      for (auto& r : runs_) r->stop.store(true, std::memory_order_relaxed);
      if (dev_) {
        std::lock_guard<std::mutex> lock(dc_->mu);
        dev_.reset();
      }
      dc_.reset();
      if (!bank_.IsEmpty()) bank_.Reset();
      disposed_ = true;
      return info.Env().Undefined();
    });
  }

  Napi::Value Tokens(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeLive.tokens", [&]() -> Napi::Value {
      Use(info);
      return Napi::Number::New(info.Env(), double(acc_.tokens()));
    });
  }

  // "cuda" when the accumulators live on the device, else "cpu".
  Napi::Value Device(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeLive.device", [&]() -> Napi::Value {
      Use(info);
      return Napi::String::New(info.Env(), onDevice_ ? "cuda" : "cpu");
    });
  }

  Napi::ObjectReference bank_;
  std::shared_ptr<const std::vector<float>> wq_;
  double maxAbsWq_ = 0;
  int64_t nEmbd_ = 0, dim_ = 0;
  bool onDevice_ = false, busy_ = false, disposed_ = false;
  live::Accumulator acc_;
  std::vector<std::shared_ptr<bank::RunningGlance>> runs_;  // the running CPU append's abort flags
  // device path
  std::shared_ptr<bank::DeviceCache> dc_;
  std::unique_ptr<live::device::DeviceLive> dev_;
  bool colsSet_ = false, colRestricted_ = false;
  std::shared_ptr<const std::vector<int32_t>> colHandles_;  // acc_.handles(), shared with the snapshots
  uint64_t pubSeq_ = 0;
  uint64_t colGen_ = 0, colEpoch_ = 0;
  std::vector<int32_t> colOnly_;
};

}  // namespace

void RegisterLive(Napi::Env env, Napi::Object exports) { exports.Set("NativeLive", NativeLive::Define(env)); }

}  // namespace gavel
