// Bad user input: YAML configs, --set options, safetensors files, route files.
// Tools catch it and exit with code 2; anything else escaping is a bug (exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace zp::sched {

// The message names the file (or option), the key or tensor, the bad value, and what is expected.
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace zp::sched
