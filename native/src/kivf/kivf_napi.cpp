// NativeKeyIvf: the key IVF glance (kivf_core.h) as JS sees it. Every argument is validated here
// before any memory is touched.
//
// Concurrency: one mutex per index. train, sync and glance run on worker threads holding it; stats
// takes it on the JS thread (so it waits for a running job). Jobs read the bank through a snapshot
// reference taken at the call (bank_core.h), and the index holds the key blocks it indexed by
// reference, so a bank changing or disposed meanwhile frees nothing a job reads.
#include <napi.h>

#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bank/bank.h"
#include "bank/bank_core.h"
#include "common/index_napi.h"
#include "common/napi_args.h"
#include "common/worker.h"
#include "kivf/kivf.h"
#include "kivf/kivf_core.h"

namespace gavel {
namespace {

constexpr napi_type_tag kKeyIvfTag = {0x67617665'6c6b6976ull, 0x5f1d2c3b'4a596877ull};

using Held = HeldIndex<kivf::Index>;

struct GlanceOut {
  kivf::SyncStats sync;
  kivf::SearchStats stats;
  kivf::SearchResult r;
  int64_t groups = 0;  // the coarse groups a row probed (0: the flat probe)
};

Napi::Object SyncToJs(Napi::Env env, const kivf::SyncStats& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("added", double(s.added));
  o.Set("removed", double(s.removed));
  o.Set("assignedRows", double(s.assignedRows));
  o.Set("ms", s.ms);
  return o;
}

class NativeKeyIvf : public Napi::ObjectWrap<NativeKeyIvf> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeKeyIvf",
                       {InstanceMethod("train", &NativeKeyIvf::Train), InstanceMethod("sync", &NativeKeyIvf::Sync),
                        InstanceMethod("glance", &NativeKeyIvf::Glance), InstanceMethod("stats", &NativeKeyIvf::Stats),
                        // the same verb: its name tells the TypeScript side this addon reads `only`
                        InstanceMethod("glanceOnly", &NativeKeyIvf::Glance),
                        InstanceMethod("exportCodes", &NativeKeyIvf::Export),
                        InstanceMethod("restore", &NativeKeyIvf::Restore), InstanceMethod("load", &NativeKeyIvf::Load)});
  }

  explicit NativeKeyIvf(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeKeyIvf>(info) {
    Guard(info, "NativeKeyIvf", [&]() -> Napi::Value {
      info.This().As<Napi::Object>().TypeTag(&kKeyIvfTag);
      CheckArity(info, 1);
      held_ = std::make_shared<Held>(IntArg(info[0], "dim", 1));
      return info.Env().Undefined();
    });
  }

 private:
  Held& Use(const Napi::CallbackInfo& info) const {
    CheckTag(info, &kKeyIvfTag, "NativeKeyIvf");
    if (!held_) Bad("this index was not constructed with a valid dim");
    return *held_;
  }

  static std::shared_ptr<const bank::Snapshot> SnapshotOf(const Napi::Value& v, const Held& h, bool& halfKeys) {
    return BankSnapshotFor(v, h.index.dim(), halfKeys);
  }

  // train(bank, { centroids?, iters?, sample?, seed?, groups? }): Promise<{ added, removed, assignedRows, ms }>
  Napi::Value Train(const Napi::CallbackInfo& info) {
    return GuardAsync(info, "NativeKeyIvf.train", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 1);
      bool half = false;
      auto snap = SnapshotOf(info[0], h, half);
      kivf::TrainOptions o;
      if (info.Length() > 1 && info[1].IsObject()) {
        Napi::Object opt = info[1].As<Napi::Object>();
        o.centroids = static_cast<int64_t>(NumberField(opt, "centroids", 0, 0, 1 << 20, true));
        o.iters = static_cast<int>(NumberField(opt, "iters", 6, 0, 1000, true));
        o.sample = static_cast<int64_t>(NumberField(opt, "sample", 0, 0, 2147483647.0, true));
        o.seed = static_cast<uint32_t>(NumberField(opt, "seed", 1, 0, 4294967295.0, true));
        o.groups = static_cast<int64_t>(NumberField(opt, "groups", 0, 0, 1 << 20, true));
      }
      const kernels::Isa isa = kernels::CurrentIsa();
      auto held = held_;
      return PromiseWorker<kivf::SyncStats>::Start(
          info.Env(),
          [held, snap, half, o, isa]() {
            std::lock_guard<std::mutex> lock(held->mu);
            const auto t0 = std::chrono::steady_clock::now();
            held->index.Train(*snap, half, o, isa, 0);
            kivf::SyncStats s;
            s.added = held->index.skills();
            s.assignedRows = held->index.rows();
            s.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            return s;
          },
          [](Napi::Env env, kivf::SyncStats& s) -> Napi::Value { return SyncToJs(env, s); },
          info.This().As<Napi::Object>());
    });
  }

  // sync(bank): Promise<{ added, removed, assignedRows, ms }> — follows the bank's current skills.
  Napi::Value Sync(const Napi::CallbackInfo& info) {
    return GuardAsync(info, "NativeKeyIvf.sync", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 1);
      bool half = false;
      auto snap = SnapshotOf(info[0], h, half);
      const kernels::Isa isa = kernels::CurrentIsa();
      auto held = held_;
      return PromiseWorker<kivf::SyncStats>::Start(
          info.Env(),
          [held, snap, half, isa]() {
            std::lock_guard<std::mutex> lock(held->mu);
            if (held->index.centroids() == 0) throw Failure(Code::INVALID_ARGUMENT, "the key IVF is not trained");
            return held->index.Sync(*snap, half, isa, 0);
          },
          [](Napi::Env env, kivf::SyncStats& s) -> Napi::Value { return SyncToJs(env, s); },
          info.This().As<Napi::Object>());
    });
  }

  // glance(bank, queries, weights, k, nprobe, probeGroups?, prune?, i8?, spread?, only?): Promise<{ g, handles, lists, probeGroups,
  //   scored, coded, refined, codeMs, bankRows, centroidMs, probeMs, scanMs, voteMs, sync }> — syncs to the bank first;
  //   nprobe ≥ centroids is the exact glance, bit for bit.
  Napi::Value Glance(const Napi::CallbackInfo& info) {
    return GuardAsync(info, "NativeKeyIvf.glance", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 5);
      bool half = false;
      auto snap = SnapshotOf(info[0], h, half);
      Napi::Float32Array queries = Float32Arg(info[1], "queries");
      Napi::Float32Array weights = Float32Arg(info[2], "weights");
      const int64_t k = IntArg(info[3], "k", 1);
      const int64_t nprobe = IntArg(info[4], "nprobe", 1);
      // probeGroups (optional): 0 the flat probe, else the coarse groups a row scores (two-level)
      const int64_t probeGroups =
          info.Length() > 5 && !info[5].IsUndefined() ? IntArg(info[5], "probeGroups", 0, 1 << 20) : 0;
      // prune (optional): the list bound
      const bool prune = info.Length() > 6 && info[6].IsBoolean() && info[6].As<Napi::Boolean>().Value();
      // i8 (optional): the lists' int8 codes and bound
      const bool i8 = info.Length() > 7 && info[7].IsBoolean() && info[7].As<Napi::Boolean>().Value();
      // spread (optional): nprobe is the rows' mean, shared out by weight (kivf_core.h, ProbeCounts)
      const bool spread = info.Length() > 8 && info[8].IsBoolean() && info[8].As<Napi::Boolean>().Value();
      // only (optional, Int32Array of handles): the skills that take part (kivf_core.h, Glance)
      std::shared_ptr<std::vector<int32_t>> only;
      if (info.Length() > 9 && !info[9].IsUndefined() && !info[9].IsNull()) {
        Napi::Int32Array ex = Int32Arg(info[9], "only");
        only = std::make_shared<std::vector<int32_t>>(ex.Data(), ex.Data() + ex.ElementLength());
      }
      const int64_t dim = h.index.dim();
      const int64_t nq = kernels::CheckQueries(queries.Data(), int64_t(queries.ElementLength()), dim);
      kernels::CheckWeights(weights.Data(), int64_t(weights.ElementLength()), nq);
      auto q = std::make_shared<std::vector<float>>(CopyTyped<float>(queries));
      auto w = std::make_shared<std::vector<float>>(CopyTyped<float>(weights));
      const kernels::Isa isa = kernels::CurrentIsa();
      auto held = held_;
      return PromiseWorker<GlanceOut>::Start(
          info.Env(),
          [held, snap, half, q, w, nq, k, nprobe, probeGroups, prune, i8, spread, only, isa]() {
            std::lock_guard<std::mutex> lock(held->mu);
            if (held->index.centroids() == 0) throw Failure(Code::INVALID_ARGUMENT, "the key IVF is not trained");
            GlanceOut out;
            out.sync = held->index.Sync(*snap, half, isa, 0);
            out.r = held->index.Glance(q->data(), nq, w->data(), k, nprobe, isa, 0, &out.stats, nullptr, probeGroups, prune, i8, spread,
                                     only.get());
            out.groups = prune || i8 ? 0 : held->index.ProbeGroups(probeGroups);
            return out;
          },
          [](Napi::Env env, GlanceOut& out) -> Napi::Value {
            Napi::Object o = Napi::Object::New(env);
            o.Set("g", ToTyped(env, out.r.g));
            o.Set("handles", ToTyped(env, out.r.handles));
            o.Set("lists", double(out.stats.lists));
            o.Set("probeGroups", double(out.groups));
            o.Set("scored", double(out.stats.scored));
            o.Set("coded", double(out.stats.coded));
            o.Set("refined", double(out.stats.refined));
            o.Set("codeMs", out.stats.codeMs);
            o.Set("bankRows", double(out.stats.bankRows));
            o.Set("centroidMs", out.stats.centroidMs);
            o.Set("probeMs", out.stats.probeMs);
            o.Set("scanMs", out.stats.scanMs);
            o.Set("voteMs", out.stats.voteMs);
            o.Set("sync", SyncToJs(env, out.sync));
            return o;
          },
          info.This().As<Napi::Object>());
    });
  }

  // stats(): { dim, centroids, skills, rows, trainedRows, trainMeanSim, meanSim, bytes, defaultCentroids }
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeKeyIvf.stats", [&]() -> Napi::Value {
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
      o.Set("defaultCentroids", double(kivf::DefaultCentroids(h.index.rows())));
      o.Set("bytes", double(h.index.bytes()));
      return o;
    });
  }

  // exportCodes(): { centroids, coarse, groupStart: Int32Array, handles, offsets, codes, simSums:
  //   Float64Array } — what the index file holds.
  Napi::Value Export(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeKeyIvf.exportCodes", [&]() -> Napi::Value {
      Held& h = Use(info);
      std::lock_guard<std::mutex> lock(h.mu);
      kivf::Index::Exported e = h.index.Export();
      Napi::Env env = info.Env();
      Napi::Object o = Napi::Object::New(env);
      o.Set("centroids", ToTyped(env, e.centroids));
      o.Set("coarse", ToTyped(env, e.coarse));
      o.Set("groupStart", ToTyped(env, std::vector<int32_t>(e.groupStart.begin(), e.groupStart.end())));
      o.Set("handles", ToTyped(env, e.handles));
      o.Set("offsets", ToTyped(env, e.offsets));
      o.Set("codes", ToTyped(env, e.codes));
      o.Set("simSums", ToTyped(env, e.simSums));
      return o;
    });
  }

  // restore(centroids, coarse, groupStart: Int32Array, trainedRows, trainMeanSim): void — new
  // centroids (finite), no skill.
  Napi::Value Restore(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeKeyIvf.restore", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 5);
      Napi::Float32Array c = Float32Arg(info[0], "centroids");
      Napi::Float32Array co = Float32Arg(info[1], "coarse");
      Napi::Int32Array gs = Int32Arg(info[2], "groupStart");
      for (Napi::Float32Array a : {c, co})
        if (int64_t bad = FirstNonFinite(a.Data(), int64_t(a.ElementLength())); bad >= 0) Bad("a centroid is not finite");
      const int64_t trained = IntArg(info[3], "trainedRows", 0, std::numeric_limits<int64_t>::max() / 2);
      if (!info[4].IsNumber()) Bad("trainMeanSim must be a number");
      std::lock_guard<std::mutex> lock(h.mu);
      h.index.Restore(CopyTyped<float>(c), CopyTyped<float>(co), std::vector<int64_t>(gs.Data(), gs.Data() + gs.ElementLength()),
                      trained, info[4].As<Napi::Number>().DoubleValue());
      return info.Env().Undefined();
    });
  }

  // load(bank, handles, offsets, codes, simSums: Float64Array): number — skills of the bank with
  // their codes as a file held them (kivf_core.h, Index::Load); returns how many were taken.
  Napi::Value Load(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeKeyIvf.load", [&]() -> Napi::Value {
      Held& h = Use(info);
      CheckArity(info, 5);
      bool half = false;
      auto snap = SnapshotOf(info[0], h, half);
      Napi::Int32Array handles = Int32Arg(info[1], "handles");
      Napi::Int32Array offsets = Int32Arg(info[2], "offsets");
      Napi::Int32Array codes = Int32Arg(info[3], "codes");
      auto sims = TypedArg<double>(info[4], "simSums", napi_float64_array, "Float64Array");
      const int64_t n = int64_t(handles.ElementLength());
      if (int64_t(offsets.ElementLength()) != n + 1 || int64_t(sims.ElementLength()) != n)
        Bad("offsets must hold handles.length + 1 values and simSums handles.length");
      std::lock_guard<std::mutex> lock(h.mu);
      const int64_t taken = h.index.Load(*snap, half, handles.Data(), n, offsets.Data(), codes.Data(),
                                         int64_t(codes.ElementLength()), sims.Data());
      return Napi::Number::New(info.Env(), double(taken));
    });
  }

  std::shared_ptr<Held> held_;
};

}  // namespace

// kivfRefined(keys, dim, rows): { scores8, scores8Plain, refined, bound, int8Bound, isa } — one list's
// codes made from `keys` (n × dim float32, finite) as a glance makes them, then for every row r and
// key j the int8 score scores8[r·n + j] (kivf_i8.h, ListScores8, all rows in one call: the ISA's
// kernel; scores8Plain: the plain loops, which it must equal bit for bit), the refined score
// refined[r·n + j] (RefinedScore) and per row the refined bound and the int8 bound (their
// half-widths). For tests: synchronous, at most 4,096 keys and 256 rows.
Napi::Value KivfRefined(const Napi::CallbackInfo& info) {
  return Guard(info, "kivfRefined", [&]() -> Napi::Value {
    CheckArity(info, 3);
    Napi::Float32Array keys = Float32Arg(info[0], "keys");
    const int64_t dim = IntArg(info[1], "dim", 1, 4096);
    Napi::Float32Array rows = Float32Arg(info[2], "rows");
    const int64_t n = RowsOf(int64_t(keys.ElementLength()), "keys", dim, "dim");
    const int64_t nr = RowsOf(int64_t(rows.ElementLength()), "rows", dim, "dim");
    if (n < 1 || n > 4096) Bad("kivfRefined: 1 to 4,096 keys");
    if (nr < 1 || nr > 256) Bad("kivfRefined: 1 to 256 rows");
    if (FirstNonFinite(keys.Data(), int64_t(keys.ElementLength())) >= 0 ||
        FirstNonFinite(rows.Data(), int64_t(rows.ElementLength())) >= 0)
      Bad("kivfRefined: keys and rows must be finite");
    const kernels::I8Isa isa = kernels::SelectI8Isa(kernels::CurrentIsa());
    const int64_t dim4 = kernels::Dim4(dim);
    kivf::ListCodes lc;
    std::vector<int8_t> scratch(static_cast<size_t>(dim4 * 4));
    for (int64_t j = 0; j < n; ++j) kivf::CodeKey(lc, j, keys.Data() + j * dim, dim, false, scratch.data());
    lc.n = n;
    std::vector<int64_t> all(static_cast<size_t>(nr));
    for (int64_t r = 0; r < nr; ++r) all[r] = r;
    const kernels::I8Queries Q8 = kernels::QuantizeQueries(rows.Data(), all, dim, kernels::I8QueryMax(isa));
    std::vector<float> refined(static_cast<size_t>(nr * n)), bound(static_cast<size_t>(nr)), int8Bound(static_cast<size_t>(nr));
    std::vector<float> qf(static_cast<size_t>(dim4 * 4), 0.f);
    for (int64_t r = 0; r < nr; ++r) {
      std::copy(rows.Data() + r * dim, rows.Data() + (r + 1) * dim, qf.begin());
      for (int64_t j = 0; j < n; ++j) refined[r * n + j] = kivf::RefinedScore(isa, lc, j, qf.data(), dim4);
      bound[r] = kivf::RefinedBound(Q8.alpha[r], Q8.norm[r], lc, dim);
      int8Bound[r] = (Q8.alpha[r] * lc.maxErr + Q8.beta[r] * lc.maxNorm) * (1.f + 1.f / 1024.f);
    }
    // the int8 scores of every row against the list, through the ISA's kernel and the plain loops
    std::vector<const int8_t*> qp(static_cast<size_t>(nr));
    for (int64_t r = 0; r < nr; ++r) qp[r] = Q8.q.data() + r * Q8.rowBytes;
    const int64_t ldP = static_cast<int64_t>(lc.scale.size());
    std::vector<float> P(static_cast<size_t>(nr * ldP)), Pplain(P.size());
    kivf::ListScores8(isa, lc, dim4, qp.data(), Q8.corr.data(), Q8.b.data(), nr, P.data(), ldP);
    kivf::ListScores8(kernels::I8Isa::Scalar, lc, dim4, qp.data(), Q8.corr.data(), Q8.b.data(), nr, Pplain.data(), ldP);
    std::vector<float> scores8(static_cast<size_t>(nr * n)), scores8Plain(scores8.size());
    for (int64_t r = 0; r < nr; ++r)
      for (int64_t j = 0; j < n; ++j) {
        scores8[r * n + j] = P[r * ldP + j];
        scores8Plain[r * n + j] = Pplain[r * ldP + j];
      }
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("scores8", ToTyped(info.Env(), scores8));
    o.Set("scores8Plain", ToTyped(info.Env(), scores8Plain));
    o.Set("refined", ToTyped(info.Env(), refined));
    o.Set("bound", ToTyped(info.Env(), bound));
    o.Set("int8Bound", ToTyped(info.Env(), int8Bound));
    o.Set("isa", kernels::I8IsaName(isa));
    return o;
  });
}

// kivfCentroidScores(queries, centroids, dim): { scores, gemm, isa } — the glance's centroid scores
// (kivf_core.h, CentroidScores: nq × nc, row-major) and the same product by kernels::MatMulABt, which
// they must equal bit for bit. For tests: synchronous, at most 2²⁴ products' outputs.
Napi::Value KivfCentroidScores(const Napi::CallbackInfo& info) {
  return Guard(info, "kivfCentroidScores", [&]() -> Napi::Value {
    CheckArity(info, 3);
    Napi::Float32Array queries = Float32Arg(info[0], "queries");
    Napi::Float32Array centroids = Float32Arg(info[1], "centroids");
    const int64_t dim = IntArg(info[2], "dim", 1, 4096);
    const int64_t nq = RowsOf(int64_t(queries.ElementLength()), "queries", dim, "dim");
    const int64_t nc = RowsOf(int64_t(centroids.ElementLength()), "centroids", dim, "dim");
    if (nq < 1 || nc < 1 || nq * nc > (int64_t(1) << 24)) Bad("kivfCentroidScores: 1 to 2^24 scores");
    if (FirstNonFinite(queries.Data(), int64_t(queries.ElementLength())) >= 0 ||
        FirstNonFinite(centroids.Data(), int64_t(centroids.ElementLength())) >= 0)
      Bad("kivfCentroidScores: queries and centroids must be finite");
    const kernels::Isa isa = kernels::CurrentIsa();
    std::vector<float> S(static_cast<size_t>(nq * nc), std::numeric_limits<float>::quiet_NaN());
    kivf::CentroidScores(queries.Data(), nq, centroids.Data(), nc, dim, S.data(), isa, 2);
    std::vector<float> C(static_cast<size_t>(nq * nc));
    kernels::MatMulABt(queries.Data(), nq, dim, centroids.Data(), nc, C.data(), isa, 1);
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("scores", ToTyped(info.Env(), S));
    o.Set("gemm", ToTyped(info.Env(), C));
    o.Set("isa", kernels::IsaName(isa));
    return o;
  });
}

// kivfSelectBest(values, n): Int32Array — the n best of `values` (float32, 1 ≤ n ≤ length ≤ 2²⁴) by
// (value desc, index asc), listed as a row lists its probed lists (kivf_core.h, SelectBest).
// For tests: synchronous.
Napi::Value KivfSelectBest(const Napi::CallbackInfo& info) {
  return Guard(info, "kivfSelectBest", [&]() -> Napi::Value {
    CheckArity(info, 2);
    Napi::Float32Array values = Float32Arg(info[0], "values");
    const int64_t nc = int64_t(values.ElementLength());
    if (nc < 1 || nc > (int64_t(1) << 24)) Bad("kivfSelectBest: 1 to 2^24 values");
    if (FirstNonFinite(values.Data(), nc) >= 0) Bad("kivfSelectBest: values must be finite");
    const int64_t n = IntArg(info[1], "n", 1, nc);
    std::vector<int32_t> out(static_cast<size_t>(n));
    kivf::SelectScratch scratch;
    kivf::SelectBest(values.Data(), nc, n, out.data(), scratch, kernels::CurrentIsa());
    return ToTyped(info.Env(), out);
  });
}

void RegisterKeyIvf(Napi::Env env, Napi::Object exports) {
  exports.Set("kivfSelectBest", Napi::Function::New(env, KivfSelectBest, "kivfSelectBest"));
  exports.Set("NativeKeyIvf", NativeKeyIvf::Define(env));
  exports.Set("kivfRefined", Napi::Function::New(env, KivfRefined, "kivfRefined"));
  exports.Set("kivfCentroidScores", Napi::Function::New(env, KivfCentroidScores, "kivfCentroidScores"));
}

}  // namespace gavel
