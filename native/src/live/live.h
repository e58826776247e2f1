// The live accumulator's N-API surface: the NativeLive class (live_napi.cpp).
#pragma once
#include <napi.h>

namespace gavel {
void RegisterLive(Napi::Env env, Napi::Object exports);
}
