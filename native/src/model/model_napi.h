#pragma once
#include <napi.h>

namespace gavel {
// Registers the NativeModel class (see src/native/binding.ts for its typed surface).
void RegisterModel(Napi::Env env, Napi::Object exports);
}
