/*
 * zecl source bundle: the ZE_MODULE_FORMAT_NATIVE input of libze_zecl.so.
 *
 * Layout (all integers little-endian, no padding):
 *   offset 0   8 bytes  magic "ZECLSRC1"
 *   offset 8   uint32   options length  (bytes, no terminator)
 *   offset 12  uint32   source length   (bytes, no terminator)
 *   offset 16  options bytes, then OpenCL C source bytes
 *
 * Header-only and C-compatible so that the kernel build (spirv/) and the driver share
 * one definition. Options are OpenCL build options (e.g. "-cl-std=CL1.2"); zecl appends
 * the module's pBuildFlags and "-cl-kernel-arg-info" when it builds.
 */
#ifndef ZECL_SOURCE_BUNDLE_H
#define ZECL_SOURCE_BUNDLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZECL_SOURCE_BUNDLE_MAGIC "ZECLSRC1"
#define ZECL_SOURCE_BUNDLE_MAGIC_SIZE 8u
#define ZECL_SOURCE_BUNDLE_HEADER_SIZE 16u

/* A parsed bundle: views into the caller's buffer, not NUL-terminated. */
typedef struct zecl_source_bundle_view {
    const char* options;
    uint32_t options_size;
    const char* source;
    uint32_t source_size;
} zecl_source_bundle_view;

static inline void zecl_bundle_put_u32le_(uint8_t* p, uint32_t v) {
    p[0] = (uint8_t)(v & 0xffu);
    p[1] = (uint8_t)((v >> 8) & 0xffu);
    p[2] = (uint8_t)((v >> 16) & 0xffu);
    p[3] = (uint8_t)((v >> 24) & 0xffu);
}

static inline uint32_t zecl_bundle_get_u32le_(const uint8_t* p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Bytes needed for a bundle holding the given options and source. */
static inline size_t zecl_source_bundle_size(size_t options_size, size_t source_size) {
    return ZECL_SOURCE_BUNDLE_HEADER_SIZE + options_size + source_size;
}

/*
 * Writes a bundle into out (capacity out_capacity). Returns the bytes written, or 0 when
 * the capacity is too small or a length does not fit in 32 bits.
 */
static inline size_t zecl_source_bundle_write(const char* options, size_t options_size, const char* source,
                                              size_t source_size, void* out, size_t out_capacity) {
    uint8_t* o = (uint8_t*)out;
    size_t total = zecl_source_bundle_size(options_size, source_size);
    if (options_size > 0xffffffffu || source_size > 0xffffffffu || out == NULL || out_capacity < total) return 0;
    memcpy(o, ZECL_SOURCE_BUNDLE_MAGIC, ZECL_SOURCE_BUNDLE_MAGIC_SIZE);
    zecl_bundle_put_u32le_(o + 8, (uint32_t)options_size);
    zecl_bundle_put_u32le_(o + 12, (uint32_t)source_size);
    if (options_size) memcpy(o + ZECL_SOURCE_BUNDLE_HEADER_SIZE, options, options_size);
    if (source_size) memcpy(o + ZECL_SOURCE_BUNDLE_HEADER_SIZE + options_size, source, source_size);
    return total;
}

/*
 * Parses a bundle. Returns 1 and fills view on success; 0 when the magic is wrong or the
 * lengths do not match the buffer size exactly (trailing bytes are rejected too, so a
 * truncated or padded bundle is caught rather than silently built).
 */
static inline int zecl_source_bundle_parse(const void* data, size_t size, zecl_source_bundle_view* view) {
    const uint8_t* p = (const uint8_t*)data;
    uint32_t opt_size, src_size;
    if (data == NULL || view == NULL || size < ZECL_SOURCE_BUNDLE_HEADER_SIZE) return 0;
    if (memcmp(p, ZECL_SOURCE_BUNDLE_MAGIC, ZECL_SOURCE_BUNDLE_MAGIC_SIZE) != 0) return 0;
    opt_size = zecl_bundle_get_u32le_(p + 8);
    src_size = zecl_bundle_get_u32le_(p + 12);
    if ((uint64_t)ZECL_SOURCE_BUNDLE_HEADER_SIZE + opt_size + src_size != (uint64_t)size) return 0;
    view->options = (const char*)(p + ZECL_SOURCE_BUNDLE_HEADER_SIZE);
    view->options_size = opt_size;
    view->source = (const char*)(p + ZECL_SOURCE_BUNDLE_HEADER_SIZE + opt_size);
    view->source_size = src_size;
    return 1;
}

#ifdef __cplusplus
} /* extern "C" */

#include <string>
#include <string_view>
#include <vector>

namespace zecl {

/* C++ convenience: build a bundle as a byte vector. */
inline std::vector<uint8_t> makeSourceBundle(std::string_view options, std::string_view source) {
    std::vector<uint8_t> out(zecl_source_bundle_size(options.size(), source.size()));
    zecl_source_bundle_write(options.data(), options.size(), source.data(), source.size(), out.data(), out.size());
    return out;
}

}  // namespace zecl
#endif

#endif /* ZECL_SOURCE_BUNDLE_H */
