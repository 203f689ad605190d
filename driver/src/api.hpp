// zecl's implementations of the Level Zero entry points it supports. The names drop the
// "ze" prefix on purpose: an internal function named like an API entry point would bind,
// through the loader's export of the same name, back into the loader and loop.
// Declared from entry_points.inc, each with the type of the loader's ze_pfn*_t (ze_ddi.h).
#pragma once

#include <ze_api.h>
#include <ze_ddi.h>

#include <type_traits>

namespace zecl::api {

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
