// N-API surface of the int8-prefiltered exact glance over one flat bank (i8_glance.h), for tests and
// benches: glanceExact8 and glanceI8Bounds. The bank is float32 (Float32Array) or f16 bits
// (Uint16Array, the KeyBank's keys). Every argument is validated before any memory is touched.
#include <napi.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "common/cores.h"
#include "common/napi_args.h"
#include "common/parallel.h"
#include "common/worker.h"
#include "kernels/i8_glance.h"
#include "kernels/kernels.h"
#include "kernels/kernels_core.h"

namespace gavel {
namespace {

// CPU time of the whole process (all threads), in ms: on a shared machine the glance's own work,
// which wall time mixes with the waits for a core.
double ProcessCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

struct I8Job {
  std::vector<float> queries, bank, weights;
  std::vector<uint16_t> half;
  std::vector<int64_t> offsets;
  int64_t nq = 0, nSkills = 0, dim = 0, k = 1, detail = 0;
  bool exact = false;
  kernels::Isa isa = kernels::Isa::Generic;
  // filled on the worker
  std::vector<const float*> base;
  std::vector<const uint16_t*> halfBase;
  std::vector<kernels::I8Skill> i8;
  std::vector<const kernels::I8Skill*> i8p;
  kernels::GlanceResult r;
  std::vector<int64_t> columns;
  kernels::I8Stats stats;
  double totalMs = 0, cpuMs = 0;
  std::vector<float> lower, upper;

  kernels::SkillKeys Keys() const {
    return kernels::SkillKeys{half.empty() ? base.data() : nullptr, offsets.data(), nSkills,
                              half.empty() ? nullptr : halfBase.data()};
  }
  // Per-skill pointers and (when asked) the int8 keys, quantised in parallel.
  void Prepare(bool quantise) {
    base.resize(static_cast<size_t>(nSkills));
    halfBase.resize(static_cast<size_t>(nSkills));
    for (int64_t s = 0; s < nSkills; ++s) {
      if (half.empty()) base[s] = bank.data() + offsets[s] * dim;
      else halfBase[s] = half.data() + offsets[s] * dim;
    }
    if (!quantise) return;
    i8.resize(static_cast<size_t>(nSkills));
    i8p.resize(static_cast<size_t>(nSkills));
    const unsigned nt = CoresAvailable();
    Parallel(nt, [&](unsigned t) {
      for (int64_t s = nSkills * t / nt; s < nSkills * (t + 1) / nt; ++s)
        i8[s] = kernels::QuantizeSkill(half.empty() ? base[s] : nullptr, half.empty() ? nullptr : halfBase[s],
                                       offsets[s + 1] - offsets[s], dim);
    });
    for (int64_t s = 0; s < nSkills; ++s) i8p[s] = &i8[s];
  }
};

// queries, bank, offsets, dim (arguments 0-3), checked and copied.
std::shared_ptr<I8Job> ReadJob(const Napi::CallbackInfo& info) {
  auto job = std::make_shared<I8Job>();
  Napi::Float32Array queries = Float32Arg(info[0], "queries");
  const int64_t dim = IntArg(info[3], "dim", 1);
  int64_t blen = 0;
  if (info[1].IsTypedArray() && info[1].As<Napi::TypedArray>().TypedArrayType() == napi_uint16_array) {
    Napi::Uint16Array h = Uint16Arg(info[1], "bank");
    blen = static_cast<int64_t>(h.ElementLength());
    job->half = CopyTyped<uint16_t>(h);
  } else {
    Napi::Float32Array b = Float32Arg(info[1], "bank");
    blen = static_cast<int64_t>(b.ElementLength());
    job->bank = CopyTyped<float>(b);
  }
  const int64_t rows = RowsOf(blen, "bank", dim, "dim");
  Napi::Int32Array offsets = Int32Arg(info[2], "offsets");
  const int64_t olen = static_cast<int64_t>(offsets.ElementLength());
  if (olen < 1) Bad("offsets must hold nSkills + 1 entries, got none");
  const int32_t* off = offsets.Data();
  if (off[0] != 0) Bad("offsets[0] must be 0");
  for (int64_t s = 1; s < olen; ++s)
    if (off[s] < off[s - 1]) Bad("offsets must be non-decreasing");
  if (off[olen - 1] != rows) Bad("offsets[last] must equal the bank's row count (" + std::to_string(rows) + ")");
  job->offsets.assign(off, off + olen);
  job->nSkills = olen - 1;
  job->dim = dim;
  job->nq = kernels::CheckQueries(queries.Data(), static_cast<int64_t>(queries.ElementLength()), dim);
  kernels::CheckResultSize(job->nq, job->nSkills);
  job->queries = CopyTyped<float>(queries);
  job->isa = kernels::CurrentIsa();
  return job;
}

// glanceExact8(queries, bank, offsets, dim, weights, k, detail, exact?): Promise<{ g, m, argmax,
// columns, stats }>. detail ≥ 0: m and argmax of the `detail` best columns by g (nq × columns).
// exact: the plain glance (kernels::Glance, then the same columns), to compare bit for bit.
Napi::Value GlanceExact8(const Napi::CallbackInfo& info) {
  return Guard(info, "glanceExact8", [&]() -> Napi::Value {
    CheckArity(info, 7);
    auto job = ReadJob(info);
    Napi::Float32Array weights = Float32Arg(info[4], "weights");
    kernels::CheckWeights(weights.Data(), int64_t(weights.ElementLength()), job->nq);
    job->weights = CopyTyped<float>(weights);
    job->k = IntArg(info[5], "k", 1);
    job->detail = IntArg(info[6], "detail", 0);
    job->exact = info.Length() > 7 && info[7].IsBoolean() && info[7].As<Napi::Boolean>().Value();
    return PromiseWorker<std::shared_ptr<I8Job>>::Start(
        info.Env(),
        [job]() {
          auto t0 = std::chrono::steady_clock::now();
          job->Prepare(!job->exact);
          const double quantMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          t0 = std::chrono::steady_clock::now();
          const double cpu0 = ProcessCpuMs();
          const kernels::SkillKeys keys = job->Keys();
          if (job->exact) {
            kernels::GlanceResult all =
                kernels::Glance(job->queries.data(), job->nq, keys, job->dim, job->weights.data(), job->k, job->isa, 0);
            job->columns = kernels::TopColumns(all.g, job->detail);
            job->r.g = std::move(all.g);
            kernels::GatherSkills(all.m.data(), all.argmax.data(), job->nq, job->nSkills, job->columns.data(),
                                  static_cast<int64_t>(job->columns.size()), job->r);
          } else {
            job->r = kernels::GlanceI8(job->queries.data(), job->nq, keys, job->i8p.data(), job->dim,
                                       job->weights.data(), job->k, job->detail, job->isa, 0, job->columns,
                                       &job->stats);
          }
          job->totalMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          job->cpuMs = ProcessCpuMs() - cpu0;
          job->stats.quantMs += quantMs;
          return job;
        },
        [](Napi::Env env, std::shared_ptr<I8Job>& job) -> Napi::Value {
          Napi::Object out = GlanceToJs(env, job->r);
          std::vector<int32_t> cols(job->columns.begin(), job->columns.end());
          out.Set("columns", ToTyped(env, cols));
          Napi::Object st = Napi::Object::New(env);
          const kernels::I8Stats& s = job->stats;
          st.Set("pairs", double(s.pairs));
          st.Set("recomputed", double(s.recomputed));
          st.Set("quantMs", s.quantMs);
          st.Set("stage1Ms", s.stage1Ms);
          st.Set("stage2Ms", s.stage2Ms);
          st.Set("voteMs", s.voteMs);
          st.Set("totalMs", job->totalMs);
          st.Set("cpuMs", job->cpuMs);
          st.Set("exactFallback", s.exactFallback);
          st.Set("isa", job->exact ? "exact" : kernels::I8IsaName(s.isa));
          int64_t i8Bytes = 0;
          for (const auto& sk : job->i8) i8Bytes += sk.Bytes();
          st.Set("i8Bytes", double(i8Bytes));
          st.Set("f16Bytes", double(job->offsets.back() * job->dim * 2));
          out.Set("stats", st);
          return out;
        });
  });
}

// glanceI8Bounds(queries, bank, offsets, dim): Promise<{ lower, upper, isa }>, the prefilter's
// stage 1 alone: L ≤ m ≤ U for every row and skill (nq × nSkills, row-major).
Napi::Value GlanceI8Bounds(const Napi::CallbackInfo& info) {
  return Guard(info, "glanceI8Bounds", [&]() -> Napi::Value {
    CheckArity(info, 4);
    auto job = ReadJob(info);
    return PromiseWorker<std::shared_ptr<I8Job>>::Start(
        info.Env(),
        [job]() {
          job->Prepare(true);
          for (const auto& sk : job->i8)
            if (!sk.finite) throw Failure(Code::INVALID_ARGUMENT, "glanceI8Bounds: the bank holds NaN or Infinity");
          job->stats.isa = kernels::SelectI8Isa(job->isa);
          kernels::I8Bounds(job->queries.data(), job->nq, job->Keys(), job->i8p.data(), job->dim, job->stats.isa, 0,
                            job->lower, job->upper);
          return job;
        },
        [](Napi::Env env, std::shared_ptr<I8Job>& job) -> Napi::Value {
          Napi::Object out = Napi::Object::New(env);
          out.Set("lower", ToTyped(env, job->lower));
          out.Set("upper", ToTyped(env, job->upper));
          out.Set("isa", kernels::I8IsaName(job->stats.isa));
          return out;
        });
  });
}

}  // namespace

void RegisterI8Glance(Napi::Env env, Napi::Object exports) {
  exports.Set("glanceExact8", Napi::Function::New(env, GlanceExact8, "glanceExact8"));
  exports.Set("glanceI8Bounds", Napi::Function::New(env, GlanceI8Bounds, "glanceI8Bounds"));
}

}  // namespace gavel
