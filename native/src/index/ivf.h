// The glance index's N-API surface: the NativeGlanceIndex class, ivfSampleRows and ivfKMeans.
#pragma once
#include <napi.h>

namespace gavel {
void RegisterGlanceIndex(Napi::Env env, Napi::Object exports);
}
