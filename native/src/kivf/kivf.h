// The key IVF glance's N-API surface: the NativeKeyIvf class (kivf_core.h).
#pragma once
#include <napi.h>

namespace gavel {
void RegisterKeyIvf(Napi::Env env, Napi::Object exports);
}
