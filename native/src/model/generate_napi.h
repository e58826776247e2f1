#pragma once
#include <napi.h>
#include <memory>

#include "model/engine.h"

namespace gavel {
// Registers the NativeGeneration class (typed in src/native/binding.ts); called by RegisterModel.
void RegisterGeneration(Napi::Env env, Napi::Object exports);
// A new NativeGeneration over `engine`: info[0] = layer, info[1] = sampler params object.
Napi::Value NewGeneration(const Napi::CallbackInfo& info, std::shared_ptr<Engine> engine);
}  // namespace gavel
