// Fuzz target: the YAML config loader (zp::probe::parseConfig), bytes = the file's text.
//
// Properties: only InputError escapes (a yaml-cpp exception or std::invalid_argument
// escaping is a bug); every message starts with the file name; a config that validates
// has a shape whose derived counts (ChainShape::maxRoutes, localExperts, firstLocalExpert)
// are computed without overflow (UBSan aborts otherwise); toYaml writes it in a form that
// parses back equal, and toJson serialises it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config_round_trip.hpp"
#include "fuzz_support.hpp"
#include "zp/probe/config.hpp"

using namespace zp::probe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    Config cfg;
    try {
        cfg = parseConfig(text, "fuzz.yaml");
    } catch (const InputError& e) {
        ZP_FUZZ_CHECK(std::string(e.what()).rfind("fuzz.yaml", 0) == 0,
                      std::string("error without the file name: ") + e.what());
        return 0;
    }
    zp::fuzz::checkValidConfigRoundTrips(cfg);
    (void)toJson(cfg).dump();
    return 0;
}
