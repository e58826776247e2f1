// NativeBank: every installed skill's keys held natively across glances (bank_core.h has the design),
// and glanceDevice(). Every argument is validated here before any memory is touched: the TypeScript
// wrapper is not the only possible caller, and no JS input may crash the process.
#include <napi.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bank/bank.h"
#include "bank/bank_core.h"
#include "common/napi_args.h"
#include "common/worker.h"
#include "kernels/kernels.h"

namespace gavel {
namespace {

// Marks NativeBank instances (see CheckTag).
constexpr napi_type_tag kBankTag = {0x67617665'6c5f6b62ull, 0x9d412f3c'77e0a615ull};

class NativeBank : public Napi::ObjectWrap<NativeBank> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeBank",
                       {InstanceMethod("add", &NativeBank::Add), InstanceMethod("remove", &NativeBank::Remove),
                        InstanceMethod("clear", &NativeBank::Clear), InstanceMethod("handles", &NativeBank::Handles),
                        InstanceMethod("glance", &NativeBank::Glance), InstanceMethod("abort", &NativeBank::Abort),
                        InstanceMethod("dispose", &NativeBank::Dispose),
                        InstanceMethod("_deviceLayoutProbe", &NativeBank::DeviceLayoutProbe),
                        InstanceAccessor("keyType", &NativeBank::KeyType, nullptr),
                        InstanceAccessor("dim", &NativeBank::Dim, nullptr),
                        InstanceAccessor("size", &NativeBank::Size, nullptr),
                        InstanceAccessor("keys", &NativeBank::Keys, nullptr),
                        InstanceAccessor("bytes", &NativeBank::Bytes, nullptr)});
  }

  explicit NativeBank(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeBank>(info) {
    // A constructor cannot return through Guard; a pending JS exception makes `new` throw.
    Guard(info, "NativeBank", [&]() -> Napi::Value {
      info.This().As<Napi::Object>().TypeTag(&kBankTag);
      CheckArity(info, 1);
      const int64_t dim = IntArg(info[0], "dim", 1);
      std::string keyType = "f32";
      if (info.Length() > 1 && !info[1].IsUndefined()) keyType = StringArg(info[1], "keyType");
      if (keyType != "f32" && keyType != "f16") Bad("keyType must be \"f32\" or \"f16\", got \"" + keyType + "\"");
      bank_ = std::make_unique<bank::Bank>(dim, keyType == "f16");
      return info.Env().Undefined();
    });
  }

 private:
  // First thing in every entry point, before any member is read: `this` must be a live NativeBank.
  bank::Bank& Use(const Napi::CallbackInfo& info) const {
    CheckTag(info, &kBankTag, "NativeBank");
    if (disposed_) Disposed("bank");
    if (!bank_) Bad("this bank was not constructed with a valid dim");
    return *bank_;
  }

  // add(keys: Float32Array): number — n × dim keys of one skill (n may be 0), copied in.
  Napi::Value Add(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.add", [&]() -> Napi::Value {
      bank::Bank& b = Use(info);
      CheckArity(info, 1);
      Napi::Float32Array keys = Float32Arg(info[0], "keys");
      const int64_t len = static_cast<int64_t>(keys.ElementLength());
      const int64_t rows = RowsOf(len, "keys", b.dim(), "dim");
      if (rows > std::numeric_limits<int32_t>::max()) Bad("too many keys for one skill");
      if (int64_t bad = FirstNonFinite(keys.Data(), len); bad >= 0)
        Bad("keys[" + std::to_string(bad) + "] is not finite");
      return Napi::Number::New(info.Env(), b.Add(CopyTyped<float>(keys), rows));
    });
  }

  // remove(handle: number): void
  Napi::Value Remove(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.remove", [&]() -> Napi::Value {
      bank::Bank& b = Use(info);
      CheckArity(info, 1);
      const int64_t handle = IntArg(info[0], "handle", 1);
      if (!b.Remove(handle)) Bad("no skill with handle " + std::to_string(handle) + " in this bank");
      return info.Env().Undefined();
    });
  }

  Napi::Value Clear(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.clear", [&]() -> Napi::Value {
      Use(info).Clear();
      return info.Env().Undefined();
    });
  }

  // handles(): Int32Array — the skills held, in glance order.
  Napi::Value Handles(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.handles", [&]() -> Napi::Value { return ToTyped(info.Env(), Use(info).Handles()); });
  }

  // glance(queries, weights, k, handles?: Int32Array | null, ticket?: number, detail?: number):
  //   Promise<{ g, m, argmax, handles, columns?, device? }>
  // detail (integer ≥ 0): m and argmax only for the `detail` best columns by g (`columns`).
  Napi::Value Glance(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.glance", [&]() -> Napi::Value {
      bank::Bank& b = Use(info);
      CheckArity(info, 3);
      Napi::Float32Array queries = Float32Arg(info[0], "queries");
      Napi::Float32Array weights = Float32Arg(info[1], "weights");
      const int64_t k = IntArg(info[2], "k", 1);
      const bool restricted = info.Length() > 3 && !info[3].IsUndefined() && !info[3].IsNull();
      Napi::Int32Array only;
      if (restricted) only = Int32Arg(info[3], "handles");
      int64_t ticket = 0;
      if (info.Length() > 4 && !info[4].IsUndefined()) ticket = IntArg(info[4], "ticket", 0);
      int64_t detail = -1;
      if (info.Length() > 5 && !info[5].IsUndefined() && !info[5].IsNull()) detail = IntArg(info[5], "detail", 0);
      const int64_t nq = kernels::CheckQueries(queries.Data(), int64_t(queries.ElementLength()), b.dim());
      kernels::CheckWeights(weights.Data(), int64_t(weights.ElementLength()), nq);
      // Copies: the workers never touch JS memory (a typed array may be detached or collected).
      std::shared_ptr<bank::GlanceJob> job =
          b.PrepareGlance(CopyTyped<float>(queries), CopyTyped<float>(weights), nq, k, restricted,
                          restricted ? only.Data() : nullptr, restricted ? int64_t(only.ElementLength()) : 0, ticket,
                          detail);
      return PromiseWorker<bank::GlanceOut>::Start(
          info.Env(), [job]() { return bank::RunGlance(*job); },
          [detail](Napi::Env env, bank::GlanceOut& out) -> Napi::Value {
            Napi::Object o = GlanceToJs(env, out.r);
            o.Set("handles", ToTyped(env, out.handles));
            if (detail >= 0) {
              std::vector<int32_t> cols(out.columns.begin(), out.columns.end());
              o.Set("columns", ToTyped(env, cols));
            }
            if (out.onDevice) {  // device time of the phases (CUDA events), for benches
              Napi::Object d = Napi::Object::New(env);
              d.Set("maxSimMs", out.maxSimMs);
              d.Set("topKMs", out.topKMs);
              d.Set("copyMs", out.copyMs);
              o.Set("device", d);
            }
            return o;
          },
          info.This().As<Napi::Object>());
    });
  }

  // abort(ticket?: number): number — glances told to stop.
  Napi::Value Abort(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.abort", [&]() -> Napi::Value {
      bank::Bank& b = Use(info);
      int64_t ticket = -1;
      if (info.Length() > 0 && !info[0].IsUndefined()) ticket = IntArg(info[0], "ticket", 0);
      return Napi::Number::New(info.Env(), b.Abort(ticket));
    });
  }

  // dispose(): void — aborts the running glances (they reject with ABORTED) and frees the keys; the
  // memory a running glance reads goes when it ends. Idempotent; every other use then throws DISPOSED.
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.dispose", [&]() -> Napi::Value {
      CheckTag(info, &kBankTag, "NativeBank");
      if (bank_) bank_->Abort(-1);
      bank_.reset();
      disposed_ = true;
      return info.Env().Undefined();
    });
  }

  // _deviceLayoutProbe(): what syncing the device copy to the bank now would upload, on a layout of
  // the probe's own (a test hook: it never touches the device copy). { uploads: Int32Array (skill
  // positions in handles order), uploadedRows, end, live, compacted, rows: Float64Array (each
  // skill's first device row, from the probe's column cache), columnsReused (that cache held them) }.
  Napi::Value DeviceLayoutProbe(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank._deviceLayoutProbe", [&]() -> Napi::Value {
      const bank::LayoutProbe p = Use(info).ProbeLayout();
      Napi::Env env = info.Env();
      Napi::Object o = Napi::Object::New(env);
      std::vector<int32_t> uploads;
      for (const auto& u : p.plan.uploads) uploads.push_back(static_cast<int32_t>(u.entry));
      o.Set("uploads", ToTyped(env, uploads));
      o.Set("uploadedRows", double(p.plan.uploadedRows));
      o.Set("end", double(p.plan.end));
      o.Set("live", double(p.live));
      o.Set("compacted", p.plan.compacted);
      o.Set("columnsReused", p.columnsReused);
      Napi::Float64Array rows = Napi::Float64Array::New(env, p.rows.size());
      for (size_t i = 0; i < p.rows.size(); ++i) rows[i] = double(p.rows[i]);
      o.Set("rows", rows);
      return o;
    });
  }

  Napi::Value KeyType(const Napi::CallbackInfo& info) {
    return Guard(info, "NativeBank.keyType",
                 [&]() -> Napi::Value { return Napi::String::New(info.Env(), Use(info).halfKeys() ? "f16" : "f32"); });
  }

  template <typename Fn>
  Napi::Value Getter(const Napi::CallbackInfo& info, const char* name, Fn value) {
    return Guard(info, name, [&]() -> Napi::Value { return Napi::Number::New(info.Env(), double(value(Use(info)))); });
  }
  Napi::Value Dim(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeBank.dim", [](const bank::Bank& b) { return b.dim(); });
  }
  Napi::Value Size(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeBank.size", [](const bank::Bank& b) { return b.size(); });
  }
  Napi::Value Keys(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeBank.keys", [](const bank::Bank& b) { return b.rows(); });
  }
  Napi::Value Bytes(const Napi::CallbackInfo& info) {
    return Getter(info, "NativeBank.bytes", [](const bank::Bank& b) { return b.bytes(); });
  }

  std::unique_ptr<bank::Bank> bank_;
  bool disposed_ = false;

  friend bank::Bank& gavel::UnwrapBank(const Napi::Value& v, const char* name);
};

// Where whole-bank glances run: "cuda" or "cpu", and why not CUDA when it is not used.
Napi::Value GlanceDevice(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  std::string why;
  const bool available = kernels::device::Available(&why);
  o.Set("device", bank::GlanceOnDevice() ? "cuda" : "cpu");
  o.Set("cudaAvailable", available);
  if (!available) o.Set("reason", why);
  return o;
}

}  // namespace

bank::Bank& UnwrapBank(const Napi::Value& v, const char* name) {
  bool tagged = false;
  if (v.IsObject() && napi_check_object_type_tag(v.Env(), v, &kBankTag, &tagged) != napi_ok) tagged = false;
  if (!tagged) Bad(std::string(name) + " must be a NativeBank");
  NativeBank* nb = NativeBank::Unwrap(v.As<Napi::Object>());
  if (nb == nullptr || nb->disposed_) Disposed("bank");
  if (!nb->bank_) Bad(std::string(name) + " was not constructed with a valid dim");
  return *nb->bank_;
}

void RegisterBank(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeBank", NativeBank::Define(env));
  exports.Set("glanceDevice", Napi::Function::New(env, GlanceDevice, "glanceDevice"));
}

}  // namespace gavel
