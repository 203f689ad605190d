// zecl's implementations of the Level Zero entry points it supports. The names drop the
// "ze" prefix on purpose: an internal function named like an API entry point would bind,
// through the loader's export of the same name, back into the loader and loop.
// Declared from entry_points.inc, each with the type of the loader's ze_pfn*_t (ze_ddi.h).
#pragma once

#include <ze_api.h>
#include <ze_ddi.h>

#include <new>
#include <type_traits>

namespace zecl::api {

// An entry point as the loader calls it: no C++ exception escapes into C (it would abort the
// host process), std::bad_alloc answers ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY and any other
// exception ZE_RESULT_ERROR_UNKNOWN. ddi.cpp hands out every entry of entry_points.inc so.
template <auto Fn>
struct Guarded;
template <class... A, ze_result_t (*Fn)(A...)>
struct Guarded<Fn> {
    static ze_result_t ZE_APICALL fn(A... args) noexcept {
        try {
            return Fn(args...);
        } catch (const std::bad_alloc&) {
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        } catch (...) {
            return ZE_RESULT_ERROR_UNKNOWN;
        }
    }
};
template <auto Fn>
inline constexpr auto guarded = &Guarded<Fn>::fn;

#define ZECL_TABLE(getter, table)
#define ZECL_ENTRY(object, name, since) std::remove_pointer_t<ze_pfn##object##name##_t> object##name;
#define ZECL_UNSUPPORTED_ENTRY(name, since)
#define ZECL_TABLE_END
#include "entry_points.inc"
#undef ZECL_TABLE
#undef ZECL_ENTRY
#undef ZECL_UNSUPPORTED_ENTRY
#undef ZECL_TABLE_END

}  // namespace zecl::api
