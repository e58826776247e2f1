// device.h in a CPU build: no device, and saying why.
#include "kernels/device.h"

#ifndef GAVEL_WITH_CUDA
#include "common/failure.h"

namespace gavel::kernels::device {

bool Available(std::string* why) {
  if (why != nullptr) *why = "this addon was built without CUDA (GAVEL_CUDA=1 npm run build:native builds one with it)";
  return false;
}

std::unique_ptr<DeviceBank> CreateBank(int64_t) {
  throw Failure(Code::CUDA_UNAVAILABLE, "this addon was built without CUDA");
}

}  // namespace gavel::kernels::device
#endif
