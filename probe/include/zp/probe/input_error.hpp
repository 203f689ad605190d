// Bad user input: YAML configs, --set options, safetensors files, route files, requests.
// Tools catch it and exit with code 2 (README "Exit codes"); the facade maps its kind to a
// zeprobe::ErrorCode. Device and driver errors are runtime::Error (runtime/) and
// scheduler::UnsupportedDevice (scheduler/), exit 3.
#pragma once

#include <stdexcept>
#include <string>

namespace zp::probe {

// What is wrong, for callers that tell them apart (the facade's error codes) without reading
// the message.
enum class InputErrorKind {
    invalid,    // a value, size or format the contract does not allow
    not_found,  // a named thing is absent: a tensor of a safetensors file, say
};

// The message names the file (or option), the key or tensor, the bad value, and what is expected.
struct InputError : std::runtime_error {
    explicit InputError(const std::string& what, InputErrorKind kind = InputErrorKind::invalid)
        : std::runtime_error(what), kind_(kind) {}
    InputErrorKind kind() const noexcept { return kind_; }

private:
    InputErrorKind kind_;
};

}  // namespace zp::probe
