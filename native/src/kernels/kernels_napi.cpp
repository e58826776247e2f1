// The kernels' N-API surface: coverFarthestFirst (synchronous) and coverFarthestFirstAsync, glance
// over one flat bank, projectNormalize, logSumExp and kernelIsa (the NativeBank class lives in bank/);
// everything slow is a Promise computed off the JS thread. Every argument is
// validated here before any memory is touched, because the TypeScript wrappers are not the only
// possible callers: no JS input may crash the process.
#include <napi.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/napi_args.h"
#include "common/worker.h"
#include "kernels/kernels.h"
#include "kernels/kernels_core.h"

namespace gavel {
namespace {

struct CoverArgs {
  Napi::Float32Array keys;
  int64_t dim = 0, n = 0;
  double eps = 0;
};

// Arguments of both covers; finiteness of the keys is checked by the caller (sync: here, in place;
// async: on the worker, on its copy).
CoverArgs CheckCoverArgs(const Napi::CallbackInfo& info) {
  CheckArity(info, 3);
  CoverArgs a;
  a.keys = Float32Arg(info[0], "keys");
  a.dim = IntArg(info[1], "dim", 1);
  if (!info[2].IsNumber()) Bad("eps must be a number");
  a.eps = info[2].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(a.eps) || a.eps < 0) Bad("eps must be a finite number >= 0, got " + std::to_string(a.eps));
  a.n = RowsOf(static_cast<int64_t>(a.keys.ElementLength()), "keys", a.dim, "dim");
  if (a.n > std::numeric_limits<int32_t>::max()) Bad("too many keys");
  return a;
}

// coverFarthestFirst(keys: Float32Array, dim: number, eps: number): Int32Array
Napi::Value CoverFarthestFirst(const Napi::CallbackInfo& info) {
  return Guard(info, "coverFarthestFirst", [&]() -> Napi::Value {
    CoverArgs a = CheckCoverArgs(info);
    const float* data = a.keys.Data();
    if (int64_t bad = FirstNonFinite(data, a.n * a.dim); bad >= 0)
      Bad("keys[" + std::to_string(bad) + "] is not finite");
    // Synchronous on purpose (one small skill): the data is read in place on this thread.
    std::vector<int32_t> kept = kernels::CoverFarthestFirst(data, a.n, a.dim, a.eps, kernels::CurrentIsa());
    return ToTyped(info.Env(), kept);
  });
}

// coverFarthestFirstAsync(keys: Float32Array, dim: number, eps: number): Promise<Int32Array>
// The same traversal on a worker thread, over a copy of the keys taken now.
Napi::Value CoverFarthestFirstAsync(const Napi::CallbackInfo& info) {
  return Guard(info, "coverFarthestFirstAsync", [&]() -> Napi::Value {
    CoverArgs a = CheckCoverArgs(info);
    auto keys = std::make_shared<std::vector<float>>(CopyTyped<float>(a.keys));
    const int64_t n = a.n, dim = a.dim;
    const double eps = a.eps;
    const kernels::Isa isa = kernels::CurrentIsa();
    return PromiseWorker<std::vector<int32_t>>::Start(
        info.Env(),
        [keys, n, dim, eps, isa]() {
          if (int64_t bad = FirstNonFinite(keys->data(), n * dim); bad >= 0)
            throw Failure(Code::INVALID_ARGUMENT, "coverFarthestFirstAsync: keys[" + std::to_string(bad) + "] is not finite");
          std::vector<int32_t> kept = kernels::CoverFarthestFirst(keys->data(), n, dim, eps, isa);
          keys->clear();
          keys->shrink_to_fit();
          return kept;
        },
        [](Napi::Env env, std::vector<int32_t>& kept) -> Napi::Value { return ToTyped(env, kept); });
  });
}

}  // namespace

Napi::Object GlanceToJs(Napi::Env env, const kernels::GlanceResult& r) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("g", ToTyped(env, r.g));
  out.Set("m", ToTyped(env, r.m));
  out.Set("argmax", ToTyped(env, r.argmax));
  return out;
}

namespace {

// The bank copy is by far the largest (K × dim floats, e.g. 88 MiB for 1K skills × 30 keys × 768)
// and fresh memory costs a page fault per 4 KiB: on the JS thread that doubled the copy's time.
// One released buffer is kept for the next call, which usually glances the same library. Buffers
// more than twice the request are not reused, so one huge library does not pin memory for small
// ones beyond the one cached buffer.
class BankBuffers {
 public:
  std::vector<float> Take(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<float> out;
    if (cached_.capacity() >= n && cached_.capacity() <= 2 * n + 4096) out.swap(cached_);
    return out;
  }
  void Give(std::vector<float>&& buf) {
    std::lock_guard<std::mutex> lock(mu_);
    if (buf.capacity() >= cached_.capacity()) cached_.swap(buf);
    // the smaller one is freed when `buf` goes out of scope in the caller
  }

 private:
  std::mutex mu_;
  std::vector<float> cached_;
};

BankBuffers& Buffers() {
  static BankBuffers* pool = new BankBuffers();  // never destroyed: workers may outlive static teardown
  return *pool;
}

struct GlanceJob {
  std::vector<float> queries, bank, weights;
  std::vector<int32_t> offsets;
  int64_t nq = 0, nSkills = 0, dim = 0, k = 0;
  kernels::Isa isa = kernels::Isa::Generic;
};

// glance(queries, bank, offsets, dim, weights, k): Promise<{ g, m, argmax }>
Napi::Value Glance(const Napi::CallbackInfo& info) {
  return Guard(info, "glance", [&]() -> Napi::Value {
    CheckArity(info, 6);
    Napi::Float32Array queries = Float32Arg(info[0], "queries");
    Napi::Float32Array bank = Float32Arg(info[1], "bank");
    Napi::Int32Array offsets = Int32Arg(info[2], "offsets");
    const int64_t dim = IntArg(info[3], "dim", 1);
    Napi::Float32Array weights = Float32Arg(info[4], "weights");
    const int64_t k = IntArg(info[5], "k", 1);

    const int64_t qlen = static_cast<int64_t>(queries.ElementLength());
    const int64_t blen = static_cast<int64_t>(bank.ElementLength());
    RowsOf(qlen, "queries", dim, "dim");
    const int64_t rows = RowsOf(blen, "bank", dim, "dim");

    const int64_t olen = static_cast<int64_t>(offsets.ElementLength());
    if (olen < 1) Bad("offsets must hold nSkills + 1 entries, got none");
    const int32_t* off = offsets.Data();
    if (off[0] != 0) Bad("offsets[0] must be 0, got " + std::to_string(off[0]));
    for (int64_t s = 1; s < olen; ++s)
      if (off[s] < off[s - 1])
        Bad("offsets must be non-decreasing, but offsets[" + std::to_string(s) + "] = " + std::to_string(off[s]) +
            " < offsets[" + std::to_string(s - 1) + "] = " + std::to_string(off[s - 1]));
    if (off[olen - 1] != rows)
      Bad("offsets[last] (" + std::to_string(off[olen - 1]) + ") must equal the bank's row count (" +
          std::to_string(rows) + ")");
    const int64_t nSkills = olen - 1;

    const int64_t nq = kernels::CheckQueries(queries.Data(), qlen, dim);
    kernels::CheckWeights(weights.Data(), int64_t(weights.ElementLength()), nq);
    kernels::CheckResultSize(nq, nSkills);

    // Copies: the worker threads never touch JS memory (a typed array may be detached or collected
    // while they run). The bank is
    // checked for NaN/Inf on the workers, from the tiles' outputs (kernels_core.h).
    auto job = std::make_shared<GlanceJob>();
    job->queries = CopyTyped<float>(queries);
    job->bank = Buffers().Take(static_cast<size_t>(blen));
    job->bank.assign(bank.Data(), bank.Data() + blen);  // no reallocation when the buffer was reused
    job->weights = CopyTyped<float>(weights);
    job->offsets = CopyTyped<int32_t>(offsets);
    job->nq = nq;
    job->nSkills = nSkills;
    job->dim = dim;
    job->k = k;
    job->isa = kernels::CurrentIsa();

    return PromiseWorker<kernels::GlanceResult>::Start(
        info.Env(),
        [job]() {
          kernels::GlanceResult r =
              kernels::Glance(job->queries.data(), job->nq, job->bank.data(), job->offsets.data(), job->nSkills,
                              job->dim, job->weights.data(), job->k, job->isa, 0);
          // Hand the bank copy back now rather than when the promise settles.
          Buffers().Give(std::move(job->bank));
          job->bank = std::vector<float>();
          return r;
        },
        [](Napi::Env env, kernels::GlanceResult& r) -> Napi::Value { return GlanceToJs(env, r); });
  });
}

// projectNormalize(states: Float32Array, inDim, W: Float32Array, outDim): Promise<Float32Array>
// Copies both operands (the worker never touches JS memory); their finiteness is checked on the
// worker, in parallel, since states may be hundreds of MiB.
Napi::Value ProjectNormalize(const Napi::CallbackInfo& info) {
  return Guard(info, "projectNormalize", [&]() -> Napi::Value {
    CheckArity(info, 4);
    Napi::Float32Array states = Float32Arg(info[0], "states");
    const int64_t inDim = IntArg(info[1], "inDim", 1);
    Napi::Float32Array W = Float32Arg(info[2], "W");
    const int64_t outDim = IntArg(info[3], "outDim", 1);
    const int64_t n = RowsOf(static_cast<int64_t>(states.ElementLength()), "states", inDim, "inDim");
    const int64_t wlen = static_cast<int64_t>(W.ElementLength());
    if (static_cast<double>(outDim) * static_cast<double>(inDim) != static_cast<double>(wlen))
      Bad("W.length (" + std::to_string(wlen) + ") must equal outDim × inDim (" + std::to_string(outDim) + " × " +
          std::to_string(inDim) + ")");
    if (static_cast<double>(n) * static_cast<double>(outDim) > double(std::numeric_limits<int32_t>::max()))
      Bad("rows × outDim is too large for one result array; split the states");
    auto H = std::make_shared<std::vector<float>>(CopyTyped<float>(states));
    auto Wc = std::make_shared<std::vector<float>>(CopyTyped<float>(W));
    const kernels::Isa isa = kernels::CurrentIsa();
    return PromiseWorker<std::vector<float>>::Start(
        info.Env(),
        [H, Wc, n, inDim, outDim, isa]() {
          std::vector<float> y = kernels::ProjectNormalize(H->data(), n, inDim, Wc->data(), outDim, isa, 0);
          *H = std::vector<float>();  // free the copies before the promise settles
          *Wc = std::vector<float>();
          return y;
        },
        [](Napi::Env env, std::vector<float>& y) -> Napi::Value { return ToTyped(env, y); });
  });
}

// logSumExp(rows: Float32Array, n: number): Float64Array — log Σ exp of each n-long row, the
// scorer's log-normaliser kernel; synchronous (tests and benches hand it a few rows).
Napi::Value LogSumExp(const Napi::CallbackInfo& info) {
  return Guard(info, "logSumExp", [&]() -> Napi::Value {
    CheckArity(info, 2);
    Napi::Float32Array rows = Float32Arg(info[0], "rows");
    const int64_t n = IntArg(info[1], "n", 1);
    const int64_t count = RowsOf(static_cast<int64_t>(rows.ElementLength()), "rows", n, "n");
    const float* data = rows.Data();
    if (int64_t bad = FirstNonFinite(data, count * n); bad >= 0) Bad("rows[" + std::to_string(bad) + "] is not finite");
    const kernels::Isa isa = kernels::CurrentIsa();
    std::vector<double> out(static_cast<size_t>(count));
    for (int64_t r = 0; r < count; ++r) out[size_t(r)] = kernels::LogSumExp(data + r * n, n, isa);
    return ToTyped(info.Env(), out);
  });
}

// The f16 conversions' arrays: float32 values x and their f16 bits, of one length.
struct HalfArrays {
  Napi::Float32Array x;
  Napi::Uint16Array half;
  int64_t n;
};

HalfArrays HalfArgs(const Napi::Value& x, const Napi::Value& half) {
  HalfArrays a{Float32Arg(x, "x"), Uint16Arg(half, "half"), 0};
  if (a.half.ElementLength() != a.x.ElementLength()) Bad("half must hold as many values as x");
  a.n = static_cast<int64_t>(a.x.ElementLength());
  return a;
}

// roundToHalf(x: Float32Array, half: Uint16Array): void — x rounded to f16 in place, its bits into
// half (the states cache's entries); halfToFloat(half: Uint16Array, x: Float32Array): void — back.
// Synchronous: a skill's states (~0.4M values) take tens of microseconds.
Napi::Value RoundToHalf(const Napi::CallbackInfo& info) {
  return Guard(info, "roundToHalf", [&]() -> Napi::Value {
    CheckArity(info, 2);
    HalfArrays a = HalfArgs(info[0], info[1]);
    kernels::RoundToHalf(a.x.Data(), a.half.Data(), a.n, kernels::CurrentIsa());
    return info.Env().Undefined();
  });
}

Napi::Value HalfToFloat(const Napi::CallbackInfo& info) {
  return Guard(info, "halfToFloat", [&]() -> Napi::Value {
    CheckArity(info, 2);
    HalfArrays a = HalfArgs(info[1], info[0]);
    kernels::HalfToFloats(a.half.Data(), a.x.Data(), a.n, kernels::CurrentIsa());
    return info.Env().Undefined();
  });
}

// floatsToHalf(x: Float32Array, half: Uint16Array): number — x's f16 bits into half while every value
// fits f16; the index of the first that does not, else -1 (the device glance's host-side conversion).
Napi::Value FloatsToHalf(const Napi::CallbackInfo& info) {
  return Guard(info, "floatsToHalf", [&]() -> Napi::Value {
    CheckArity(info, 2);
    HalfArrays a = HalfArgs(info[0], info[1]);
    return Napi::Number::New(info.Env(), double(kernels::FloatsToHalf(a.x.Data(), a.half.Data(), a.n, kernels::CurrentIsa())));
  });
}

// Which instruction set the kernels run with (GAVEL_KERNEL_ISA may cap it). For benches and tests.
Napi::Value KernelIsa(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), kernels::IsaName(kernels::CurrentIsa()));
}

}  // namespace

void RegisterKernels(Napi::Env env, Napi::Object exports) {
  exports.Set("coverFarthestFirst", Napi::Function::New(env, CoverFarthestFirst, "coverFarthestFirst"));
  exports.Set("coverFarthestFirstAsync",
              Napi::Function::New(env, CoverFarthestFirstAsync, "coverFarthestFirstAsync"));
  exports.Set("glance", Napi::Function::New(env, Glance, "glance"));
  exports.Set("projectNormalize", Napi::Function::New(env, ProjectNormalize, "projectNormalize"));
  exports.Set("kernelIsa", Napi::Function::New(env, KernelIsa, "kernelIsa"));
  exports.Set("logSumExp", Napi::Function::New(env, LogSumExp, "logSumExp"));
  exports.Set("roundToHalf", Napi::Function::New(env, RoundToHalf, "roundToHalf"));
  exports.Set("halfToFloat", Napi::Function::New(env, HalfToFloat, "halfToFloat"));
  exports.Set("floatsToHalf", Napi::Function::New(env, FloatsToHalf, "floatsToHalf"));
  RegisterI8Glance(env, exports);
}

}  // namespace gavel
