// Reading a name from one of probe's catalogues (route patterns, variants): internal to probe/.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "zp/probe/input_error.hpp"

namespace zp::probe {

// The element of `all` named `name` (nameOf(e) == name); else an InputError
// "unknown <what> '<name>' (valid: a, b, c[, alsoValid])" listing every name in catalogue order.
template <class E, std::size_t N, class NameOf>
E parseCatalogueName(std::string_view name, const std::array<E, N>& all, NameOf nameOf, std::string_view what,
                     std::string_view alsoValid = {}) {
    for (E e : all)
        if (nameOf(e) == name) return e;
    std::string valid;
    for (E e : all) valid += (valid.empty() ? "" : ", ") + std::string(nameOf(e));
    if (!alsoValid.empty()) valid += ", " + std::string(alsoValid);
    throw InputError("unknown " + std::string(what) + " '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace zp::probe
