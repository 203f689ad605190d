// A table of bad inputs to ze-probe: CLI options, YAML configs and sweeps, safetensors files
// and routes. Each row is a ze-probe run (the binary, as a user runs it) that must end with
// exit code 2 (bad input) and a message naming what was wrong. The files are written by the
// test into a temporary directory; rows run with --device host, or (sweeps, which refuse the
// host) fail while the sweep file is read, before any device is opened, so the table needs no device. Rows already in
// test_ze_probe.cpp (ZeProbeBadInput) are not repeated.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "probe_support.hpp"
#include "zp/probe/case_io.hpp"
#include "zp/probe/cases.hpp"
#include "zp/probe/file_io.hpp"
#include "zp/probe/safetensors.hpp"

namespace fs = std::filesystem;
using namespace zp;

namespace {

using Bytes = std::vector<std::uint8_t>;

const std::string kShape = std::string(kReducedShapeArgs) + " --device host ";

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

// u64 LE header length, header, data: no checks, so any header can be written.
// Sized once: growing an 8-byte vector by insert made gcc 12 -O2 warn (-Warray-bounds, a false
// positive in its inlined reallocation).
Bytes rawSafetensors(const std::string& header, const Bytes& data) {
    Bytes f(8 + header.size() + data.size());
    const std::uint64_t n = header.size();
    std::memcpy(f.data(), &n, 8);
    std::copy(header.begin(), header.end(), f.begin() + 8);
    std::copy(data.begin(), data.end(), f.begin() + 8 + std::ptrdiff_t(header.size()));
    return f;
}

// A valid file split into its header JSON and data, so that a row can change one thing.
struct Split {
    nlohmann::json header;
    Bytes data;
    Bytes write() const { return rawSafetensors(header.dump(), data); }
};
Split split(const probe::TensorMap& t) {
    const Bytes f = probe::serializeSafetensors(t);
    std::uint64_t n = 0;
    std::memcpy(&n, f.data(), 8);
    return {nlohmann::json::parse(f.begin() + 8, f.begin() + 8 + std::ptrdiff_t(n)),
            Bytes(f.begin() + 8 + std::ptrdiff_t(n), f.end())};
}

probe::Case validCase() { return probe::makeCase(reducedShape(), probe::RoutePattern::SixLocal, 0, 1, nullptr); }
Split validInputs() { return split(probe::inputTensors(reducedShape(), validCase().inputs)); }
Split validWeights() {
    const auto s = reducedShape();
    return split(probe::weightsTensors(s, probe::makeRandomWeights(s, 3), ""));
}
// Inputs with one change to the routes.
Bytes inputsWith(const std::function<void(oracle::ChainInputs&)>& edit, oracle::ChainShape s = reducedShape()) {
    auto c = validCase();
    edit(c.inputs);
    return probe::serializeSafetensors(probe::inputTensors(s, c.inputs));
}

// A result file kept as test data (ZP_TOOLS_TEST_DATA) with one change, as a user's editor or a
// damaged copy leaves it.
Bytes resultWith(const std::string& file, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(std::string(ZP_TOOLS_TEST_DATA) + "/" + file));
    edit(j);
    return text(j.dump(1));
}
Bytes cardWith(const std::function<void(nlohmann::json&)>& edit) {
    return resultWith("card0_h200_stream_gate.json", edit);
}
const std::string kNotCard3 = "not a card of schema 3 as ze-probe writes it (docs/card.schema.json): ";

struct Row {
    const char* name;
    std::vector<std::pair<std::string, std::function<Bytes()>>> files;  // written into the row's directory
    std::string args;                                                   // "@" = the row's directory
    int exitCode;
    std::string fragment;  // "@" = the row's directory
    friend void PrintTo(const Row& r, std::ostream* os) { *os << r.name << ": ze-probe " << r.args; }
};

std::string expand(std::string s, const std::string& dir) {
    for (std::size_t at; (at = s.find('@')) != std::string::npos;) s.replace(at, 1, dir);
    return s;
}

struct Result {
    bool exited = false;
    int exitCode = -1;
    std::string output;
};

// Runs ze-probe in `dir` (so that nothing lands in the source tree) through sh for the quoting.
Result runProbe(const std::string& args, const fs::path& dir) {
    const fs::path log = dir / "probe.log";
    const std::string cmd =
        "cd '" + dir.string() + "' && exec " + ZE_PROBE_EXE + " " + args + " >'" + log.string() + "' 2>&1";
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    int status = 0;
    Result r;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return r;
    r.exited = WIFEXITED(status);
    r.exitCode = r.exited ? WEXITSTATUS(status) : -1;
    std::ifstream f(log);
    std::stringstream s;
    s << f.rdbuf();
    r.output = s.str();
    return r;
}

const char* kSweepHead = "sweep:\n  name: bad\n  set: {hidden: 128, intermediate: 64, experts: 48}\n";

std::vector<Row> rows() {
    std::vector<Row> v = {
        // --- CLI options
        {"RepeatsNegative", {}, "--repeats -1 --device host", 2, "--repeats -1: out of range [1, 100000]"},
        {"RepeatsNotANumber",
         {},
         "--repeats abc --device host",
         2,
         "--repeats 'abc': not a decimal integer in [1, 100000]"},
        {"RepeatsFraction", {}, "--repeats 2.5 --device host", 2, "--repeats '2.5': not a decimal integer"},
        {"WarmupNotANumber",
         {},
         "--warmup abc --device host",
         2,
         "--warmup 'abc': not a decimal integer in [0, 100000]"},
        {"WarmupAboveMaximum", {}, "--warmup 100001 --device host", 2, "--warmup 100001: out of range [0, 100000]"},
        {"BlocksOne", {}, "--blocks 1 --device host", 2, "--blocks 1: out of range [2, 10000]"},
        {"BlocksNotANumber", {}, "--blocks x --device host", 2, "--blocks 'x': not a decimal integer"},
        {"GateRepeatNotANumber",
         {},
         "--gate-repeat two --device host",
         2,
         "--gate-repeat 'two': not a decimal integer in [2, 100]"},
        {"CardsNotANumber", {}, "--cards x --device host", 2, "--cards 'x': not a decimal integer"},
        {"CardsOutOfRange", {}, "--cards 9 --device host", 2, "card = 9: must be in [0, cards) = [0, 4)"},
        {"CardsAtOnceOneCard",
         {},
         "--cards 1 --cards-at-once --device host",
         2,
         "--cards-at-once plays several cards at once: give them with --cards"},
        {"CardsAtOnceOnHost",
         {},
         "--cards 0,1 --cards-at-once --device host",
         2,
         "--cards-at-once plays the cards at once on a device: not with --device host"},
        {"RoutePatternEmpty", {}, "--route-pattern '' --device host", 2, "--route-pattern '': an empty value"},
        // An empty value never reads as the option left out (--shard "" once ran the whole sweep).
        {"ShardEmptyAfterSweep",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {variant: [baseline]}\n"); }}},
         "--sweep @/s.yaml --shard '' --out @/o",
         2,
         "--shard '': an empty value"},
        // A bad --shard is named before the sweep file is read (one of 100,000 values took seconds).
        {"ShardOutOfRangeBeforeTheSweep",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {variant: [nope]}\n"); }}},
         "--sweep @/s.yaml --shard 1/100000 --out @/o",
         2,
         "--shard 1/100000: N must be in [1, 4096]"},
        {"ReportEmpty", {}, "--report '' --device host", 2, "--report '': an empty value"},
        {"TraceEmpty", {}, "--trace '' --device host", 2, "--trace '': an empty value"},
        {"DumpEmpty", {}, "--dump '' --device host", 2, "--dump '': an empty value"},
        {"VariantEmpty", {}, "--variant '' --device host", 2, "--variant '': an empty value"},
        {"KernelTuningEmpty", {}, "--kernel-tuning '' --no-timing", 2, "--kernel-tuning '': an empty value"},
        {"OutEmpty", {}, "--out '' --device host", 2, "--out '': an empty value"},
        {"CardsEmpty", {}, "--cards '' --device host", 2, "--cards '': an empty value"},
        {"BlockIsolationEmpty", {}, "--block-isolation '' --device host", 2, "--block-isolation"},
        {"VariantList", {}, "--variant baseline,paired --device host", 2, "unknown variant 'baseline,paired'"},
        {"PositionalArgument", {}, "--device host extra_positional", 2, "extra_positional"},
        {"InputsWithoutValue", {}, "--inputs", 2, "--inputs"},
        {"SweepWithSet",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {variant: [baseline]}\n"); }}},
         "--sweep @/s.yaml --set hidden=128 --out @/o",
         2,
         "--set"},
        {"SetEmptyKey", {}, "--set =5 --device host", 2, "--set \"=5\": expected key=value"},
        {"SetEmptyValue", {}, "--set hidden= --device host", 2, "hidden: got no value, expected an integer"},
        {"SetNegativeHidden",
         {},
         "--set hidden=-32 --device host",
         2,
         "hidden: -32: must be a positive multiple of 32"},
        {"SetHugeHidden",
         {},
         "--set hidden=99999999999999999999 --device host",
         2,
         "hidden: 99999999999999999999: out of range"},
        {"SetTopKZero", {}, "--set top_k=0 --device host", 2, "top_k: 0: must be at least 1"},
        {"SetCardsZero", {}, "--set cards=0 --device host", 2, "cards: 0: must be at least 1"},
        {"SetExpertsNotMultipleOfCards",
         {},
         "--set experts=50 --device host",
         2,
         "experts = 50: must be a positive multiple of cards (4)"},
        {"SetRoutesOverflow",
         {},
         "--set rows=3 --set top_k=2000000000 --device host",
         2,
         "must be at most 2147483647 routes"},
        {"SetLimitNotANumber", {}, "--set swiglu.limit=abc --device host", 2, "swiglu.limit: \"abc\": not a number"},
        {"SetAlphaNaN", {}, "--set swiglu.alpha=nan --device host", 2, "swiglu.alpha: nan: must be finite"},
        {"SetScalarForMap", {}, "--set swiglu=5 --device host", 2, "swiglu: got the scalar \"5\", expected a map"},
        {"SetBadLayout",
         {},
         "--set gate_up_layout=diagonal --device host",
         2,
         "gate_up_layout: \"diagonal\": must be split or interleaved"},
        {"SetNegativeSeed", {}, "--set seed=-1 --device host", 2, "seed: -1: out of range"},
        // --- values CLI11 or YAML would take loosely, contradictory flags
        {"SeedAboveU64",
         {},
         "--seed 18446744073709551616 --device host",
         2,
         "--seed 18446744073709551616: out of range"},
        {"SeedNegative", {}, "--seed -1 --device host", 2, "--seed -1: out of range"},
        {"SeedHex", {}, "--seed 0x10 --device host", 2, "--seed '0x10': not a decimal integer"},
        {"CardsEmptyElement", {}, "--cards 0,,1 --device host", 2, "--cards '0,,1': element 2 is empty"},
        {"CardsTrailingComma", {}, "--cards 0, --device host", 2, "element 2 is empty"},
        {"CardsNegative", {}, "--cards -1 --device host", 2, "--cards -1: out of range"},
        {"RepeatsWithNoTiming", {}, "--repeats 3 --no-timing --device host", 2, "--repeats sets the timing"},
        {"WarmupOnHost", {}, "--warmup 3 --device host", 2, "--warmup sets the timing"},
        {"ResumeWithOverwrite",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {variant: [baseline]}\n"); }}},
         "--sweep @/s.yaml --resume --overwrite --out @/o",
         2,
         "--resume and --overwrite contradict"},
        {"SetTaggedString", {}, "--set 'hidden=!!str 128' --device host", 2, "hidden: \"128\" is tagged !!str"},
        {"SetHugeHidden32",
         {},
         "--set hidden=1073741792 --device host",
         2,
         "hidden = 1073741792: must be at most 65536"},
        {"SetHugeExperts",
         {},
         "--set experts=400000000 --set cards=1 --device host",
         2,
         "experts = 400000000: must be at most 65536"},
        {"SetWeightsTooLarge",
         {},
         "--set hidden=65536 --set intermediate=65536 --set experts=4096 --set cards=1 --set card=0 --device host",
         2,
         "one card's 4096 experts need"},
        {"SetRowsTooMany", {}, "--set rows=2000000 --device host", 2, "rows = 2000000: must be at most"},
        {"GateBudgetNan", {}, "--gate-budget nan --device host", 2, "--gate-budget 'nan': not a decimal number"},
        {"GateBudgetHex", {}, "--gate-budget 0x10 --device host", 2, "--gate-budget '0x10': not a decimal number"},
        {"GateBudgetWithoutTiming", {}, "--gate-budget 5 --no-timing", 2, "--gate-budget sets the timing"},
        {"BlockIsolationOnHost",
         {},
         "--block-isolation process --device host",
         2,
         "--block-isolation sets the timing: not with --no-timing or --device host"},
        {"BlocksWithoutTiming", {}, "--blocks 4 --no-timing", 2, "--blocks sets the timing"},
        {"InputsWithRoutePattern",
         {{"in.st", [] { return text("i"); }}},
         "--inputs @/in.st --route-pattern all --device host",
         2,
         "--route-pattern shapes a run of the gate: not with --inputs"},
        {"InputsWithCards",
         {{"in.st", [] { return text("i"); }}},
         "--inputs @/in.st --cards 0,1 --device host",
         2,
         "--cards shapes a run of the gate: not with --inputs"},
        {"SetTwice",
         {},
         "--set hidden=256 --set hidden=512 --device host",
         2,
         "--set hidden=256 and --set hidden=512 both set hidden: give it once"},
        {"SetKeyAndItsGroup",
         {},
         "--set swiglu.limit=7 --set 'swiglu={limit: 8}' --device host",
         2,
         "both set swiglu.limit"},
        {"SetSeedAndSeed", {}, "--set seed=3 --seed 4 --device host", 2, "--set seed=3 and --seed 4 both set seed"},
        {"ConfigKeyInTwoSpellings",
         {{"c.yaml", [] { return text("swiglu:\n  limit: 8\nswiglu.limit: 7\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "swiglu.limit: given twice"},
        {"OutTwice", {}, "--out a --out b --device host", 2, "--out is given 2 times: give it once"},
        {"CardsAndSetCard", {}, "--cards 1 --set card=2 --device host", 2, "--set card=2 and --cards both say"},
        {"DeviceEmpty", {}, "--device '' --no-timing", 2, "--device '': an empty value"},
        {"KernelTuningColsNegative",
         {},
         "--kernel-tuning cols_per_wg=-1 --no-timing",
         2,
         "cols_per_wg must be at least 1, not -1"},
        // --- files that are not regular, output paths that cannot be written
        {"ConfigDevZero",
         {},
         "--config /dev/zero --device host",
         2,
         "/dev/zero: cannot read config: a character device"},
        {"ConfigDirectory", {}, "--config @ --device host", 2, "--config: File is actually a directory"},
        {"ConfigTooLarge",
         {{"c.yaml", [] { return text("# " + std::string(2 << 20, 'x') + "\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "more than the 1048576-byte limit"},
        {"ConfigTaggedString",
         {{"c.yaml", [] { return text("hidden: !!str 128\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "hidden: \"128\" is tagged !!str, a string"},
        {"ConfigCustomTag",
         {{"c.yaml", [] { return text("rows: !mine 2\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "is tagged !mine"},
        {"WeightsDevZero", {}, kShape + "--weights /dev/zero", 2, "/dev/zero"},
        {"InputsDirectory", {}, kShape + "--inputs @", 2, "--inputs: File is actually a directory"},
        {"OutIsAFile",
         {{"f", [] { return text("x"); }}},
         "--out @/f --device host",
         2,
         "--out @/f: @/f is a regular file, not a directory"},
        {"OutUnderDevNull",
         {},
         "--out /dev/null/x --device host",
         2,
         "--out /dev/null/x: /dev/null is a character device, not a directory"},
        {"TraceIsADirectory", {}, "--trace @ --device host", 2, "--trace @: is a directory"},
        {"ReportIsADirectory", {}, "--report @ --device host", 2, "--report @: is a directory"},
        {"DumpUnderAFile",
         {{"f", [] { return text("x"); }}},
         kShape + "--dump @/f/d.safetensors",
         2,
         "@/f is a regular file, not a directory"},
        {"SweepOutIsAFile",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {variant: [baseline]}\n"); }},
          {"f", [] { return text("x"); }}},
         "--sweep @/s.yaml --out @/f",
         2,
         "--out @/f: @/f is a regular file, not a directory"},
        {"SweepBaseConfigDevZero",
         {{"s.yaml",
           [] { return text("sweep:\n  name: bad\n  base_config: /dev/zero\n  axes: {variant: [baseline]}\n"); }}},
         "--sweep @/s.yaml --out @/o",
         2,
         "/dev/zero: cannot read config: a character device"},
        {"SweepTaggedRepeats",
         {{"s.yaml",
           [] { return text(std::string(kSweepHead) + "  repeats: !!str 5\n  axes: {variant: [baseline]}\n"); }}},
         "--sweep @/s.yaml --out @/o",
         2,
         "sweep.repeats"},
        {"SweepAxisTaggedString",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {rows: [1, !!str 2]}\n"); }}},
         "--sweep @/s.yaml --out @/o",
         2,
         "is tagged !!str"},
        {"SweepFileDevZero", {}, "--sweep /dev/zero --out @/o", 2, "/dev/zero: cannot read sweep: a character device"},
        // outputs that would overwrite an input, each other, or leave another run's results beside theirs
        {"DumpOverWeights",
         {{"w.st", [] { return text("w"); }}, {"in.st", [] { return text("i"); }}},
         kShape + "--weights @/w.st --inputs @/in.st --dump @/w.st",
         2,
         "--dump @/w.st is the file --weights reads (@/w.st)"},
        {"ReportOverConfig",
         {{"c.html", [] { return text("hidden: 256\n"); }}},
         "--config @/c.html --report @/c.html",
         2,
         "--report @/c.html is the file --config reads"},
        {"TraceIsReport",
         {},
         "--trace @/x.html --report @/x.html",
         2,
         "--report @/x.html is also where --trace writes"},
        {"TraceOverCard",
         {},
         std::string(kReducedShapeArgs) + " --out @/o --trace @/o/card0.json",
         2,
         "--out @/o/card0.json is also where --trace writes"},
        {"StaleCardInOut",
         {{"o/card1.json", [] { return text("{}"); }}, {"o/card0.json", [] { return text("{}"); }}},
         kShape + "--out @/o",
         2,
         "--out @/o holds card1.json of an earlier run that this run would not replace"},
        {"StaleRepeatInOut",
         {{"o/repeat-3", [] { return text("x"); }}, {"o/step.json", [] { return text("{}"); }}},
         std::string(kReducedShapeArgs) + " --gate-repeat 2 --out @/o",
         2,
         "--out @/o holds repeat-3, step.json of an earlier run"},
        {"DumpNameTooLong",
         {},
         "--dump @/" + std::string(256, 'a') + ".st --device host",
         2,
         "the file name is 259 bytes, more than the 255 the file system allows"},
        // --- YAML configs
        {"ConfigNotAMap",
         {{"c.yaml", [] { return text("- 1\n- 2\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "c.yaml"},
        {"ConfigUnknownKey",
         {{"c.yaml", [] { return text("hiddden: 128\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "hiddden"},
        {"ConfigListForInteger",
         {{"c.yaml", [] { return text("hidden: [128, 256]\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "hidden"},
        {"ConfigSyntaxError",
         {{"c.yaml", [] { return text("hidden: [128\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "c.yaml"},
        {"ConfigTwoDocuments",
         {{"c.yaml", [] { return text("hidden: 128\n---\nhidden: 256\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "c.yaml"},
        {"ConfigContractInFile",
         {{"c.yaml", [] { return text("contract: 2\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "contract"},
        {"ConfigHiddenNotMultipleOf32",
         {{"c.yaml", [] { return text("hidden: 100\nintermediate: 64\n"); }}},
         "--config @/c.yaml --device host",
         2,
         "hidden"},
        // --- sweep files
        {"SweepUnknownAxis",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {colour: [red]}\n"); }}},
         "--sweep @/s.yaml --out @/o",
         2,
         "colour"},
        {"SweepEmptyAxis",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {variant: []}\n"); }}},
         "--sweep @/s.yaml --out @/o",
         2,
         "variant"},
        {"SweepBadAxisValue",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {hidden: [100]}\n"); }}},
         "--sweep @/s.yaml --out @/o",
         2,
         "hidden"},
        {"SweepMissingBaseConfig",
         {{"s.yaml",
           [] { return text("sweep:\n  name: bad\n  base_config: nope.yaml\n  axes: {variant: [baseline]}\n"); }}},
         "--sweep @/s.yaml --out @/o",
         2,
         "nope.yaml"},
        {"SweepBadName",
         {{"s.yaml", [] { return text("sweep:\n  name: a/b\n  axes: {variant: [baseline]}\n"); }}},
         "--sweep @/s.yaml --out @/o",
         2,
         "a/b"},
        {"SweepZeroRepeats",
         {{"s.yaml", [] { return text(std::string(kSweepHead) + "  axes: {variant: [baseline]}\n  repeats: 0\n"); }}},
         "--sweep @/s.yaml --out @/o",
         2,
         "repeats"},
        // --- safetensors (case inputs and weights)
        {"SafetensorsShorterThanLength",
         {{"in.safetensors",
           [] {
               return Bytes{1, 2, 3};
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "in.safetensors"},
        {"SafetensorsHeaderPastEnd",
         {{"in.safetensors", [] { return Bytes{0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}'}; }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "in.safetensors"},
        {"SafetensorsHeaderNotJson",
         {{"in.safetensors", [] { return rawSafetensors("{not json", {}); }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "in.safetensors"},
        {"SafetensorsHeaderArray",
         {{"in.safetensors", [] { return rawSafetensors("[1, 2]", {}); }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "in.safetensors"},
        {"SafetensorsOffsetsPastData",
         {{"in.safetensors",
           [] {
               auto s = validInputs();
               s.header["topk_weights"]["data_offsets"][1] = 1u << 30;
               return s.write();
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "topk_weights"},
        {"SafetensorsOffsetsReversed",
         {{"in.safetensors",
           [] {
               auto s = validInputs();
               auto& o = s.header["hidden"]["data_offsets"];
               o = {o[1], o[0]};
               return s.write();
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "hidden"},
        {"SafetensorsTruncatedData",
         {{"in.safetensors",
           [] {
               auto s = validInputs();
               s.data.resize(s.data.size() - 5);
               return s.write();
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "in.safetensors"},
        {"SafetensorsUnknownDtype",
         {{"in.safetensors",
           [] {
               auto s = validInputs();
               s.header["hidden"]["dtype"] = "Q4";
               return s.write();
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "Q4"},
        {"InputsHiddenWrongDtype",
         {{"in.safetensors",
           [] {
               auto s = validInputs();
               s.header["hidden"]["dtype"] = "F16";  // same size as BF16: only the dtype is wrong
               return s.write();
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "hidden"},
        {"InputsTopkIdsWrongShape",
         {{"in.safetensors",
           [] {
               auto s = validInputs();
               s.header["topk_ids"]["shape"] = {3, 4};  // 12 ids as [2, 6] holds
               return s.write();
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "topk_ids"},
        {"InputsMissingTopkWeights",
         {{"in.safetensors",
           [] {
               auto c = validCase();
               auto t = probe::inputTensors(reducedShape(), c.inputs);
               t.erase("topk_weights");
               return probe::serializeSafetensors(t);
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "topk_weights"},
        {"WeightsBlocksWrongDtype",
         {{"w.safetensors",
           [] {
               auto s = validWeights();
               s.header["gate_up_proj_blocks"]["dtype"] = "I8";
               return s.write();
           }}},
         kShape + "--weights @/w.safetensors",
         2,
         "gate_up_proj_blocks"},
        {"WeightsScalesWrongShape",
         {{"w.safetensors",
           [] {
               auto s = validWeights();
               auto shape = s.header["down_proj_scales"]["shape"];
               s.header["down_proj_scales"]["shape"] = {shape[0], shape[2], shape[1]};
               return s.write();
           }}},
         kShape + "--weights @/w.safetensors",
         2,
         "down_proj_scales"},
        // --- routes
        {"RouteNegativeId",
         {{"in.safetensors", [] { return inputsWith([](auto& in) { in.topkIds[3] = -1; }); }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "topk_ids[0][3] = -1"},
        {"RouteIdFarOutOfRange",
         {{"in.safetensors", [] { return inputsWith([](auto& in) { in.topkIds[7] = 1000000; }); }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "topk_ids[1][1] = 1000000"},
        {"RouteTopkShapesDisagree",
         {{"in.safetensors",
           [] {
               auto t = probe::inputTensors(reducedShape(), validCase().inputs);
               std::vector<float> w(2 * 5, 0.5f);
               t["topk_weights"] = probe::makeTensor(probe::DType::F32, {2, 5}, w);
               return probe::serializeSafetensors(t);
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "topk_weights"},
        {"RouteMoreRowsThanConfig",
         {{"in.safetensors",
           [] {
               auto s = reducedShape();
               s.rows = 3;
               auto c = probe::makeCase(s, probe::RoutePattern::AllDuplicate, 0, 1, nullptr);
               return probe::serializeSafetensors(probe::inputTensors(s, c.inputs));
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "hidden"},
        // I64 ids are torch.topk's and accepted; one beyond int32 range (its low 32 bits the
        // valid id 1) is invalid like any bad id, named whole.
        {"RouteIdI64BeyondInt32",
         {{"in.safetensors",
           [] {
               auto t = probe::inputTensors(reducedShape(), validCase().inputs);
               std::vector<std::int64_t> ids(12, 1);
               ids[2] = (std::int64_t(1) << 32) + 1;
               t["topk_ids"] = probe::makeTensor(probe::DType::I64, {2, 6}, ids);
               return probe::serializeSafetensors(t);
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "topk_ids[0][2] = 4294967297 is not an expert id in [0, 48)"},
        {"RouteIdsAsI16",
         {{"in.safetensors",
           [] {
               auto t = probe::inputTensors(reducedShape(), validCase().inputs);
               std::vector<std::int16_t> ids(12, 1);
               t["topk_ids"] = probe::makeTensor(probe::DType::I16, {2, 6}, ids);
               return probe::serializeSafetensors(t);
           }}},
         kShape + "--inputs @/in.safetensors",
         2,
         "expected I32 or I64"},
        // --- result cards read back (ze-probe report, gate-repeat-merge): each checked against the
        // schema of its version, the file and the JSON pointer of the first problem named
        {"CardRequiredKeyDeleted",
         {{"c.json", [] { return cardWith([](auto& c) { c["gate"]["candidates"][0]["verdict"].erase("line"); }); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: " + kNotCard3 + "/gate/candidates/0/verdict/line: missing (a required key)"},
        {"CardSectionDeleted",
         {{"c.json", [] { return cardWith([](auto& c) { c.erase("timings"); }); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: " + kNotCard3 + "/timings: missing (a required key)"},
        {"CardUnknownKey",
         {{"c.json", [] { return cardWith([](auto& c) { c["verdicts"] = "pass"; }); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: " + kNotCard3 +
             "/verdicts: unknown key (known here: card, config, contract, correctness, "
             "device, gate, launch_floor, projections, schema, timing_skipped, timings, "
             "variants_not_valid)"},
        {"CardUnknownKeyNested",
         {{"c.json",
           [] { return cardWith([](auto& c) { c["gate"]["candidates"][0]["projections"][0]["note"] = "x"; }); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: " + kNotCard3 + "/gate/candidates/0/projections/0/note: unknown key (known here: baseline_"},
        {"CardConfigKeyMisspelt",
         {{"c.json", [] { return cardWith([](auto& c) { c["config"]["hiden"] = c["config"]["hidden"]; }); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: " + kNotCard3 + "/config/hiden: unknown key (known here: card, cards, contract, "},
        {"CardNumberAsText",
         {{"c.json", [] { return cardWith([](auto& c) { c["timings"]["patterns"]["six_local"]["batch"] = "4"; }); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: " + kNotCard3 + "/timings/patterns/six_local/batch: \"4\" is not of type \"integer\""},
        {"CardListAsObject",
         {{"c.json", [] { return cardWith([](auto& c) { c["gate"]["candidates"] = nlohmann::json::object(); }); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: " + kNotCard3 + "/gate/candidates: an object of 0 keys is not of type \"array\""},
        {"CardVerdictUnknown",
         {{"c.json",
           [] { return cardWith([](auto& c) { c["gate"]["candidates"][0]["verdict"]["verdict"] = "maybe"; }); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: " + kNotCard3 +
             "/gate/candidates/0/verdict/verdict: \"maybe\" is not one of [\"pass\",\"on_the_bar\",\"fail\"]"},
        // a pattern name holding '/' is named with RFC 6901's escape
        {"CardPatternKeyWithSlash",
         {{"c.json", [] { return cardWith([](auto& c) { c["timings"]["patterns"]["a/b"] = 1; }); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: " + kNotCard3 + "/timings/patterns/a~1b: 1 is not of type \"object\""},
        {"CardOfSchema2WithASchema3Key",
         {{"c.json",
           [] {
               return resultWith("card0_h200_no_timing.json", [](auto& c) { c["device"]["timer_resolution_ns"] = 1; });
           }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: not a card of schema 2 as ze-probe writes it (docs/card-2.schema.json): "
         "/device/timer_resolution_ns: unknown key"},
        {"CardNotAnObject",
         {{"c.json", [] { return text("[3]"); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: not a ze-probe card (no integer \"schema\")"},
        {"CardNestedTooDeep",
         {{"c.json", [] { return text(std::string(100000, '[') + std::string(100000, ']')); }}},
         "report @/c.json -o @/r.html",
         2,
         "@/c.json: JSON nested deeper than 64 levels: not a card ze-probe wrote"},
        {"StepKeyDeleted",
         {{"step.json", [] { return resultWith("step4/step.json", [](auto& s) { s["gate"].erase("candidates"); }); }},
          {"card0.json", [] { return resultWith("step4/card0.json", [](auto&) {}); }}},
         "report @/card0.json @/step.json -o @/r.html",
         2,
         "@/step.json: not a step.json as ze-probe writes it (docs/step.schema.json): /gate/candidates: missing "
         "(a required key)"},
        {"GateRepeatMergeCardKeyDeleted",
         {{"r1/card0.json", [] { return cardWith([](auto&) {}); }},
          {"r2/card0.json", [] { return cardWith([](auto& c) { c["gate"].erase("budget_s"); }); }}},
         "gate-repeat-merge @/r1 @/r2 -o @/m",
         2,
         "@/r2/card0.json: " + kNotCard3 + "/gate/budget_s: missing (a required key)"},
        {"GateRepeatMergeCardUnknownKey",
         {{"r1/card0.json", [] { return cardWith([](auto& c) { c["device"]["colour"] = "red"; }); }},
          {"r2/card0.json", [] { return cardWith([](auto&) {}); }}},
         "gate-repeat-merge @/r1 @/r2 -o @/m",
         2,
         "@/r1/card0.json: " + kNotCard3 + "/device/colour: unknown key"},
    };
    return v;
}

class ZeProbeBadInputTable : public ::testing::TestWithParam<Row> {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / ("zp-bad-" + std::to_string(::getpid()) + "-" + GetParam().name);
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }
    fs::path dir;
};

TEST_P(ZeProbeBadInputTable, GivenBadInput_WhenRun_ThenExitCodeTwoAndMessageNamesIt) {
    const Row& row = GetParam();
    for (const auto& [name, make] : row.files) {
        const Bytes b = make();
        fs::create_directories((dir / name).parent_path());
        std::ofstream(dir / name, std::ios::binary)
            .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    }
    const Result r = runProbe(expand(row.args, dir.string()), dir);
    ASSERT_TRUE(r.exited) << "killed by a signal\n" << r.output;
    EXPECT_EQ(r.exitCode, row.exitCode) << r.output;
    const std::string fragment = expand(row.fragment, dir.string());
    EXPECT_NE(r.output.find(fragment), std::string::npos) << "expected '" << fragment << "' in:\n" << r.output;
    // Bad input is never reported as a bug or a crash.
    for (const char* bad : {"terminate called", "internal error", "AddressSanitizer", "runtime error:"})
        EXPECT_EQ(r.output.find(bad), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "probe-out")) << "a rejected run wrote results";
}

INSTANTIATE_TEST_SUITE_P(Table, ZeProbeBadInputTable, ::testing::ValuesIn(rows()),
                         [](const auto& info) { return std::string(info.param.name); });

// Two writers of one sweep output: the second is refused with exit 2 naming the holder,
// before any device is opened, and the first's files are untouched.
TEST(ZeProbeSweepLock, GivenTheSweepOutputLocked_WhenASecondSweepStarts_ThenExitTwoNamingTheHolder) {
    const fs::path dir = fs::temp_directory_path() / ("zp-lock-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "o");
    std::ofstream(dir / "s.yaml") << kSweepHead << "  axes: {variant: [baseline]}\n";
    {
        const probe::OutputLock held(dir / "o" / "bad.jsonl.lock", "test");
        for (const char* extra : {"", " --resume"}) {
            const Result r =
                runProbe("--sweep " + (dir / "s.yaml").string() + " --out " + (dir / "o").string() + extra, dir);
            ASSERT_TRUE(r.exited) << r.output;
            EXPECT_EQ(r.exitCode, 2) << r.output;
            EXPECT_NE(r.output.find("another process is writing it (pid " + std::to_string(::getpid()) + " on host"),
                      std::string::npos)
                << r.output;
        }
        EXPECT_FALSE(fs::exists(dir / "o" / "bad.jsonl"));
    }
    fs::remove_all(dir);
}

// Every output path: one that cannot be written is refused with exit 2 naming the path
// and why, before any case runs (no case table, nothing written): a directory where a file goes,
// a parent that cannot be made, a place no file can be created in (/proc, even for root).
struct OutputPathCase {
    const char* name;
    std::vector<std::string> dirs;   // made in the case's directory first
    std::vector<std::string> files;  // and these, empty
    std::string args;                // "@" = the case's directory
    std::string fragment;
};

TEST(ZeProbeOutputPaths, GivenAnOutputPathThatCannotBeWritten_WhenRun_ThenExitTwoNamingItBeforeAnyWork) {
    const std::string sweep = " --sweep @/s.yaml";
    const std::vector<OutputPathCase> cases = {
        {"out in /proc",
         {},
         {},
         "--device host --no-timing --out /proc/nope",
         "--out /proc/nope: cannot create directory /proc/nope: "},
        {"out under /proc's file",
         {},
         {},
         "--device host --out /proc/version/x",
         "--out /proc/version/x: /proc/version is a regular file, not a directory"},
        {"card0.json a directory",
         {"o/card0.json"},
         {},
         "--device host --out @/o",
         "--out @/o/card0.json: is a directory"},
        {"card2.json a directory",
         {"o/card2.json"},
         {},
         "--device host --cards 1,2 --out @/o",
         "--out @/o/card2.json: is a directory"},
        {"card of config key",
         {"o/card3.json"},
         {},
         "--device host --set card=3 --out @/o",
         "--out @/o/card3.json: is a directory"},
        {"step.json a directory",
         {"o/step.json"},
         {},
         "--device zecl --cards 0,1 --out @/o",
         "--out @/o/step.json: is a directory"},
        {"blocks a file",
         {"o"},
         {"o/blocks"},
         "--device zecl --out @/o",
         "--out @/o/blocks: @/o/blocks is a regular file, not a directory"},
        {"trace in /proc",
         {},
         {},
         "--device host --trace /proc/nope/t.json",
         "--trace /proc/nope/t.json: cannot create directory /proc/nope"},
        {"trace in /proc itself",
         {},
         {},
         "--device zecl --trace /proc/t.json",
         "--trace /proc/t.json: directory /proc is not writable"},
        {"report in /proc",
         {},
         {},
         "--device zecl --report /proc/r.html",
         "--report /proc/r.html: directory /proc is not writable"},
        {"dump in /proc",
         {},
         {},
         "--device host --dump /proc/d.safetensors",
         "--dump /proc/d.safetensors: directory /proc is not writable"},
        {"sweep out in /proc",
         {},
         {},
         sweep + " --out /proc/nope",
         "--out /proc/nope: cannot create directory /proc/nope"},
        {"sweep jsonl a directory", {"o/bad.jsonl"}, {}, sweep + " --out @/o", "--out @/o/bad.jsonl: is a directory"},
        {"sweep csv a directory", {"o/bad.csv"}, {}, sweep + " --out @/o", "--out @/o/bad.csv: is a directory"},
        {"sweep plan a directory",
         {"o/bad.plan.json"},
         {},
         sweep + " --out @/o",
         "--out @/o/bad.plan.json: is a directory"},
        {"sweep lock a directory",
         {"o/bad.jsonl.lock"},
         {},
         sweep + " --out @/o",
         "--out @/o/bad.jsonl.lock: is a directory"},
        {"report -o in /proc",
         {},
         {},
         "report @/s.yaml -o /proc/nope/r.html",
         "-o /proc/nope/r.html: cannot create directory /proc/nope"},
        {"report -o a directory", {"r.html"}, {}, "report @/s.yaml -o @/r.html", "-o @/r.html: is a directory"},
        {"sweep-merge -o in /proc",
         {"s1"},
         {},
         "sweep-merge @/s1 -o /proc/nope",
         "-o /proc/nope: cannot create directory /proc/nope"},
        {"gate-repeat-merge -o in /proc",
         {"r1"},
         {},
         "gate-repeat-merge @/r1 -o /proc/nope",
         "-o /proc/nope: cannot create directory /proc/nope"},
        {"gate-repeat-merge json a directory",
         {"m/gate_repeat.json"},
         {},
         "gate-repeat-merge @/r1 -o @/m",
         "-o @/m/gate_repeat.json: is a directory"},
        {"gate-repeat-merge report in /proc",
         {},
         {},
         "gate-repeat-merge @/r1 -o @/m --report /proc/r.html",
         "--report /proc/r.html: directory /proc is not writable"},
        {"gate-repeat run dir a file",
         {"o"},
         {"o/repeat-2"},
         "--device zecl --gate-repeat 2 --out @/o",
         "--out @/o/repeat-2: @/o/repeat-2 is a regular file, not a directory"},
        {"gate-repeat json a directory",
         {"o/gate_repeat.json"},
         {},
         "--device zecl --gate-repeat 2 --out @/o",
         "--out @/o/gate_repeat.json: is a directory"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        const fs::path dir = fs::temp_directory_path() / ("zp-outpaths-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        std::ofstream(dir / "s.yaml") << kSweepHead << "  axes: {variant: [baseline]}\n";
        for (const auto& d : c.dirs) fs::create_directories(dir / d);
        for (const auto& f : c.files) std::ofstream(dir / f) << "";
        const Result r = runProbe(expand(c.args, dir.string()), dir);
        ASSERT_TRUE(r.exited) << r.output;
        EXPECT_EQ(r.exitCode, 2) << r.output;
        const std::string fragment = expand(c.fragment, dir.string());
        EXPECT_NE(r.output.find("ze-probe: error: " + fragment), std::string::npos)
            << "expected '" << fragment << "' in:\n"
            << r.output;
        // Before any work: no case ran, nothing was written, no bug reported.
        for (const char* bad : {"passed", "wrote", "internal error", "Level Zero", "device:"})
            EXPECT_EQ(r.output.find(bad), std::string::npos) << bad << " in:\n" << r.output;
        EXPECT_FALSE(fs::exists(dir / "probe-out"));
        EXPECT_FALSE(fs::exists("/proc/nope"));
        fs::remove_all(dir);
    }
}

TEST(ZeProbeBadInputTableSize, GivenTheTable_ThenItHasAtLeastThirtyRows) { EXPECT_GE(rows().size(), 30u); }

}  // namespace

// Not bad input: a device or driver error exits 3 (docs/usage.md "Exit codes"), never 1 (a case
// failed) or 2. Here the loader is pointed at a driver that does not exist, so zeInit finds
// none (ZE_ENABLE_ALT_DRIVERS replaces the loader's default drivers).
TEST(ZeProbeDeviceError, GivenNoLevelZeroDriver_WhenRunOnADevice_ThenExitThreeNamingTheDriverError) {
    const fs::path dir = fs::temp_directory_path() / ("zp-bad-" + std::to_string(::getpid()) + "-no-driver");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const char* old = std::getenv("ZE_ENABLE_ALT_DRIVERS");
    const std::string saved = old ? old : "";
    ::setenv("ZE_ENABLE_ALT_DRIVERS", (dir / "no-such-driver.so").c_str(), 1);
    const Result r = runProbe(std::string(kReducedShapeArgs) + " --device zecl --no-timing", dir);
    if (old)
        ::setenv("ZE_ENABLE_ALT_DRIVERS", saved.c_str(), 1);
    else
        ::unsetenv("ZE_ENABLE_ALT_DRIVERS");
    ASSERT_TRUE(r.exited) << "killed by a signal\n" << r.output;
    EXPECT_EQ(r.exitCode, 3) << r.output;
    EXPECT_NE(r.output.find("ze-probe: error: Level Zero: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("no-such-driver.so"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "probe-out")) << "a failed run wrote results";
    fs::remove_all(dir);
}
