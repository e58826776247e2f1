// Module init: the error class hand-off, ggml backend loading, and the registration of each part.
#include <napi.h>

#include "bank/bank.h"
#include "common/cpu_features.h"
#include "common/errors.h"
#include "kernels/kernels.h"
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
  exports.Set("init", Napi::Function::New(env, Init));
  exports.Set("systemInfo", Napi::Function::New(env, SystemInfo));
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfo));
  gavel::RegisterModel(env, exports);
  gavel::RegisterKernels(env, exports);
  gavel::RegisterBank(env, exports);
  gavel::RegisterTrainer(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(gavel, InitModule)
