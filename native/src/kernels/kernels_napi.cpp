// The kernels' N-API surface: coverFarthestFirst (synchronous) and glance (a Promise, computed off
// the JS thread). Every argument is validated here before any memory is touched, because the
// TypeScript wrappers are not the only possible callers: no JS input may crash the process.
#include <napi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/worker.h"
#include "kernels/kernels.h"
#include "kernels/kernels_core.h"

namespace gavel {
namespace {

// Thrown on the JS thread by the argument checks; Guard() turns it into a JS GavelError.
struct ArgError {
  std::string message;
};

[[noreturn]] void Bad(const std::string& message) { throw ArgError{message}; }

// Every entry point runs through Guard, which turns argument errors, Failures, Napi errors and std
// exceptions into pending JS GavelErrors itself. node-addon-api would only catch Napi::Error, and
// only when built with NAPI_CPP_EXCEPTIONS; with Guard nothing can escape a callback as a C++
// exception (which would terminate the process) whichever way the addon is configured.
template <typename Fn>
Napi::Value Guard(const Napi::CallbackInfo& info, const char* fn, Fn body) {
  Napi::Env env = info.Env();
  try {
    return body();
  } catch (const ArgError& e) {
    MakeError(env, "INVALID_ARGUMENT", std::string(fn) + ": " + e.message).ThrowAsJavaScriptException();
  } catch (const Failure& f) {
    MakeError(env, f.code, std::string(fn) + ": " + f.what()).ThrowAsJavaScriptException();
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();
  } catch (const std::bad_alloc&) {
    MakeError(env, "OUT_OF_MEMORY", std::string(fn) + ": out of memory").ThrowAsJavaScriptException();
  } catch (const std::exception& e) {
    MakeError(env, "INTERNAL", std::string(fn) + ": " + e.what()).ThrowAsJavaScriptException();
  }
  return env.Undefined();
}

template <typename T>
Napi::TypedArrayOf<T> TypedArg(const Napi::CallbackInfo& info, size_t i, const char* name, napi_typedarray_type type,
                               const char* typeName) {
  Napi::Value v = info[i];
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type)
    Bad(std::string(name) + " must be a " + typeName);
  return v.As<Napi::TypedArrayOf<T>>();
}

Napi::Float32Array Float32Arg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return TypedArg<float>(info, i, name, napi_float32_array, "Float32Array");
}

Napi::Int32Array Int32Arg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return TypedArg<int32_t>(info, i, name, napi_int32_array, "Int32Array");
}

// An integer in [min, 2^31 - 1] given as a JS number.
int64_t IntArg(const Napi::CallbackInfo& info, size_t i, const char* name, int64_t min) {
  Napi::Value v = info[i];
  if (!v.IsNumber()) Bad(std::string(name) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d) Bad(std::string(name) + " must be an integer, got " + std::to_string(d));
  if (d < double(min) || d > double(std::numeric_limits<int32_t>::max()))
    Bad(std::string(name) + " must be an integer in [" + std::to_string(min) + ", 2^31 - 1], got " + std::to_string(d));
  return static_cast<int64_t>(d);
}

void CheckArity(const Napi::CallbackInfo& info, size_t n) {
  if (info.Length() < n) Bad("expected " + std::to_string(n) + " arguments, got " + std::to_string(info.Length()));
}

// First non-finite element, or -1.
int64_t FirstNonFinite(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return i;
  return -1;
}

kernels::Isa Isa() { return kernels::SelectIsa(std::getenv("GAVEL_KERNEL_ISA")); }

// coverFarthestFirst(keys: Float32Array, dim: number, eps: number): Int32Array
Napi::Value CoverFarthestFirst(const Napi::CallbackInfo& info) {
  return Guard(info, "coverFarthestFirst", [&]() -> Napi::Value {
    CheckArity(info, 3);
    Napi::Float32Array keys = Float32Arg(info, 0, "keys");
    const int64_t dim = IntArg(info, 1, "dim", 1);
    if (!info[2].IsNumber()) Bad("eps must be a number");
    const double eps = info[2].As<Napi::Number>().DoubleValue();
    if (!std::isfinite(eps) || eps < 0) Bad("eps must be a finite number >= 0, got " + std::to_string(eps));
    const int64_t len = static_cast<int64_t>(keys.ElementLength());
    if (len % dim != 0)
      Bad("keys.length (" + std::to_string(len) + ") is not a multiple of dim (" + std::to_string(dim) + ")");
    const int64_t n = len / dim;
    if (n > std::numeric_limits<int32_t>::max()) Bad("too many keys");
    const float* data = keys.Data();
    if (int64_t bad = FirstNonFinite(data, len); bad >= 0)
      Bad("keys[" + std::to_string(bad) + "] is not finite");
    // Synchronous on purpose (one skill, at installation): the data is read in place on this thread.
    std::vector<int32_t> kept = kernels::CoverFarthestFirst(data, n, dim, eps, Isa());
    return ToTyped(info.Env(), kept);
  });
}

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
    Napi::Float32Array queries = Float32Arg(info, 0, "queries");
    Napi::Float32Array bank = Float32Arg(info, 1, "bank");
    Napi::Int32Array offsets = Int32Arg(info, 2, "offsets");
    const int64_t dim = IntArg(info, 3, "dim", 1);
    Napi::Float32Array weights = Float32Arg(info, 4, "weights");
    const int64_t k = IntArg(info, 5, "k", 1);

    const int64_t qlen = static_cast<int64_t>(queries.ElementLength());
    const int64_t blen = static_cast<int64_t>(bank.ElementLength());
    if (qlen % dim != 0)
      Bad("queries.length (" + std::to_string(qlen) + ") is not a multiple of dim (" + std::to_string(dim) + ")");
    if (blen % dim != 0)
      Bad("bank.length (" + std::to_string(blen) + ") is not a multiple of dim (" + std::to_string(dim) + ")");
    const int64_t nq = qlen / dim, rows = blen / dim;
    if (nq == 0) Bad("queries hold no token");

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

    const int64_t wlen = static_cast<int64_t>(weights.ElementLength());
    if (wlen != nq)
      Bad("weights.length (" + std::to_string(wlen) + ") must equal the number of query tokens (" +
          std::to_string(nq) + ")");
    double wsum = 0;
    for (int64_t i = 0; i < nq; ++i) {
      const float w = weights.Data()[i];
      if (!std::isfinite(w) || w < 0)
        Bad("weights[" + std::to_string(i) + "] must be finite and >= 0, got " + std::to_string(w));
      wsum += w;
    }
    if (!(wsum > 0)) Bad("weights must have a positive sum");
    if (int64_t bad = FirstNonFinite(queries.Data(), qlen); bad >= 0)
      Bad("queries[" + std::to_string(bad) + "] is not finite");
    if (static_cast<double>(nq) * static_cast<double>(nSkills) > double(std::numeric_limits<int32_t>::max()))
      Bad("queries × skills is too large for one result array; split the queries");

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
    job->isa = Isa();

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
        [](Napi::Env env, kernels::GlanceResult& r) -> Napi::Value {
          Napi::Object out = Napi::Object::New(env);
          out.Set("g", ToTyped(env, r.g));
          out.Set("m", ToTyped(env, r.m));
          out.Set("argmax", ToTyped(env, r.argmax));
          return out;
        });
  });
}

// Which instruction set the kernels run with (GAVEL_KERNEL_ISA may cap it). For benches and tests.
Napi::Value KernelIsa(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), kernels::IsaName(Isa()));
}

}  // namespace

void RegisterKernels(Napi::Env env, Napi::Object exports) {
  exports.Set("coverFarthestFirst", Napi::Function::New(env, CoverFarthestFirst, "coverFarthestFirst"));
  exports.Set("glance", Napi::Function::New(env, Glance, "glance"));
  exports.Set("kernelIsa", Napi::Function::New(env, KernelIsa, "kernelIsa"));
}

}  // namespace gavel
