// live_device.h in a CPU build: no device accumulator (the live context folds on the host).
#include "live/live_device.h"

#ifndef GAVEL_WITH_CUDA
#include "common/failure.h"

namespace gavel::live::device {

std::unique_ptr<DeviceLive> CreateDeviceLive(kernels::device::DeviceBank&, const float*, int64_t, int64_t) {
  throw Failure(Code::CUDA_UNAVAILABLE, "this addon was built without CUDA");
}

}  // namespace gavel::live::device
#endif
