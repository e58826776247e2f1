// A Promise-returning AsyncWorker: Execute() runs `work` off the JS thread; a thrown Failure rejects
// the promise with a typed GavelError; `done` turns the result into a JS value on the JS thread.
// `settle`, when given, runs on the JS thread just before the promise settles either way (e.g. to
// mark the object idle again), so JS never sees the object idle before the promise settles.
#pragma once
#include <napi.h>
#include <functional>
#include <cstring>
#include <memory>
#include <string>
#include <vector>
#include "common/errors.h"

namespace gavel {

template <typename Result>
class PromiseWorker : public Napi::AsyncWorker {
 public:
  using Work = std::function<Result()>;
  using Done = std::function<Napi::Value(Napi::Env, Result&)>;
  using Settle = std::function<void()>;

  static Napi::Promise Start(Napi::Env env, Work work, Done done, Napi::Object keepAlive = Napi::Object(),
                             Settle settle = nullptr) {
    auto* w = new PromiseWorker(env, std::move(work), std::move(done));
    w->settle_ = std::move(settle);
    if (!keepAlive.IsEmpty()) w->keep_ = Napi::Persistent(keepAlive);
    Napi::Promise p = w->deferred_.Promise();
    w->Queue();
    return p;
  }

 protected:
  void Execute() override {
    try {
      result_ = work_();
    } catch (...) {
      std::string message;
      code_ = CurrentFailure(message);
      SetError(message);
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (settle_) settle_();
    try {
      deferred_.Resolve(done_(env, result_));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }
  void OnError(const Napi::Error& e) override {
    if (settle_) settle_();
    deferred_.Reject(MakeError(Env(), code_, e.Message()).Value());
  }

 private:
  PromiseWorker(Napi::Env env, Work work, Done done)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), work_(std::move(work)), done_(std::move(done)) {}
  Napi::Promise::Deferred deferred_;
  Work work_;
  Done done_;
  Result result_{};
  Code code_ = Code::INTERNAL;
  Napi::ObjectReference keep_;
  Settle settle_;
};

// Copies of typed arrays taken on the JS thread, so worker threads never touch JS memory.
template <typename T, typename TA>
std::vector<T> CopyTyped(const TA& arr) {
  return std::vector<T>(arr.Data(), arr.Data() + arr.ElementLength());
}

template <typename T>
Napi::TypedArrayOf<T> ToTyped(Napi::Env env, const std::vector<T>& v) {
  auto out = Napi::TypedArrayOf<T>::New(env, v.size());
  if (!v.empty()) std::memcpy(out.Data(), v.data(), v.size() * sizeof(T));
  return out;
}

}  // namespace gavel
