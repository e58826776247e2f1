// A failure detected off the JS thread (a worker, a CUDA stream), carried to the JS thread with its
// code. Free of N-API, so CUDA sources can throw it too.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

namespace gavel {

struct Failure : std::runtime_error {
  std::string code;
  Failure(std::string code_, const std::string& message) : std::runtime_error(message), code(std::move(code_)) {}
};

}  // namespace gavel
