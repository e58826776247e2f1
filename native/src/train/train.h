// The NativeTrainer class (W_q / W_s contrastive training, paper §3.2 and appendix C), exposed to JS.
#pragma once
#include <napi.h>

namespace gavel {
void RegisterTrainer(Napi::Env env, Napi::Object exports);
}
