// Module init: the error class hand-off, the settings (configure), ggml backend loading, and the
// registration of each part.
#include <napi.h>

#include "bank/bank.h"
#include "common/cpu_features.h"
#include "common/errors.h"
#include "common/napi_args.h"
#include "common/settings.h"
#include "index/ivf.h"
#include "kivf/kivf.h"
#include "kernels/kernels.h"
#include "live/live.h"
#include "llama.h"
#include "model/engine.h"
#include "model/model_napi.h"
#include "train/train.h"

namespace {

Napi::Value SetErrorClass(const Napi::CallbackInfo& info) {
  if (!info[0].IsFunction()) gavel::Throw(info.Env(), gavel::Code::INVALID_ARGUMENT, "setErrorClass needs a constructor");
  gavel::SetErrorClass(info[0].As<Napi::Function>());
  return info.Env().Undefined();
}

// The index of `value` in `names`: the setting's enum value. Bad() names the key and the values.
int Choice(const Napi::Object& o, const char* key, std::initializer_list<const char*> names) {
  const Napi::Value v = o.Get(key);
  std::string got;
  if (v.IsString()) got = v.As<Napi::String>();
  int i = 0;
  for (const char* n : names) {
    if (v.IsString() && got == n) return i;
    ++i;
  }
  std::string list;
  for (const char* n : names) list += (list.empty() ? "" : " | ") + std::string(n);
  gavel::Bad(std::string(key) + " must be one of " + list);
}

// configure({ logEcho, kernelIsa, glanceDevice, glanceKernel, glanceTopK, glanceLoader, glanceExact8 }): sets the
// keys given (common/settings.h), leaves the rest. The loader calls it once with the settings
// src/config.ts resolved from the environment; benches and tests may call it again.
Napi::Value Configure(const Napi::CallbackInfo& info) {
  return gavel::Guard(info, "configure", [&]() -> Napi::Value {
    if (!info[0].IsObject()) gavel::Bad("configure needs a settings object");
    const Napi::Object o = info[0].As<Napi::Object>();
    gavel::settings::Settings& s = gavel::settings::Current();
    // every key is checked before any is set, so a bad call changes nothing
    int logEcho = -1, isa = -1, device = -1, kernel = -1, topK = -1, loader = -1, exact8 = -1;
    if (o.Has("logEcho")) {
      if (!o.Get("logEcho").IsBoolean()) gavel::Bad("logEcho must be a boolean");
      logEcho = o.Get("logEcho").As<Napi::Boolean>() ? 1 : 0;
    }
    if (o.Has("kernelIsa")) isa = o.Get("kernelIsa").IsNull() ? 0 : 1 + Choice(o, "kernelIsa", {"generic", "avx2", "avx512"});
    if (o.Has("glanceDevice")) device = Choice(o, "glanceDevice", {"auto", "cpu", "cuda"});
    if (o.Has("glanceKernel")) kernel = Choice(o, "glanceKernel", {"auto", "wmma"});
    if (o.Has("glanceTopK")) topK = Choice(o, "glanceTopK", {"auto", "passes"});
    if (o.Has("glanceLoader")) loader = Choice(o, "glanceLoader", {"tma", "cp.async"});
    if (o.Has("glanceExact8")) exact8 = Choice(o, "glanceExact8", {"off", "on"});
    if (logEcho >= 0) s.logEcho.store(logEcho == 1);
    if (isa >= 0) s.isaCap.store(isa);
    if (device >= 0) s.glanceDevice.store(device);
    if (kernel >= 0) s.glanceKernel.store(kernel);
    if (topK >= 0) s.topKPasses.store(topK == 1);
    if (loader >= 0) s.cpAsyncLoader.store(loader == 1);
    if (exact8 >= 0) s.glanceExact8.store(exact8);
    return info.Env().Undefined();
  });
}

Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string dir;
  if (info[0].IsString()) dir = info[0].As<Napi::String>();
  else if (!info[0].IsNull() && !info[0].IsUndefined()) gavel::Throw(env, gavel::Code::INVALID_ARGUMENT, "libDir must be a string or null");
  auto devices = gavel::InitBackends(dir.empty() ? nullptr : dir.c_str());
  Napi::Array out = Napi::Array::New(env, devices.size());
  for (size_t i = 0; i < devices.size(); ++i) out.Set(uint32_t(i), devices[i]);
  return out;
}

Napi::Value SystemInfo(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), llama_print_system_info()); }

// How this addon was built: llama.cpp compiled in with CUDA (shared libraries beside the addon), or
// for the CPU as static libraries with hidden symbols; either way its ggml backends are linked in.
// cpuFeatures: the x86 features ggml's CPU code was compiled for.
Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
#ifdef GAVEL_WITH_CUDA
  o.Set("cuda", true);
#else
  o.Set("cuda", false);
#endif
#ifdef GAVEL_STATIC_LLAMA
  o.Set("staticLlama", true);
#else
  o.Set("staticLlama", false);
#endif
  o.Set("cpuFeatures", gavel::RequiredCpuFeatures());
  return o;
}

Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  // Before any ggml code runs: a CPU without the build's features would die of SIGILL in it.
  const std::string missing = gavel::MissingCpuFeatures();
  if (!missing.empty()) {
    throw Napi::Error::New(env, std::string("this CPU lacks ") + missing + ", which the addon's llama.cpp was compiled for (" +
                                    gavel::RequiredCpuFeatures() + ")");
  }
  exports.Set("setErrorClass", Napi::Function::New(env, SetErrorClass));
  exports.Set("configure", Napi::Function::New(env, Configure));
  exports.Set("init", Napi::Function::New(env, Init));
  exports.Set("systemInfo", Napi::Function::New(env, SystemInfo));
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfo));
  gavel::RegisterModel(env, exports);
  gavel::RegisterKernels(env, exports);
  gavel::RegisterBank(env, exports);
  gavel::RegisterGlanceIndex(env, exports);
  gavel::RegisterKeyIvf(env, exports);
  gavel::RegisterLive(env, exports);
  gavel::RegisterTrainer(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(gavel, InitModule)
