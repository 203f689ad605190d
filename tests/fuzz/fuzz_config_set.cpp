// Fuzz target: `--set key=value` overrides (zp::probe::applySet), bytes = one override per
// line, applied in order on top of the defaults, then validate() as ze-probe does after the
// last --set.
//
// Properties: only InputError escapes; every message starts with "--set"; a result that
// validates has derived counts computed without overflow and survives toYaml → parseConfig.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config_round_trip.hpp"
#include "fuzz_support.hpp"
#include "zp/probe/config.hpp"

using namespace zp::probe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    Config cfg;
    while (!rest.empty()) {
        const auto nl = rest.find('\n');
        const std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        try {
            applySet(cfg, line);
        } catch (const InputError& e) {
            ZP_FUZZ_CHECK(std::string(e.what()).rfind("--set", 0) == 0,
                          std::string("error without --set: ") + e.what());
        }
    }
    try {
        validate(cfg);
    } catch (const InputError&) {
        return 0;
    }
    zp::fuzz::checkValidConfigRoundTrips(cfg);
    return 0;
}
