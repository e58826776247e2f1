// The numeric hot loops of the router (farthest-first ε-cover, max-sim + top-k vote, projection),
// exposed to JS.
#pragma once
#include <napi.h>

#include "kernels/kernels_core.h"

namespace gavel {
void RegisterKernels(Napi::Env env, Napi::Object exports);
// glanceExact8 and glanceI8Bounds: the int8-prefiltered exact glance over a flat bank (i8_napi.cpp).
void RegisterI8Glance(Napi::Env env, Napi::Object exports);
// A glance's result as JS sees it: { g, m, argmax } (NativeBank's glance adds handles).
Napi::Object GlanceToJs(Napi::Env env, const kernels::GlanceResult& r);
}  // namespace gavel
