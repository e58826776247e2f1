// The kernels' N-API surface: coverFarthestFirst (synchronous) and coverFarthestFirstAsync, glance
// over one flat bank, the NativeBank class (skills' keys held natively across glances) and
// projectNormalize; everything slow is a Promise computed off the JS thread. Every argument is
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

#include "common/errors.h"
#include "common/worker.h"
#include "kernels/device.h"
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
  a.keys = Float32Arg(info, 0, "keys");
  a.dim = IntArg(info, 1, "dim", 1);
  if (!info[2].IsNumber()) Bad("eps must be a number");
  a.eps = info[2].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(a.eps) || a.eps < 0) Bad("eps must be a finite number >= 0, got " + std::to_string(a.eps));
  const int64_t len = static_cast<int64_t>(a.keys.ElementLength());
  if (len % a.dim != 0)
    Bad("keys.length (" + std::to_string(len) + ") is not a multiple of dim (" + std::to_string(a.dim) + ")");
  a.n = len / a.dim;
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
    std::vector<int32_t> kept = kernels::CoverFarthestFirst(data, a.n, a.dim, a.eps, Isa());
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
    const kernels::Isa isa = Isa();
    return PromiseWorker<std::vector<int32_t>>::Start(
        info.Env(),
        [keys, n, dim, eps, isa]() {
          if (int64_t bad = FirstNonFinite(keys->data(), n * dim); bad >= 0)
            throw Failure("INVALID_ARGUMENT", "coverFarthestFirstAsync: keys[" + std::to_string(bad) + "] is not finite");
          std::vector<int32_t> kept = kernels::CoverFarthestFirst(keys->data(), n, dim, eps, isa);
          keys->clear();
          keys->shrink_to_fit();
          return kept;
        },
        [](Napi::Env env, std::vector<int32_t>& kept) -> Napi::Value { return ToTyped(env, kept); });
  });
}

// Query tokens nq (≥ 1) of a Float32Array of nq × dim finite floats.
int64_t CheckQueries(const Napi::Float32Array& queries, int64_t dim) {
  const int64_t qlen = static_cast<int64_t>(queries.ElementLength());
  if (qlen % dim != 0)
    Bad("queries.length (" + std::to_string(qlen) + ") is not a multiple of dim (" + std::to_string(dim) + ")");
  const int64_t nq = qlen / dim;
  if (nq == 0) Bad("queries hold no token");
  if (int64_t bad = FirstNonFinite(queries.Data(), qlen); bad >= 0)
    Bad("queries[" + std::to_string(bad) + "] is not finite");
  return nq;
}

// nq weights, finite, >= 0, with a positive sum.
void CheckWeights(const Napi::Float32Array& weights, int64_t nq) {
  const int64_t wlen = static_cast<int64_t>(weights.ElementLength());
  if (wlen != nq)
    Bad("weights.length (" + std::to_string(wlen) + ") must equal the number of query tokens (" + std::to_string(nq) +
        ")");
  double wsum = 0;
  for (int64_t i = 0; i < nq; ++i) {
    const float w = weights.Data()[i];
    if (!std::isfinite(w) || w < 0)
      Bad("weights[" + std::to_string(i) + "] must be finite and >= 0, got " + std::to_string(w));
    wsum += w;
  }
  if (!(wsum > 0)) Bad("weights must have a positive sum");
}

void CheckResultSize(int64_t nq, int64_t nSkills) {
  if (static_cast<double>(nq) * static_cast<double>(nSkills) > double(std::numeric_limits<int32_t>::max()))
    Bad("queries × skills is too large for one result array; split the queries");
}

Napi::Object GlanceToJs(Napi::Env env, kernels::GlanceResult& r) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("g", ToTyped(env, r.g));
  out.Set("m", ToTyped(env, r.m));
  out.Set("argmax", ToTyped(env, r.argmax));
  return out;
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
    const int64_t rows = blen / dim;

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

    const int64_t nq = CheckQueries(queries, dim);
    CheckWeights(weights, nq);
    CheckResultSize(nq, nSkills);

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
        [](Napi::Env env, kernels::GlanceResult& r) -> Napi::Value { return GlanceToJs(env, r); });
  });
}

// projectNormalize(states: Float32Array, inDim, W: Float32Array, outDim): Promise<Float32Array>
// Copies both operands (the worker never touches JS memory); their finiteness is checked on the
// worker, in parallel, since states may be hundreds of MiB.
Napi::Value ProjectNormalize(const Napi::CallbackInfo& info) {
  return Guard(info, "projectNormalize", [&]() -> Napi::Value {
    CheckArity(info, 4);
    Napi::Float32Array states = Float32Arg(info, 0, "states");
    const int64_t inDim = IntArg(info, 1, "inDim", 1);
    Napi::Float32Array W = Float32Arg(info, 2, "W");
    const int64_t outDim = IntArg(info, 3, "outDim", 1);
    const int64_t slen = static_cast<int64_t>(states.ElementLength());
    const int64_t wlen = static_cast<int64_t>(W.ElementLength());
    if (slen % inDim != 0)
      Bad("states.length (" + std::to_string(slen) + ") is not a multiple of inDim (" + std::to_string(inDim) + ")");
    if (static_cast<double>(outDim) * static_cast<double>(inDim) != static_cast<double>(wlen))
      Bad("W.length (" + std::to_string(wlen) + ") must equal outDim × inDim (" + std::to_string(outDim) + " × " +
          std::to_string(inDim) + ")");
    const int64_t n = slen / inDim;
    if (static_cast<double>(n) * static_cast<double>(outDim) > double(std::numeric_limits<int32_t>::max()))
      Bad("rows × outDim is too large for one result array; split the states");
    auto H = std::make_shared<std::vector<float>>(CopyTyped<float>(states));
    auto Wc = std::make_shared<std::vector<float>>(CopyTyped<float>(W));
    const kernels::Isa isa = Isa();
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

// ---- NativeBank --------------------------------------------------------------------------------
//
// Every installed skill's keys, held natively across glances. Concurrency is copy-on-write:
//  - One skill's keys are an immutable KeyBlock, shared by pointer.
//  - The bank's current state is a BankSnapshot: the entries (handle, block) sorted by handle, which
//    is also insertion order since handles only grow and are never reused.
//  - glance() takes a reference to the current snapshot on the JS thread, when it is called, and its
//    workers read only that snapshot and its blocks: the glance sees exactly the skills held at the
//    call, whatever add/remove/clear happen while it runs, and nothing it reads is ever written.
//  - add/remove/clear (JS thread only, like every method) mutate the snapshot in place when nobody
//    else holds it, else first replace it by a copy (the entries only, O(skills) pointers: the keys
//    are shared). Only the JS thread ever creates references to a snapshot, so a use count of 1 read
//    there cannot go up concurrently; the acquire fence orders the in-place writes after the last
//    reads of a glance that just released its reference (its decrement is a release).
// So add/remove never wait for a glance, and a glance never waits for them.
//
// Cancellation: each glance gets its own flag, registered (with the caller's ticket) before the call
// returns and unregistered when its work ends; abort(ticket?) raises the flags of the running
// glances with that ticket (all of them without one). The kernels poll the flag between ≈64 KiB
// blocks of keys, so a glance rejects with ABORTED within a fraction of a millisecond per thread.

struct KeyBlock {
  std::vector<float> data;  // rows × dim
  int64_t rows = 0;
};

struct BankEntry {
  int32_t handle;
  std::shared_ptr<const KeyBlock> keys;
};

struct BankSnapshot {
  std::vector<BankEntry> entries;  // sorted by handle
  int64_t rows = 0;
  int64_t keyBytes = 0;
};

struct RunningGlance {
  std::atomic<bool> stop{false};
  int64_t ticket = 0;
};

class GlanceRegistry {
 public:
  void Add(const std::shared_ptr<RunningGlance>& g) {
    std::lock_guard<std::mutex> lock(mu_);
    running_.push_back(g);
  }
  void Remove(const RunningGlance* g) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < running_.size(); ++i)
      if (running_[i].get() == g) {
        running_[i] = running_.back();
        running_.pop_back();
        return;
      }
  }
  // Raises the flags of the running glances with this ticket (ticket < 0: all). Returns how many.
  int Abort(int64_t ticket) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (auto& g : running_)
      if (ticket < 0 || g->ticket == ticket) {
        g->stop.store(true, std::memory_order_relaxed);
        ++n;
      }
    return n;
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<RunningGlance>> running_;
};

// Where a whole-bank glance computes its max-sim. GAVEL_GLANCE_DEVICE = "cpu" | "cuda" | "auto"
// (default auto: CUDA when this addon was built with it and a device answers). Read once.
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

// The bank's keys on the device, uploaded by the first device glance after a change (version) and
// shared by the glances that follow. Glances hold their own reference, so a re-upload never pulls
// the keys from under a running one.
struct DeviceCache {
  std::mutex mu;
  int64_t version = -1;
  std::shared_ptr<const kernels::device::DeviceKeys> keys;
};

struct BankGlanceJob {
  std::shared_ptr<const BankSnapshot> snap;  // keeps every block read below alive
  int64_t version = 0;
  bool onDevice = false;
  std::shared_ptr<DeviceCache> device;
  std::vector<float> queries, weights;
  std::vector<const float*> base;
  std::vector<int64_t> offsets;
  std::vector<int32_t> handles;
  // A restricted glance on the device: the whole bank (what the device holds) and the positions of
  // the asked skills in it. The max-sim runs over every skill, then the asked columns are gathered.
  std::vector<const float*> allBase;
  std::vector<int64_t> allOffsets;
  std::vector<int64_t> pick;
  bool gather = false;
  int64_t nq = 0, dim = 0, k = 0;
  kernels::Isa isa = kernels::Isa::Generic;
  std::shared_ptr<RunningGlance> run;
  std::shared_ptr<GlanceRegistry> registry;
};

struct BankGlanceOut {
  kernels::GlanceResult r;
  std::vector<int32_t> handles;
};

// Marks NativeBank instances. Methods carry a V8 signature (a foreign receiver throws "Illegal
// invocation" before reaching C++), but accessors do not: node-addon-api would unwrap another
// wrapped object (a NativeModel) as a NativeBank. Every entry point checks the tag first.
constexpr napi_type_tag kBankTag = {0x67617665'6c5f6b62ull, 0x9d412f3c'77e0a615ull};

class NativeBank : public Napi::ObjectWrap<NativeBank> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeBank",
                       {InstanceMethod("add", &NativeBank::Add), InstanceMethod("remove", &NativeBank::Remove),
                        InstanceMethod("clear", &NativeBank::Clear), InstanceMethod("handles", &NativeBank::Handles),
                        InstanceMethod("glance", &NativeBank::Glance), InstanceMethod("abort", &NativeBank::Abort),
                        InstanceAccessor("dim", &NativeBank::Dim, nullptr),
                        InstanceAccessor("size", &NativeBank::Size, nullptr),
                        InstanceAccessor("keys", &NativeBank::Keys, nullptr),
                        InstanceAccessor("bytes", &NativeBank::Bytes, nullptr)});
  }

  explicit NativeBank(const Napi::CallbackInfo& info)
      : Napi::ObjectWrap<NativeBank>(info),
        snap_(std::make_shared<BankSnapshot>()),
        registry_(std::make_shared<GlanceRegistry>()) {
    // A constructor cannot return through Guard; a pending JS exception makes `new` throw.
    Guard(info, "NativeBank", [&]() -> Napi::Value {
      info.This().As<Napi::Object>().TypeTag(&kBankTag);
      CheckArity(info, 1);
      dim_ = IntArg(info, 0, "dim", 1);
      return info.Env().Undefined();
    });
  }

 private:
  // The snapshot, safe to mutate in place (see the design note above).
  BankSnapshot& Writable() {
    ++version_;
    if (snap_.use_count() != 1) snap_ = std::make_shared<BankSnapshot>(*snap_);
    else std::atomic_thread_fence(std::memory_order_acquire);
    return *snap_;
  }

  // First thing in every entry point, before any member is read: `this` must be a NativeBank.
  static void CheckThis(const Napi::CallbackInfo& info) {
    Napi::Value self = info.This();
    if (!self.IsObject() || !self.As<Napi::Object>().CheckTypeTag(&kBankTag))
      Bad("called on an object that is not a NativeBank");
  }

  void CheckReady(const Napi::CallbackInfo& info) const {
    CheckThis(info);
    if (dim_ < 1) Bad("this bank was not constructed with a valid dim");
  }

  // Position of `handle` in the entries, or -1.
  static int64_t Find(const BankSnapshot& s, int64_t handle) {
    auto it = std::lower_bound(s.entries.begin(), s.entries.end(), handle,
                               [](const BankEntry& e, int64_t h) { return e.handle < h; });
    return it != s.entries.end() && it->handle == handle ? it - s.entries.begin() : -1;
  }

  static int64_t BlockBytes(const KeyBlock& b) {
    return static_cast<int64_t>(b.data.capacity() * sizeof(float) + sizeof(KeyBlock) + 32);  // + control block
  }

  // add(keys: Float32Array): number — n × dim keys of one skill (n may be 0), copied in.
  Napi::Value Add(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.add", [&]() -> Napi::Value {
      CheckReady(info);
      CheckArity(info, 1);
      Napi::Float32Array keys = Float32Arg(info, 0, "keys");
      const int64_t len = static_cast<int64_t>(keys.ElementLength());
      if (len % dim_ != 0)
        Bad("keys.length (" + std::to_string(len) + ") is not a multiple of dim (" + std::to_string(dim_) + ")");
      if (len / dim_ > std::numeric_limits<int32_t>::max()) Bad("too many keys for one skill");
      if (int64_t bad = FirstNonFinite(keys.Data(), len); bad >= 0)
        Bad("keys[" + std::to_string(bad) + "] is not finite");
      if (nextHandle_ > std::numeric_limits<int32_t>::max())
        Bad("this bank has issued 2^31 - 1 handles; build a new one");
      auto block = std::make_shared<KeyBlock>();
      block->data = CopyTyped<float>(keys);
      block->rows = len / dim_;
      BankSnapshot& s = Writable();
      const int32_t handle = static_cast<int32_t>(nextHandle_++);
      s.entries.push_back(BankEntry{handle, block});
      s.rows += block->rows;
      s.keyBytes += BlockBytes(*block);
      return Napi::Number::New(info.Env(), handle);
    });
  }

  // remove(handle: number): void
  Napi::Value Remove(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.remove", [&]() -> Napi::Value {
      CheckReady(info);
      CheckArity(info, 1);
      const int64_t handle = IntArg(info, 0, "handle", 1);
      const int64_t at = Find(*snap_, handle);
      if (at < 0) Bad("no skill with handle " + std::to_string(handle) + " in this bank");
      BankSnapshot& s = Writable();
      s.rows -= s.entries[at].keys->rows;
      s.keyBytes -= BlockBytes(*s.entries[at].keys);
      s.entries.erase(s.entries.begin() + at);
      return info.Env().Undefined();
    });
  }

  Napi::Value Clear(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.clear", [&]() -> Napi::Value {
      CheckThis(info);
      snap_ = std::make_shared<BankSnapshot>();  // a running glance keeps its own snapshot
      return info.Env().Undefined();
    });
  }

  // handles(): Int32Array — the skills held, in glance order.
  Napi::Value Handles(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.handles", [&]() -> Napi::Value {
      CheckThis(info);
      std::vector<int32_t> h(snap_->entries.size());
      for (size_t i = 0; i < h.size(); ++i) h[i] = snap_->entries[i].handle;
      return ToTyped(info.Env(), h);
    });
  }

  // glance(queries, weights, k, handles?: Int32Array | null, ticket?: number): Promise<{ g, m, argmax, handles }>
  Napi::Value Glance(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.glance", [&]() -> Napi::Value {
      CheckReady(info);
      CheckArity(info, 3);
      Napi::Float32Array queries = Float32Arg(info, 0, "queries");
      Napi::Float32Array weights = Float32Arg(info, 1, "weights");
      const int64_t k = IntArg(info, 2, "k", 1);
      const bool restricted = info.Length() > 3 && !info[3].IsUndefined() && !info[3].IsNull();
      Napi::Int32Array only;
      if (restricted) only = Int32Arg(info, 3, "handles");
      int64_t ticket = 0;
      if (info.Length() > 4 && !info[4].IsUndefined()) ticket = IntArg(info, 4, "ticket", 0);
      const int64_t nq = CheckQueries(queries, dim_);
      CheckWeights(weights, nq);

      auto job = std::make_shared<BankGlanceJob>();
      job->snap = snap_;
      const BankSnapshot& s = *job->snap;
      std::vector<int64_t> pick;  // entry positions, in result order
      if (restricted) {
        const int64_t nh = static_cast<int64_t>(only.ElementLength());
        pick.resize(static_cast<size_t>(nh));
        std::unordered_set<int32_t> seen;
        seen.reserve(static_cast<size_t>(nh));
        for (int64_t i = 0; i < nh; ++i) {
          const int32_t h = only.Data()[i];
          const int64_t at = Find(s, h);
          if (at < 0) Bad("handles[" + std::to_string(i) + "] (" + std::to_string(h) + ") is not in this bank");
          if (!seen.insert(h).second) Bad("handles[" + std::to_string(i) + "] (" + std::to_string(h) + ") is repeated");
          pick[i] = at;
        }
      } else {
        pick.resize(s.entries.size());
        for (size_t i = 0; i < pick.size(); ++i) pick[i] = static_cast<int64_t>(i);
      }
      const int64_t nSkills = static_cast<int64_t>(pick.size());
      CheckResultSize(nq, nSkills);
      job->base.resize(pick.size());
      job->offsets.assign(pick.size() + 1, 0);
      job->handles.resize(pick.size());
      for (int64_t i = 0; i < nSkills; ++i) {
        const BankEntry& e = s.entries[pick[i]];
        job->base[i] = e.keys->data.data();
        job->offsets[i + 1] = job->offsets[i] + e.keys->rows;
        job->handles[i] = e.handle;
      }
      job->queries = CopyTyped<float>(queries);
      job->weights = CopyTyped<float>(weights);
      job->nq = nq;
      job->dim = dim_;
      job->k = k;
      job->isa = Isa();
      job->run = std::make_shared<RunningGlance>();
      job->run->ticket = ticket;
      job->registry = registry_;
      job->version = version_;
      job->onDevice = (!restricted || nSkills > 0) && GlanceOnDevice();
      job->device = device_;
      if (job->onDevice && restricted) {
        job->gather = true;
        const int64_t nAll = static_cast<int64_t>(s.entries.size());
        CheckResultSize(nq, nAll);
        job->allBase.resize(s.entries.size());
        job->allOffsets.assign(s.entries.size() + 1, 0);
        for (int64_t i = 0; i < nAll; ++i) {
          job->allBase[i] = s.entries[i].keys->data.data();
          job->allOffsets[i + 1] = job->allOffsets[i] + s.entries[i].keys->rows;
        }
        job->pick = std::move(pick);
      }
      registry_->Add(job->run);

      return PromiseWorker<BankGlanceOut>::Start(
          info.Env(),
          [job]() {
            struct Unregister {
              BankGlanceJob* j;
              ~Unregister() { j->registry->Remove(j->run.get()); }
            } unregister{job.get()};
            BankGlanceOut out;
            const kernels::SkillKeys keys{job->base.data(), job->offsets.data(), static_cast<int64_t>(job->handles.size())};
            if (job->onDevice) {
              // The device always holds the whole bank (one copy serves every glance until it changes).
              const bool restricted = job->gather;
              const kernels::SkillKeys whole =
                  restricted ? kernels::SkillKeys{job->allBase.data(), job->allOffsets.data(), static_cast<int64_t>(job->allBase.size())} : keys;
              std::shared_ptr<const kernels::device::DeviceKeys> dk;
              {
                std::lock_guard<std::mutex> lock(job->device->mu);
                if (job->device->version != job->version || !job->device->keys) {
                  job->device->keys.reset();  // free the old copy first: device memory is the limit
                  job->device->keys = kernels::device::Upload(whole, job->dim);
                  job->device->version = job->version;
                }
                dk = job->device->keys;
              }
              const size_t cells = static_cast<size_t>(job->nq * keys.nSkills);
              if (!restricted) {
                out.r.m.resize(cells);
                out.r.argmax.resize(cells);
                dk->MaxSim(job->queries.data(), job->nq, out.r.m.data(), out.r.argmax.data(), &job->run->stop);
              } else {
                const int64_t nAll = whole.nSkills;
                std::vector<float> m(static_cast<size_t>(job->nq * nAll));
                std::vector<int32_t> argmax(m.size());
                dk->MaxSim(job->queries.data(), job->nq, m.data(), argmax.data(), &job->run->stop);
                kernels::GatherSkills(m.data(), argmax.data(), job->nq, nAll, job->pick.data(), keys.nSkills, out.r);
              }
              kernels::Vote(out.r, job->nq, keys.offsets, keys.nSkills, job->weights.data(), job->k, 0, &job->run->stop);
            } else {
              out.r = kernels::Glance(job->queries.data(), job->nq, keys, job->dim, job->weights.data(), job->k,
                                      job->isa, 0, &job->run->stop);
            }
            out.handles = std::move(job->handles);
            job->snap.reset();  // let add/remove mutate in place again as soon as possible
            return out;
          },
          [](Napi::Env env, BankGlanceOut& out) -> Napi::Value {
            Napi::Object o = GlanceToJs(env, out.r);
            o.Set("handles", ToTyped(env, out.handles));
            return o;
          },
          info.This().As<Napi::Object>());
    });
  }

  // abort(ticket?: number): number — glances told to stop.
  Napi::Value Abort(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.abort", [&]() -> Napi::Value {
      CheckThis(info);
      int64_t ticket = -1;
      if (info.Length() > 0 && !info[0].IsUndefined()) ticket = IntArg(info, 0, "ticket", 0);
      return Napi::Number::New(info.Env(), registry_->Abort(ticket));
    });
  }

  template <typename Fn>
  static Napi::Value Getter(const Napi::CallbackInfo& info, const char* name, Fn value) {
    return Guard(info, name, [&]() -> Napi::Value {
      CheckThis(info);
      return Napi::Number::New(info.Env(), value());
    });
  }
  Napi::Value Dim(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeBank.dim", [&] { return double(dim_); });
  }
  Napi::Value Size(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeBank.size", [&] { return double(snap_->entries.size()); });
  }
  Napi::Value Keys(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeBank.keys", [&] { return double(snap_->rows); });
  }
  Napi::Value Bytes(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeBank.bytes", [&] {
      return double(snap_->keyBytes) + double(snap_->entries.capacity() * sizeof(BankEntry) + sizeof(BankSnapshot));
    });
  }

  int64_t dim_ = 0;
  std::shared_ptr<BankSnapshot> snap_;
  int64_t nextHandle_ = 1;
  int64_t version_ = 0;  // bumped by every change, so the device copy knows when it is stale
  std::shared_ptr<GlanceRegistry> registry_;
  std::shared_ptr<DeviceCache> device_ = std::make_shared<DeviceCache>();
};

// Where whole-bank glances run: "cuda" or "cpu", and why not CUDA when it is not used.
Napi::Value GlanceDevice(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  std::string why;
  const bool available = kernels::device::Available(&why);
  o.Set("device", GlanceOnDevice() ? "cuda" : "cpu");
  o.Set("cudaAvailable", available);
  if (!available) o.Set("reason", why);
  return o;
}

// Which instruction set the kernels run with (GAVEL_KERNEL_ISA may cap it). For benches and tests.
Napi::Value KernelIsa(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), kernels::IsaName(Isa()));
}

}  // namespace

void RegisterKernels(Napi::Env env, Napi::Object exports) {
  exports.Set("coverFarthestFirst", Napi::Function::New(env, CoverFarthestFirst, "coverFarthestFirst"));
  exports.Set("coverFarthestFirstAsync",
              Napi::Function::New(env, CoverFarthestFirstAsync, "coverFarthestFirstAsync"));
  exports.Set("glance", Napi::Function::New(env, Glance, "glance"));
  exports.Set("projectNormalize", Napi::Function::New(env, ProjectNormalize, "projectNormalize"));
  exports.Set("NativeBank", NativeBank::Define(env));
  exports.Set("kernelIsa", Napi::Function::New(env, KernelIsa, "kernelIsa"));
  exports.Set("glanceDevice", Napi::Function::New(env, GlanceDevice, "glanceDevice"));
}

}  // namespace gavel
