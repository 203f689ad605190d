// The scheduler's device errors (a failed Level Zero call is runtime::Error, from runtime/).
#pragma once

#include <stdexcept>
#include <string>

#include "zp/runtime/ze.hpp"

namespace zp::scheduler {

// Tools exit 3 for a DeviceError or a runtime::Error (README "Exit codes").
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

// A tuning asked for that this device cannot build (not the packaged one, and the device does
// not build the zecl source bundle): the caller's to change. ze-probe exits 2 for it; the facade
// says ErrorCode::unsupported, as for any UnsupportedDevice.
struct TuningNotBuildable : UnsupportedDevice {
    using UnsupportedDevice::UnsupportedDevice;
};

// A device spec that names no device (runtime::selectDevice refused it with
// ZE_RESULT_ERROR_INVALID_ARGUMENT): the caller's input, not a device fault. what() is the
// runtime's message.
class NoSuchDevice : public std::invalid_argument {
public:
    NoSuchDevice(std::string spec, const runtime::Error& cause);

    const std::string& spec() const noexcept { return spec_; }
    const runtime::Error& cause() const noexcept { return cause_; }
    // The runtime's reason without its "device '<spec>': " prefix, e.g. "index 7 is out of range; ...".
    std::string reason() const;
    // The spec has one of selectDevice's forms ("", "intel", "zecl", an index) but names no
    // device here; false for a spec of no known form.
    bool wellFormed() const noexcept;

private:
    std::string spec_;
    runtime::Error cause_;
};

// What a failed Level Zero call means to a caller of the device stack: the one mapping of
// ze_result_t that the zeprobe facade's error codes are read from.
enum class ZeFailure { KernelBuild, Unsupported, OutOfMemory, NotFound, Device };
ZeFailure classify(const runtime::Error& error) noexcept;

}  // namespace zp::scheduler
