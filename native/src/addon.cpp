// Module init: the error class hand-off, ggml backend loading, and the registration of each part.
#include <napi.h>

#include "bank/bank.h"
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

// How this addon was built: with its own CUDA llama.cpp (backends linked in) or against the
// prebuilt CPU libraries (backends loaded from their folder).
Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
#ifdef GAVEL_WITH_CUDA
  o.Set("cuda", true);
#else
  o.Set("cuda", false);
#endif
  return o;
}

Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
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
