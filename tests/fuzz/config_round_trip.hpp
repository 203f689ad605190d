// Shared by the two config harnesses (fuzz_config, fuzz_config_set): what must hold of a
// config that validated, however it was made.
#pragma once

#include <string>

#include "fuzz_support.hpp"
#include "zp/probe/config.hpp"

namespace zp::fuzz {

// Its derived counts are computed without overflow (UBSan aborts otherwise), and toYaml writes
// it in a form that parses back equal.
inline void checkValidConfigRoundTrips(const zp::probe::Config& cfg) {
    volatile int derived = cfg.shape.maxRoutes();
    derived = cfg.shape.localExperts();
    derived = cfg.shape.firstLocalExpert();
    (void)derived;

    const std::string yaml = zp::probe::toYaml(cfg);
    zp::probe::Config back;
    try {
        back = zp::probe::parseConfig(yaml, "toYaml");
    } catch (const zp::probe::InputError& e) {
        ZP_FUZZ_CHECK(false, std::string("toYaml output does not parse back: ") + e.what() + "\n--- toYaml:\n" + yaml);
    }
    ZP_FUZZ_CHECK(back == cfg, "toYaml output parses back to a different config:\n" + yaml);
}

}  // namespace zp::fuzz
