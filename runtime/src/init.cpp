#include "zp/runtime/ze.hpp"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>

#ifndef ZP_ZECL_BUILD_PATH
#define ZP_ZECL_BUILD_PATH ""
#endif
#ifndef ZP_INSTALL_LIBDIR
#define ZP_INSTALL_LIBDIR ""
#endif

namespace fs = std::filesystem;

namespace zp::runtime {
namespace {

constexpr const char* kZeclLibrary = "libze_zecl.so";
constexpr const char* kIntelLibrary = "libze_intel_gpu.so.1";

struct InitState {
    std::mutex mutex;
    bool done = false;
    ze_result_t result = ZE_RESULT_SUCCESS;
    std::string extra;
};

InitState& initState() {
    static InitState state;
    return state;
}

std::optional<std::string> existingAbsolute(const fs::path& candidate) {
    if (candidate.empty()) return std::nullopt;
    std::error_code ec;
    if (!fs::is_regular_file(candidate, ec)) return std::nullopt;
    fs::path abs = fs::absolute(candidate, ec);
    if (ec) return std::nullopt;
    return abs.lexically_normal().string();
}

fs::path executableDir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path{} : exe.parent_path();
}

std::optional<std::string> findIntelDriver() {
    // The directories ld.so searches on Debian/Ubuntu and common distributions.
    static const char* const dirs[] = {
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/local/lib",
        "/usr/lib",
        "/lib/x86_64-linux-gnu",
        "/lib64",
    };
    for (const char* dir : dirs)
        if (auto p = existingAbsolute(fs::path(dir) / kIntelLibrary)) return p;
    return std::nullopt;
}

}  // namespace

std::optional<std::string> findZeclLibrary(std::optional<std::string> zeclPath) {
    if (zeclPath) {
        if (auto p = existingAbsolute(*zeclPath)) return p;
        detail::throwError(ZE_RESULT_ERROR_INVALID_ARGUMENT, "zp::runtime::findZeclLibrary", __FILE__, __LINE__,
                           "zecl library '" + *zeclPath + "' does not exist; pass the path of libze_zecl.so");
    }
    if (const char* env = std::getenv("ZP_ZECL_PATH"); env && *env) {
        if (auto p = existingAbsolute(env)) return p;
        detail::throwError(ZE_RESULT_ERROR_INVALID_ARGUMENT, "zp::runtime::findZeclLibrary", __FILE__, __LINE__,
                           std::string("ZP_ZECL_PATH='") + env +
                               "' does not name an existing file; point it at libze_zecl.so or unset it");
    }
    if (fs::path dir = executableDir(); !dir.empty()) {
        for (const fs::path& sub : {fs::path("."), fs::path("../lib"), fs::path("../driver"), fs::path("../../driver")})
            if (auto p = existingAbsolute(dir / sub / kZeclLibrary)) return p;
    }
    if (auto p = existingAbsolute(ZP_ZECL_BUILD_PATH)) return p;
    if (*ZP_INSTALL_LIBDIR)
        if (auto p = existingAbsolute(fs::path(ZP_INSTALL_LIBDIR) / kZeclLibrary)) return p;
    return std::nullopt;
}

std::string defaultAltDrivers(std::optional<std::string> zeclPath) {
    std::string value;
    if (auto intel = findIntelDriver()) value = *intel;
    if (auto zecl = findZeclLibrary(std::move(zeclPath))) {
        if (!value.empty()) value += ',';
        value += *zecl;
    }
    if (value.empty())
        detail::throwError(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE, "zp::runtime::defaultAltDrivers", __FILE__, __LINE__,
                           std::string("found neither ") + kIntelLibrary + " nor " + kZeclLibrary +
                               "; install the Intel compute runtime or set ZP_ZECL_PATH");
    return value;
}

void init(const InitOptions& options) {
    InitState& s = initState();
    std::lock_guard lock(s.mutex);
    if (!s.done) {
        s.done = true;
        if (options.setAltDriversIfUnset) {
            const char* current = std::getenv("ZE_ENABLE_ALT_DRIVERS");
            if (!current || !*current) {
                // Nothing found → leave it unset: an empty value crashes the loader, and its
                // default list still finds the Intel driver where one is installed.
                std::optional<std::string> value;
                try {
                    value = defaultAltDrivers(options.zeclPath);
                } catch (const Error& e) {
                    if (e.code() != ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE) {
                        s.result = e.code();
                        s.extra = e.extra();
                    }
                }
                if (value) ::setenv("ZE_ENABLE_ALT_DRIVERS", value->c_str(), 1);
            }
        }
        if (s.result == ZE_RESULT_SUCCESS) {
            s.result = zeInit(options.flags);
            if (s.result != ZE_RESULT_SUCCESS) {
                const char* alt = std::getenv("ZE_ENABLE_ALT_DRIVERS");
                s.extra = std::string("no Level Zero driver initialised (ZE_ENABLE_ALT_DRIVERS=") +
                          (alt ? alt : "<unset>") +
                          "); install the Intel compute runtime or point ZE_ENABLE_ALT_DRIVERS at libze_zecl.so";
            }
        }
    }
    if (s.result != ZE_RESULT_SUCCESS) detail::throwError(s.result, "zeInit", __FILE__, __LINE__, s.extra);
}

}  // namespace zp::runtime
