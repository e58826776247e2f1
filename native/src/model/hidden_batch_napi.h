#pragma once
#include <napi.h>
#include <memory>

#include "model/engine.h"

namespace gavel {
// NativeModel.hiddenStatesMany(tasks: Int32Array[], layers: Int32Array): a promise of one array per
// task of one Float32Array (tokens × nEmbd) per layer, from Engine::HiddenStatesMany on a worker
// holding the engine's mutex. `self` is kept alive until it settles.
Napi::Value HiddenStatesManyJs(const Napi::CallbackInfo& info, std::shared_ptr<Engine> engine, Napi::Object self);
}  // namespace gavel
