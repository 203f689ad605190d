// Sweeps: `ze-probe --sweep configs/sweeps/NAME.yaml`. A sweep file names axes of values;
// the cross product of the axes is a list of points, each one configuration to measure.
//
//   sweep:
//     name: gate                          # optional; default: the file's stem
//     base_config: ../deepseek-v4-flash.yaml   # optional, relative to the sweep file; default: §1 defaults
//     set: {layers: 43, swiglu.limit: 7}  # optional config keys applied to the base (nested or dotted)
//     axes:                               # at least one; the last axis varies fastest
//       hidden: [2048, 4096]              # any config key (dotted for nested: swiglu.limit), a non-empty list
//       pattern: all                      # CONTRACT §6 route patterns: a list, or `all`
//       variant: [baseline, paired_epilogue]   # DESIGN.md chain variants: a list, or `all`
//       card: [0]                         # the config key `card` (which card plays); `cards` is the card count
//     repeats: 50                         # timed repetitions per point (default 50)
//     warmup: 5                           # untimed repetitions first (default 5)
//
// Each point is the base config + set + its axis values (as `--set key=value` would apply
// them), validated with config.hpp's rules. Parsing is strict: unknown keys, wrong types,
// empty axes, duplicate values, bad pattern/variant names and bad config values are
// InputErrors naming the file, line:column and key path; a point that fails cross-key
// validation (card >= cards, experts % cards, ...) is rejected by expandSweep, naming the
// point, before anything runs. A point whose route pattern cannot be formed for its
// configuration (§6) is kept and marked not valid: the runner records it without measuring.
//
// SweepRunner appends one row per point to a JSON Lines file and a CSV as it goes (each row
// written with one write() and fsync'd), so a killed sweep loses at most the point in
// flight; with resume it reads the JSONL back, drops a torn last line, skips the points
// already there and continues. The JSONL is the record; the CSV is rebuilt from it on resume.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "zp/probe/cases.hpp"
#include "zp/probe/config.hpp"
#include "zp/probe/variant.hpp"

namespace zp::probe {

struct SweepAxis {
    std::string key;                  // "pattern", "variant" or a config key path ("hidden", "swiglu.limit")
    std::vector<std::string> values;  // canonical text: "4096", "7.0", "six_local"
};

struct SweepSpec {
    std::string name;
    std::string file;  // for messages
    Config base;       // base_config + set, not yet validated with the axes applied
    std::vector<SweepAxis> axes;
    int repeats = 50, warmup = 5;
};

// Throws InputError naming file:line:column and the key path. `baseDir` resolves base_config.
SweepSpec parseSweep(const std::string& yamlText, const std::string& nameForErrors,
                     const std::filesystem::path& baseDir);
SweepSpec loadSweep(const std::filesystem::path&);

struct SweepPoint {
    std::size_t index = 0;                                  // position in the plan
    std::string id;                                         // "hidden=4096,pattern=six_local,variant=baseline,card=0"
    std::vector<std::pair<std::string, std::string>> keys;  // (axis, value) in axis order
    Config config;                                          // validated
    std::optional<RoutePattern> pattern;                    // absent: no pattern axis (the measurement chooses)
    std::optional<Variant> variant;                         // absent: no variant axis
    std::optional<std::string> notValid;                    // §6 reason the pattern cannot be formed here
    int repeats = 50, warmup = 5;
};

struct SweepPlan {
    std::string name;
    std::vector<std::string> axisKeys;
    std::vector<SweepPoint> points;
    // Sharded plans (shardPlan): every id of the whole plan in order, and "K/N"; empty otherwise.
    std::vector<std::string> allIds;
    std::string shard;
    // What decides a point's result besides its id (written to the plan file, compared on
    // --resume and by sweep-merge): {"config": the base config with the sweep's `set` applied
    // (base_config's contents, not its name), "repeats", "warmup"}; the tool adds its own
    // settings ("kernel_tuning"). `device` (the --device given) is compared on --resume only:
    // shards of one sweep may run on different devices of one kind.
    nlohmann::json settings = nlohmann::json::object();
    std::string device;
};

inline constexpr std::size_t kMaxSweepPoints = 100000;

// The cross product, first axis slowest. Throws InputError naming the first point that fails
// validation (and how many more do), or when the product exceeds kMaxSweepPoints.
SweepPlan expandSweep(const SweepSpec&);

struct SweepProgress {
    std::size_t done = 0, total = 0;   // points with a row, of all points (resumed ones included)
    std::size_t resumed = 0;           // rows found in the JSONL at the start
    double elapsedS = 0;               // since run() began
    std::optional<double> etaS;        // from the mean time of points measured in this run
    const SweepPoint* last = nullptr;  // the point just written
};

struct SweepRunOptions {
    std::filesystem::path jsonlPath, csvPath;
    bool resume = false;     // continue an existing JSONL (its ids must be points of this plan)
    bool overwrite = false;  // start afresh over an existing JSONL; with neither, an existing non-empty one is an error
    // <dir>/<name>.plan.json (writeSweepPlanFile), written by run() once every check has passed;
    // on resume the one there must be of this plan (checkSweepPlanFile). Empty: none.
    std::filesystem::path planDir;
    std::function<void(const SweepProgress&)> progress;
};

// One JSONL row: {"sweep", "id", "index", "point": {axis: value}, "status": "ok"|"not_valid",
// "reason"?, "elapsed_s", "config", "result"?}.
// CSV columns: id, the axis keys, status, reason, elapsed_s, then the result's fields
// flattened (nested objects as a.b, arrays as JSON text), fixed by the first measured row;
// a result field missing from a later row is left empty, one not in the header is only in the JSONL.
class SweepRunner {
public:
    using Measure = std::function<nlohmann::json(const SweepPoint&)>;

    SweepRunner(SweepPlan plan, SweepRunOptions options);

    // Measures every point without a row. An exception from `measure` propagates after the
    // rows already written are on disk; run again with resume to continue.
    // Returns every row of the sweep in plan order.
    std::vector<nlohmann::json> run(const Measure& measure);

    const SweepPlan& plan() const { return plan_; }

private:
    SweepPlan plan_;
    SweepRunOptions opts_;
};

// Reads a sweep JSONL: every complete row, in file order. A last line without its newline
// or that does not parse is a torn write: it is dropped, and when `truncateTorn` the file
// is cut back to the end of the last good row. A bad line before the last is an InputError.
std::vector<nlohmann::json> readSweepRows(const std::filesystem::path& jsonl, bool truncateTorn);

// One line per point in plan order: id, status, and the key figures of its result (`fields`,
// dotted paths; empty: the first four numeric top-level fields of the first measured row).
std::string formatSweepSummary(const SweepPlan&, const std::vector<nlohmann::json>& rows,
                               const std::vector<std::string>& fields = {});

// "[#######.......]  12/28  43%  1m05s elapsed, ETA 1m24s  hidden=4096,..." for a tool's stderr.
std::string formatSweepProgress(const SweepProgress&, int barWidth = 30);

// ---------------------------------------------------------------- scaling out
//
// `--shard K/N` runs a deterministic slice of a plan: the points whose index % N == K-1
// (round-robin, so each shard gets its share of every shape and no coordinator is needed: a
// Slurm array, GNU parallel or one process per GPU each run one K). Each shard writes its
// rows as usual plus `<name>.plan.json` (the whole plan's ids and which shard it ran);
// mergeSweepShards joins the shard directories back into one sweep.

struct SweepShard {
    std::size_t k = 1, n = 1;  // 1 <= k <= n
};
// "K/N" with 1 <= K <= N <= 4096; anything else is an InputError naming the text.
SweepShard parseSweepShard(const std::string& text);
// The shard's points, renumbered 0.. for the runner (their ids unchanged); allIds and shard set.
SweepPlan shardPlan(const SweepPlan& whole, SweepShard shard);
// <dir>/<plan.name>.plan.json: {"sweep", "axes", "shard", "settings", "device", "points": [every id of
// the whole plan]}.
void writeSweepPlanFile(const std::filesystem::path& dir, const SweepPlan& plan);
// Before resuming into `dir`: its plan file must be of this plan (sweep, axes, points, shard,
// settings and device). InputError naming the file and each difference ("settings.config.hidden:
// 256 in the plan file, 512 now"); also when the file is missing or predates the settings.
void checkSweepPlanFile(const std::filesystem::path& dir, const SweepPlan& plan);

struct SweepMerge {
    std::string name;
    std::vector<std::string> axisKeys;
    std::vector<nlohmann::json> rows;  // plan order, "index" = the whole plan's index
    std::vector<std::string> missing;  // ids of the whole plan with no row in any shard
    std::size_t total = 0;             // points of the whole plan
};
// Reads every <name>.plan.json and its <name>.jsonl in `dirs` (one sweep). InputError when a
// directory is given twice (by filesystem identity), holds no plan file, the plans differ in
// anything but the shard index (sweep, axes, points, settings, the shard count; naming both
// directories and the difference), a row is not a point of the plan, or two shards hold the same
// point (overlapping shards: naming both files).
SweepMerge mergeSweepShards(const std::vector<std::filesystem::path>& dirs);
// Writes rows as the runner does (JSON Lines and the derived CSV); refuses existing files.
void writeSweepFiles(const std::filesystem::path& jsonl, const std::filesystem::path& csv,
                     const std::vector<std::string>& axisKeys, const std::vector<nlohmann::json>& rows);

}  // namespace zp::probe
