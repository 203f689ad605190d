// Fuzz target: the safetensors reader (zp::probe::parseSafetensors, readSafetensors).
//
// Properties, for any bytes: both readers either throw InputError or return a TensorMap
// (anything else escaping is a bug, and ends the run through std::terminate); both agree;
// every tensor holds elements × dtype size bytes; and what was read, written again by
// serializeSafetensors, reads back equal.
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "fuzz_support.hpp"
#include "zp/probe/safetensors.hpp"

using namespace zp::probe;

namespace {

struct Read {
    bool ok = false;
    std::string error;
    TensorMap tensors;
    std::map<std::string, std::string> metadata;
};

template <class F>
Read attempt(F&& read) {
    Read r;
    try {
        r.tensors = read(r.metadata);
        r.ok = true;
    } catch (const InputError& e) {
        r.error = e.what();
    }
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::uint8_t> file(data, size);
    const Read parsed = attempt([&](auto& meta) { return parseSafetensors(file, "fuzz.safetensors", meta); });

    // readSafetensors walks the file its own way (header first, then each tensor at its offset).
    static zp::fuzz::MemFile mem;
    const std::string& path = mem.write(file);
    const Read read = attempt([&](auto& meta) { return readSafetensors(path, meta); });
    ZP_FUZZ_CHECK(parsed.ok == read.ok,
                  "parseSafetensors and readSafetensors disagree on whether the file is valid: '" + parsed.error +
                      "' vs '" + read.error + "'");
    if (!parsed.ok) {
        ZP_FUZZ_CHECK(parsed.error.rfind("fuzz.safetensors: ", 0) == 0,
                      "error does not start with the file name: " + parsed.error);
        return 0;
    }
    ZP_FUZZ_CHECK(parsed.tensors == read.tensors && parsed.metadata == read.metadata,
                  "parseSafetensors and readSafetensors return different contents");

    for (const auto& [name, t] : parsed.tensors) {
        ZP_FUZZ_CHECK(name != "__metadata__", "a tensor named __metadata__");
        ZP_FUZZ_CHECK(t.bytes.size() == t.elements() * dtypeSize(t.dtype),
                      "tensor '" + name + "' has the wrong byte count");
    }

    // The writer pads the header and orders the tensors, so the bytes may differ; the contents may not.
    const auto again = serializeSafetensors(parsed.tensors, parsed.metadata);
    const Read back = attempt([&](auto& meta) { return parseSafetensors(again, "rewritten", meta); });
    ZP_FUZZ_CHECK(back.ok, "a file written from what was read does not read back: " + back.error);
    ZP_FUZZ_CHECK(back.tensors == parsed.tensors && back.metadata == parsed.metadata,
                  "a rewritten file reads back different");
    return 0;
}
