#include "zp/scheduler/device_errors.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace zp::scheduler {

NoSuchDevice::NoSuchDevice(std::string spec, const runtime::Error& cause)
    : std::invalid_argument(cause.what()), spec_(std::move(spec)), cause_(cause) {}

std::string NoSuchDevice::reason() const {
    std::string why = cause_.extra();
    const std::string named = "device '" + spec_ + "': ";
    if (why.rfind(named, 0) == 0) why.erase(0, named.size());
    return why;
}

bool NoSuchDevice::wellFormed() const noexcept {
    std::string s = spec_;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (s.empty() || s == "intel" || s == "zecl") return true;
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

ZeFailure classify(const runtime::Error& error) noexcept {
    switch (error.code()) {
        case ZE_RESULT_ERROR_MODULE_BUILD_FAILURE:
        case ZE_RESULT_ERROR_MODULE_LINK_FAILURE:
        case ZE_RESULT_ERROR_INVALID_NATIVE_BINARY:
        case ZE_RESULT_ERROR_INVALID_KERNEL_NAME: return ZeFailure::KernelBuild;  // zeKernelCreate refused
        case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
        case ZE_RESULT_ERROR_UNSUPPORTED_VERSION: return ZeFailure::Unsupported;
        case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
        case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY: return ZeFailure::OutOfMemory;
        case ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE: return ZeFailure::NotFound;
        default: return ZeFailure::Device;
    }
}

}  // namespace zp::scheduler
