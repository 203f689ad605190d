#include "zp/runtime/ze.hpp"

#include <cstdio>

namespace zp::runtime {

const char* resultName(ze_result_t code) noexcept {
#define ZP_CASE(name) \
    case name: return #name
    switch (code) {
        ZP_CASE(ZE_RESULT_SUCCESS);
        ZP_CASE(ZE_RESULT_NOT_READY);
        ZP_CASE(ZE_RESULT_ERROR_DEVICE_LOST);
        ZP_CASE(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
        ZP_CASE(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
        ZP_CASE(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
        ZP_CASE(ZE_RESULT_ERROR_MODULE_LINK_FAILURE);
        ZP_CASE(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET);
        ZP_CASE(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE);
        ZP_CASE(ZE_RESULT_EXP_ERROR_DEVICE_IS_NOT_VERTEX);
        ZP_CASE(ZE_RESULT_EXP_ERROR_VERTEX_IS_NOT_DEVICE);
        ZP_CASE(ZE_RESULT_EXP_ERROR_REMOTE_DEVICE);
        ZP_CASE(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS);
        ZP_CASE(ZE_RESULT_ERROR_NOT_AVAILABLE);
        ZP_CASE(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE);
        ZP_CASE(ZE_RESULT_WARNING_DROPPED_DATA);
        ZP_CASE(ZE_RESULT_ERROR_UNINITIALIZED);
        ZP_CASE(ZE_RESULT_ERROR_UNSUPPORTED_VERSION);
        ZP_CASE(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        ZP_CASE(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_SIZE);
        ZP_CASE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        ZP_CASE(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_ENUMERATION);
        ZP_CASE(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION);
        ZP_CASE(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED);
        ZP_CASE(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);
        ZP_CASE(ZE_RESULT_ERROR_OVERLAPPING_REGIONS);
        ZP_CASE(ZE_RESULT_WARNING_ACTION_REQUIRED);
        ZP_CASE(ZE_RESULT_ERROR_UNKNOWN);
        default: break;
    }
#undef ZP_CASE
    // A result newer than the 1.4 headers: keep the numeric value visible.
    thread_local char unknown[48];
    std::snprintf(unknown, sizeof unknown, "ZE_RESULT_<unknown 0x%08x>", static_cast<unsigned>(code));
    return unknown;
}

namespace {
std::string composeMessage(ze_result_t code, const std::string& expression, const char* file, int line,
                           const std::string& extra) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", static_cast<unsigned>(code));
    std::string msg = std::string(resultName(code)) + " (" + hex + ") from " + expression + " at " +
                      (file ? file : "?") + ":" + std::to_string(line);
    if (!extra.empty()) msg += "\n" + extra;
    return msg;
}
}  // namespace

Error::Error(ze_result_t code, std::string expression, const char* file, int line, std::string extra)
    : std::runtime_error(composeMessage(code, expression, file, line, extra)),
      code_(code),
      expression_(std::move(expression)),
      file_(file ? file : ""),
      line_(line),
      extra_(std::move(extra)) {}

namespace detail {
void throwError(ze_result_t code, const char* expression, const char* file, int line, std::string extra) {
    throw Error(code, expression ? expression : "", file, line, std::move(extra));
}

void checkRange(size_t offset, size_t count, size_t size, const char* what) {
    if (offset > size || count > size - offset)
        throwError(ZE_RESULT_ERROR_INVALID_SIZE, what, __FILE__, __LINE__,
                   "range [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " + std::to_string(count) +
                       ") exceeds the buffer's " + std::to_string(size) + " elements; pass a smaller span or offset");
}
}  // namespace detail

}  // namespace zp::runtime
