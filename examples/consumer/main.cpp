// Embeds the MoE chain through the installed zeprobe package: open a device, load a random
// layer at a small shape, run one decode step, print out[0] and a hash of the whole output.
//   consumer [device] [--no-configure-loader]
//     device: "" (default: first Intel GPU, else first zecl device), "intel", "zecl" or an index;
//     --no-configure-loader: leave ZE_ENABLE_ALT_DRIVERS alone (by default the library sets it,
//     when unset, to the Intel driver + the zecl installed next to libzeprobe).
#include <zeprobe/zeprobe.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    try {
        zeprobe::DeviceOptions options;
        for (int a = 1; a < argc; ++a) {
            if (std::string(argv[a]) == "--no-configure-loader")
                options.configureLoader = false;
            else
                options.device = argv[a];
        }
        zeprobe::Device device(options);
        // 2 rows x top-6 over 48 experts on 4 cards: this card (0) owns experts 0..11.
        const zeprobe::Shape shape{.hidden = 128, .intermediate = 64, .experts = 48};
        zeprobe::Layer layer = zeprobe::Layer::random(device, shape, /*seed=*/7);
        zeprobe::Chain chain(layer, "baseline");

        std::vector<std::uint16_t> hidden(2 * 128);  // BF16 bits
        for (std::size_t i = 0; i < hidden.size(); ++i)
            hidden[i] = std::uint16_t(((i % 3 == 0) ? 0xBE00 : 0x3E00) + (i * 37) % 256);
        const std::vector<std::int32_t> ids = {0, 5, 11, 12, 30, 47,   // row 0: 3 local routes
                                               5, 5, 2,  20, 40, 13};  // row 1: expert 5 twice
        const std::vector<float> weights = {0.3f, 0.2f, 0.1f, 0.1f, 0.2f, 0.1f, 0.25f, 0.25f, 0.5f, 0.0f, 0.0f, 0.0f};
        const std::vector<std::uint16_t> out = chain.forward(hidden, ids, weights);

        std::uint64_t hash = 1469598103934665603ull;  // FNV-1a over the output's bytes
        for (std::uint16_t v : out)
            for (int b = 0; b < 2; ++b) hash = (hash ^ ((v >> (8 * b)) & 0xFF)) * 1099511628211ull;
        std::printf("device: %s (%s)\n", device.info().name.c_str(), device.info().driver.c_str());
        for (const auto& t : chain.kernelTimings()) std::printf("  %-20s %10.0f ns\n", t.kernel.c_str(), t.ns);
        std::printf("out[0] = 0x%04x\nout fnv1a = 0x%016llx\n", out[0], static_cast<unsigned long long>(hash));
        return 0;
    } catch (const zeprobe::Error& e) {
        std::fprintf(stderr, "zeprobe error (%s): %s\n", zeprobe::errorCodeName(e.code()), e.what());
        return 1;
    }
}
