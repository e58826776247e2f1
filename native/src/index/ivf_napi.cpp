// NativeGlanceIndex: the glance index (ivf_core.h) as JS sees it, plus ivfKMeans / ivfSampleRows
// (the training steps alone, for tests against a TypeScript reference). Every argument is validated
// here before any memory is touched.
//
// Concurrency: one mutex per index. train, sync and candidates run on worker threads holding it;
// the JS-thread methods (put, reset, exportCodes, the accessors) take it too, so they wait for a
// running job (a candidate search takes milliseconds; an explicit train, seconds). Jobs read the
// bank through a snapshot reference taken at the call (bank_core.h), never the bank itself.
#include <napi.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bank/bank.h"
#include "bank/bank_core.h"
#include "common/index_napi.h"
#include "common/napi_args.h"
#include "common/worker.h"
#include "index/ivf.h"
#include "index/ivf_core.h"

namespace gavel {
namespace {

constexpr napi_type_tag kIndexTag = {0x67617665'6c5f6978ull, 0x1b7c55a0'3e9d42f1ull};

using Held = HeldIndex<ivf::Index>;

struct SyncOut {
  ivf::SyncStats sync;
  ivf::CandidateStats cand;
  std::vector<int32_t> handles;
};

Napi::Object SyncToJs(Napi::Env env, const ivf::SyncStats& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("added", double(s.added));
  o.Set("removed", double(s.removed));
  o.Set("assignedRows", double(s.assignedRows));
  return o;
}

class NativeGlanceIndex : public Napi::ObjectWrap<NativeGlanceIndex> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "NativeGlanceIndex",
        {InstanceMethod("train", &NativeGlanceIndex::Train), InstanceMethod("sync", &NativeGlanceIndex::Sync),
         InstanceMethod("candidates", &NativeGlanceIndex::Candidates), InstanceMethod("reset", &NativeGlanceIndex::Reset),
         InstanceMethod("put", &NativeGlanceIndex::Put), InstanceMethod("exportCodes", &NativeGlanceIndex::Export),
         InstanceMethod("stats", &NativeGlanceIndex::Stats)});
  }

  explicit NativeGlanceIndex(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeGlanceIndex>(info) {
    Guard(info, "NativeGlanceIndex", [&]() -> Napi::Value {
      info.This().As<Napi::Object>().TypeTag(&kIndexTag);
      CheckArity(info, 1);
      held_ = std::make_shared<Held>(IntArg(info[0], "dim", 1));
      return info.Env().Undefined();
    });
  }

 private:
  Held& Use(const Napi::CallbackInfo& info) const {
    CheckTag(info, &kIndexTag, "NativeGlanceIndex");
    if (!held_) Bad("this index was not constructed with a valid dim");
    return *held_;
  }

  static std::shared_ptr<const bank::Snapshot> SnapshotOf(const Napi::Value& v, const Held& h, bool& halfKeys) {
    return BankSnapshotFor(v, h.index.dim(), halfKeys);
  }

  // train(bank, { centroids?, iters?, sample?, seed? }): Promise<{ added, removed, assignedRows }>
  Napi::Value Train(const Napi::CallbackInfo& info) {
    return GuardAsync(info, "NativeGlanceIndex.train", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 1);
      bool half = false;
      auto snap = SnapshotOf(info[0], h, half);
      ivf::TrainOptions o;
      if (info.Length() > 1 && info[1].IsObject()) {
        Napi::Object opt = info[1].As<Napi::Object>();
        o.centroids = static_cast<int64_t>(NumberField(opt, "centroids", 0, 0, 65536, true));
        o.iters = static_cast<int>(NumberField(opt, "iters", 8, 0, 1000, true));
        o.sample = static_cast<int64_t>(NumberField(opt, "sample", 0, 0, 2147483647.0, true));
        o.seed = static_cast<uint32_t>(NumberField(opt, "seed", 1, 0, 4294967295.0, true));
      }
      const kernels::Isa isa = kernels::CurrentIsa();
      auto held = held_;
      return PromiseWorker<ivf::SyncStats>::Start(
          info.Env(),
          [held, snap, half, o, isa]() {
            std::lock_guard<std::mutex> lock(held->mu);
            held->index.Train(*snap, half, o, isa, 0);
            ivf::SyncStats s;
            s.added = held->index.skills();
            s.assignedRows = held->index.rows();
            return s;
          },
          [](Napi::Env env, ivf::SyncStats& s) -> Napi::Value { return SyncToJs(env, s); }, info.This().As<Napi::Object>());
    });
  }

  // sync(bank): Promise<{ added, removed, assignedRows }> — follows the bank's current skills.
  Napi::Value Sync(const Napi::CallbackInfo& info) {
    return GuardAsync(info, "NativeGlanceIndex.sync", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 1);
      bool half = false;
      auto snap = SnapshotOf(info[0], h, half);
      const kernels::Isa isa = kernels::CurrentIsa();
      auto held = held_;
      return PromiseWorker<ivf::SyncStats>::Start(
          info.Env(),
          [held, snap, half, isa]() {
            std::lock_guard<std::mutex> lock(held->mu);
            return held->index.Sync(*snap, half, isa, 0);
          },
          [](Napi::Env env, ivf::SyncStats& s) -> Napi::Value { return SyncToJs(env, s); }, info.This().As<Napi::Object>());
    });
  }

  // candidates(bank, queries, weights, nprobe, maxCandidates): Promise<{ handles: Int32Array,
  //   probed, stage1, survivors, probeMs, stage1Ms, stage2Ms, sync: { added, removed, assignedRows } }>
  // Syncs to the bank's current skills first. Refused (INVALID_ARGUMENT) before the index is trained.
  Napi::Value Candidates(const Napi::CallbackInfo& info) {
    return GuardAsync(info, "NativeGlanceIndex.candidates", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 5);
      bool half = false;
      auto snap = SnapshotOf(info[0], h, half);
      Napi::Float32Array queries = Float32Arg(info[1], "queries");
      Napi::Float32Array weights = Float32Arg(info[2], "weights");
      const int64_t nprobe = IntArg(info[3], "nprobe", 1);
      const int64_t maxCandidates = IntArg(info[4], "maxCandidates", 0);
      const int64_t dim = h.index.dim();
      const int64_t nq = kernels::CheckQueries(queries.Data(), int64_t(queries.ElementLength()), dim);
      kernels::CheckWeights(weights.Data(), int64_t(weights.ElementLength()), nq);
      auto q = std::make_shared<std::vector<float>>(CopyTyped<float>(queries));
      auto w = std::make_shared<std::vector<float>>(CopyTyped<float>(weights));
      const kernels::Isa isa = kernels::CurrentIsa();
      auto held = held_;
      return PromiseWorker<SyncOut>::Start(
          info.Env(),
          [held, snap, half, q, w, nq, nprobe, maxCandidates, isa]() {
            std::lock_guard<std::mutex> lock(held->mu);
            if (held->index.centroids() == 0)
              throw Failure(Code::INVALID_ARGUMENT, "the glance index is not trained");
            SyncOut out;
            out.sync = held->index.Sync(*snap, half, isa, 0);
            out.handles = held->index.Candidates(q->data(), nq, w->data(), nprobe, maxCandidates, isa, 0, &out.cand);
            return out;
          },
          [](Napi::Env env, SyncOut& out) -> Napi::Value {
            Napi::Object o = Napi::Object::New(env);
            o.Set("handles", ToTyped(env, out.handles));
            o.Set("probed", double(out.cand.probed));
            o.Set("stage1", double(out.cand.stage1));
            o.Set("survivors", double(out.cand.survivors));
            o.Set("probeMs", out.cand.probeMs);
            o.Set("stage1Ms", out.cand.stage1Ms);
            o.Set("stage2Ms", out.cand.stage2Ms);
            o.Set("sync", SyncToJs(env, out.sync));
            return o;
          },
          info.This().As<Napi::Object>());
    });
  }

  // reset(centroids: Float32Array, trainedRows: number, trainMeanSim: number): void — new
  // centroids (a multiple of dim values, finite), every skill's codes dropped.
  Napi::Value Reset(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeGlanceIndex.reset", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 3);
      Napi::Float32Array c = Float32Arg(info[0], "centroids");
      const int64_t len = static_cast<int64_t>(c.ElementLength());
      const int64_t nc = RowsOf(len, "centroids", h.index.dim(), "dim");
      if (nc < 1) Bad("centroids hold no row");
      if (int64_t bad = FirstNonFinite(c.Data(), len); bad >= 0) Bad("centroids[" + std::to_string(bad) + "] is not finite");
      const int64_t trained = IntArg(info[1], "trainedRows", 0);
      if (!info[2].IsNumber()) Bad("trainMeanSim must be a number");
      const double sim = info[2].As<Napi::Number>().DoubleValue();
      std::lock_guard<std::mutex> lock(h.mu);
      h.index.Reset(CopyTyped<float>(c), nc, trained, sim);
      return info.Env().Undefined();
    });
  }

  // put(handle: number, codes: Int32Array, rows: number, simSum: number): void
  Napi::Value Put(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeGlanceIndex.put", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 4);
      const int64_t handle = IntArg(info[0], "handle", 1);
      Napi::Int32Array codes = Int32Arg(info[1], "codes");
      const int64_t rows = IntArg(info[2], "rows", 0);
      if (!info[3].IsNumber()) Bad("simSum must be a number");
      std::lock_guard<std::mutex> lock(h.mu);
      if (h.index.centroids() == 0) Bad("the glance index has no centroids (reset or train it first)");
      h.index.Put(static_cast<int32_t>(handle), codes.Data(), int64_t(codes.ElementLength()), rows,
                  info[3].As<Napi::Number>().DoubleValue());
      return info.Env().Undefined();
    });
  }

  // exportCodes(): { centroids, handles, offsets, codes, rows, simSums: Float64Array }
  Napi::Value Export(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeGlanceIndex.exportCodes", [&]() -> Napi::Value {
      Held& h = Use(info);
      std::lock_guard<std::mutex> lock(h.mu);
      ivf::Index::Exported e = h.index.Export();
      Napi::Env env = info.Env();
      Napi::Object o = Napi::Object::New(env);
      o.Set("centroids", ToTyped(env, h.index.centroidData()));
      o.Set("handles", ToTyped(env, e.handles));
      o.Set("offsets", ToTyped(env, e.offsets));
      o.Set("codes", ToTyped(env, e.codes));
      o.Set("rows", ToTyped(env, e.rows));
      o.Set("simSums", ToTyped(env, e.simSums));
      return o;
    });
  }

  // stats(): { dim, centroids, skills, rows, trainedRows, trainMeanSim, meanSim, bytes }
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeGlanceIndex.stats", [&]() -> Napi::Value {
      Held& h = Use(info);
      std::lock_guard<std::mutex> lock(h.mu);
      Napi::Object o = Napi::Object::New(info.Env());
      o.Set("dim", double(h.index.dim()));
      o.Set("centroids", double(h.index.centroids()));
      o.Set("skills", double(h.index.skills()));
      o.Set("rows", double(h.index.rows()));
      o.Set("trainedRows", double(h.index.trainedRows()));
      o.Set("trainMeanSim", h.index.trainMeanSim());
      o.Set("meanSim", h.index.meanSim());
      o.Set("bytes", double(h.index.bytes()));
      return o;
    });
  }

  std::shared_ptr<Held> held_;
};

// ivfSampleRows(n, count, seed): Int32Array — the training sample's row indices (ivf_core.h).
Napi::Value SampleRows(const Napi::CallbackInfo& info) {
  return Guard(info, "ivfSampleRows", [&]() -> Napi::Value {
    CheckArity(info, 3);
    const int64_t n = IntArg(info[0], "n", 0);
    const int64_t count = IntArg(info[1], "count", 0);
    const int64_t seed = IntArg(info[2], "seed", 0, 4294967295LL);
    std::vector<int64_t> r = ivf::SampleRows(n, count, static_cast<uint32_t>(seed));
    return ToTyped(info.Env(), std::vector<int32_t>(r.begin(), r.end()));
  });
}

struct KMeansOut {
  std::vector<float> centroids;
  std::vector<int32_t> codes;
  std::vector<float> scores;
};

// ivfKMeans(x, dim, c, iters): Promise<{ centroids, codes, scores }> — spherical k-means over x's
// rows (initial centroids its first c rows), then x assigned to the result.
Napi::Value KMeans(const Napi::CallbackInfo& info) {
  return GuardAsync(info, "ivfKMeans", [&]() -> Napi::Value {
    CheckArity(info, 4);
    Napi::Float32Array xa = Float32Arg(info[0], "x");
    const int64_t dim = IntArg(info[1], "dim", 1);
    const int64_t n = RowsOf(int64_t(xa.ElementLength()), "x", dim, "dim");
    const int64_t c = IntArg(info[2], "c", 1);
    if (c > n) Bad("c (" + std::to_string(c) + ") exceeds the rows of x (" + std::to_string(n) + ")");
    const int iters = static_cast<int>(IntArg(info[3], "iters", 0, 1000));
    if (int64_t bad = FirstNonFinite(xa.Data(), n * dim); bad >= 0) Bad("x[" + std::to_string(bad) + "] is not finite");
    auto x = std::make_shared<std::vector<float>>(CopyTyped<float>(xa));
    const kernels::Isa isa = kernels::CurrentIsa();
    return PromiseWorker<KMeansOut>::Start(
        info.Env(),
        [x, n, dim, c, iters, isa]() {
          KMeansOut out;
          out.centroids = ivf::KMeans(x->data(), n, dim, c, iters, isa, 0);
          out.codes.resize(static_cast<size_t>(n));
          out.scores.resize(static_cast<size_t>(n));
          ivf::Assign(x->data(), n, out.centroids.data(), c, dim, out.codes.data(), out.scores.data(), isa, 0);
          return out;
        },
        [](Napi::Env env, KMeansOut& out) -> Napi::Value {
          Napi::Object o = Napi::Object::New(env);
          o.Set("centroids", ToTyped(env, out.centroids));
          o.Set("codes", ToTyped(env, out.codes));
          o.Set("scores", ToTyped(env, out.scores));
          return o;
        });
  });
}

}  // namespace

void RegisterGlanceIndex(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeGlanceIndex", NativeGlanceIndex::Define(env));
  exports.Set("ivfSampleRows", Napi::Function::New(env, SampleRows, "ivfSampleRows"));
  exports.Set("ivfKMeans", Napi::Function::New(env, KMeans, "ivfKMeans"));
}

}  // namespace gavel
