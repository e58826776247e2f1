// The in-memory bank's N-API surface: the NativeBank class and glanceDevice().
#pragma once
#include <napi.h>

namespace gavel {
void RegisterBank(Napi::Env env, Napi::Object exports);
}
