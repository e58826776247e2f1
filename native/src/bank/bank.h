// The in-memory bank's N-API surface: the NativeBank class and glanceDevice().
#pragma once
#include <napi.h>

namespace gavel {
namespace bank {
class Bank;
}
void RegisterBank(Napi::Env env, Napi::Object exports);
// The live bank::Bank of a NativeBank passed as an argument named `name` (else INVALID_ARGUMENT,
// or DISPOSED for a disposed bank): the glance index (native/src/index) reads the bank through it.
bank::Bank& UnwrapBank(const Napi::Value& v, const char* name);
}
