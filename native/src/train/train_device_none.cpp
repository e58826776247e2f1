// train_device.h in a CPU build: no device, and saying why.
#include "train/train_device.h"

#ifndef GAVEL_WITH_CUDA
#include "common/failure.h"

namespace gavel::train::device {

bool Available(std::string* why) {
  if (why != nullptr) *why = "this addon was built without CUDA (GAVEL_CUDA=1 npm run build:native builds one with it)";
  return false;
}

std::unique_ptr<DeviceTrainer> Create(int64_t, int64_t, Precision) {
  throw Failure(Code::CUDA_UNAVAILABLE, "the CUDA trainer is unavailable: this addon was built without CUDA");
}

}  // namespace gavel::train::device
#endif
