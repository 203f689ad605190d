// The scheduler's device errors (a failed Level Zero call is ze::Error, from runtime/).
#pragma once

#include <stdexcept>

namespace zp::sched {

// Tools exit 3 for a DeviceError or a ze::Error (README "Exit codes").
struct DeviceError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// This device cannot run the kernel package as asked: no module format it takes, an artifact
// the package lacks, or a tuning that needs the source bundle (a --kernel-tuning the device
// cannot build is bad input to ze-probe, exit 2). The facade says ErrorCode::unsupported.
struct UnsupportedDevice : DeviceError {
    using DeviceError::DeviceError;
};

// The device's results break an invariant the kernels keep (a route count out of range, say).
// The facade says ErrorCode::device.
struct DeviceFault : DeviceError {
    using DeviceError::DeviceError;
};

// A variant this device cannot run safely: one_launch where the driver does not answer
// zeKernelSuggestMaxCooperativeGroupCount (no promise that its groups are resident at once;
// running it anyway could hang). what() is the reason, "one_launch is not valid on this
// device: ...".
class VariantNotValid : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace zp::sched
