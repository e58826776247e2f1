// The numeric hot loops of the router (farthest-first ε-cover, max-sim + top-k vote), exposed to JS.
#pragma once
#include <napi.h>

namespace gavel {
void RegisterKernels(Napi::Env env, Napi::Object exports);
}
