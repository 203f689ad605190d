// `ze-probe --sweep FILE`: every point of a sweep (sweep.hpp) timed on the device.
//
// A point measures one (shape, card, route pattern, variant): it uploads the pattern's case
// v0 (CONTRACT §7 input variant 0, seed from the point's config), replays warm-ups, then
// `repeats` rounds of baseline and the point's variant interleaved (A B A B; variant
// baseline is the A/A control, the same chain twice a round), and returns the median device
// and host times, the projected saving over `layers` with its 95% bootstrap CI, whether the
// CI's lower end clears gate.min_saving_ms, and the correctness of that one timed case for
// both chains against the host oracle, bit for bit (not the pattern's 12 cases: the full
// case set is the job of a plain ze-probe run). A point without a pattern axis times
// six_local; one without a variant axis times baseline against itself.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "zp/scheduler/kernel_tuning.hpp"

namespace zp::app {

struct SweepCliOptions {
    std::string file;
    std::string device;                             // as --device
    std::optional<scheduler::KernelTuning> tuning;  // as --kernel-tuning (none: the device's recommended)
    std::string outDir;                             // <out>/<sweep name>.jsonl and .csv
    bool resume = false, overwrite = false;
    std::optional<int> repeats, warmup;  // override the sweep file's
    std::function<void()> initDevices;   // called once before the first device is opened
    std::string shard;                   // "K/N": run only that slice of the points (sweep.hpp)
};

// Returns the exit code: 0, or 1 when a point's case did not match the oracle. Throws
// probe::InputError on a bad sweep file or output directory.
int runSweep(const SweepCliOptions&);

// `ze-probe sweep-merge DIR... [-o OUT]`: the shards' rows as one sweep in OUT (<name>.jsonl and
// .csv). Returns 0, or 1 when points are missing (listed on stderr; the merge is still
// written). Throws probe::InputError on overlapping shards, differing plans or existing output.
int runSweepMerge(const std::vector<std::string>& dirs, const std::string& outDir);

}  // namespace zp::app
