// Fuzz target: sweep files (zp::probe::parseSweep + expandSweep), bytes = the file's text.
// base_config resolves against a scratch directory holding one valid config, base.yaml.
//
// Properties: only InputError escapes; a plan has one point per element of the cross
// product, with distinct ids, and every point's config passes validate() and yields the
// shape's derived counts without overflow (UBSan aborts otherwise).
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "fuzz_support.hpp"
#include "zp/probe/sweep.hpp"

using namespace zp::probe;

namespace {

#ifdef ZP_LIBFUZZER
constexpr std::size_t kMaxFuzzedPoints = 2000;
#else
constexpr std::size_t kMaxFuzzedPoints = kMaxSweepPoints;  // replay: every committed input in full
#endif

std::filesystem::path scratchDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "zp-fuzz-sweep-XXXXXX").string();
    if (!::mkdtemp(templ.data())) {
        std::perror("mkdtemp");
        std::abort();
    }
    const std::filesystem::path dir(templ);
    std::ofstream(dir / "base.yaml") << "hidden: 128\nintermediate: 64\nexperts: 8\ntop_k: 2\ncards: 2\n";
    static std::filesystem::path toRemove;
    toRemove = dir;
    std::atexit([] {
        std::error_code ignored;
        std::filesystem::remove_all(toRemove, ignored);
    });
    return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::filesystem::path dir = scratchDir();
    const std::string text(reinterpret_cast<const char*>(data), size);
    SweepPlan plan;
    std::size_t expected = 1;
    try {
        const SweepSpec spec = parseSweep(text, "fuzz_sweep.yaml", dir);
        for (const auto& a : spec.axes)
            expected = std::min(expected * std::max<std::size_t>(a.values.size(), 1), kMaxSweepPoints + 1);
        // Expansion costs a YAML parse per axis value per point (about 100 us each under ASan): a
        // plan of 10^5 points takes over 10 s here, a fuzzing timeout that is no bug. While fuzzing,
        // big plans are only checked to be rejected past kMaxSweepPoints; replay_sweep expands them
        // (corpus/sweep/valid_large).
        if (expected > kMaxFuzzedPoints && expected <= kMaxSweepPoints) return 0;
        plan = expandSweep(spec);
    } catch (const InputError& e) {
        ZP_FUZZ_CHECK(std::string(e.what()).rfind("fuzz_sweep.yaml", 0) == 0,
                      std::string("error without the file name: ") + e.what());
        return 0;
    }
    ZP_FUZZ_CHECK(plan.points.size() == expected, "the plan is not the cross product of the axes");
    std::set<std::string> ids;
    for (const SweepPoint& p : plan.points) {
        ZP_FUZZ_CHECK(ids.insert(p.id).second, "two points share the id " + p.id);
        try {
            validate(p.config);
        } catch (const InputError& e) {
            ZP_FUZZ_CHECK(false, "point " + p.id + " of an expanded plan does not validate: " + e.what());
        }
        volatile int derived = p.config.shape.maxRoutes();
        derived = p.config.shape.localExperts();
        derived = p.config.shape.firstLocalExpert();
        (void)derived;
    }
    return 0;
}
