#include "zp/probe/sweep.hpp"
#include "zp/probe/file_io.hpp"
#include "zp/probe/json_compare.hpp"

#include "yaml_document.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "zp/probe/input_error.hpp"

namespace zp::probe {
namespace {

// ---------------------------------------------------------------- parsing

std::string where(const std::string& file, const YAML::Node& n) { return nodeLocation(file, n); }

[[noreturn]] void fail(const std::string& file, const YAML::Node& n, const std::string& path, const std::string& what) {
    failAt(file, n, path, what);
}

std::string readString(const std::string& file, const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) fail(file, n, path, "got " + nodeKindName(n) + ", expected a string");
    return n.Scalar();
}

// Config key paths, from the config's own JSON form: "hidden", ..., "swiglu.limit", "gate.min_saving_ms".
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, nlohmann::json>>& out) {
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (it->is_object())
            flatten(*it, key, out);
        else
            out.emplace_back(key, *it);
    }
}
std::vector<std::pair<std::string, nlohmann::json>> flatConfig(const Config& c) {
    std::vector<std::pair<std::string, nlohmann::json>> out;
    flatten(toJson(c), "", out);
    return out;
}
const std::vector<std::string>& configKeys() {
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> k;
        for (auto& [path, v] : flatConfig(Config{})) k.push_back(path);
        return k;
    }();
    return keys;
}
bool isConfigKey(const std::string& k) {
    const auto& keys = configKeys();
    return std::find(keys.begin(), keys.end(), k) != keys.end();
}
bool isConfigGroup(const std::string& k) {
    for (const auto& key : configKeys())
        if (key.size() > k.size() && key.compare(0, k.size(), k) == 0 && key[k.size()] == '.') return true;
    return false;
}
std::string joinList(const std::vector<std::string>& xs) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
    return s;
}

// Applies config key `key` = `value` through config.cpp's rules, and names the error's key
// path under `section` ("sweep.set", "sweep.axes"): "f:7:12: hidden: 100: ..." → "f:7:12: sweep.axes.hidden: 100: ...".
void applyKey(Config& cfg, const std::string& key, const YAML::Node& value, const std::string& file,
              const std::string& section) {
    try {
        applyConfigKey(cfg, key, value, file);
    } catch (const InputError& e) {
        std::string msg = e.what();
        std::size_t p = 0;
        if (msg.compare(0, file.size(), file) == 0) {
            p = file.size();
            // optional ":line:column"
            std::size_t q = p;
            for (int part = 0; part < 2 && q < msg.size() && msg[q] == ':'; ++part) {
                std::size_t r = q + 1;
                while (r < msg.size() && std::isdigit(static_cast<unsigned char>(msg[r]))) ++r;
                if (r == q + 1) break;
                q = r;
            }
            p = q;
            if (msg.compare(p, 2, ": ") == 0) {
                throw InputError(msg.substr(0, p) + ": " + section + "." + msg.substr(p + 2));
            }
        }
        throw;
    }
}

std::optional<std::string> leafText(const Config& c, const std::string& key) {
    for (auto& [path, v] : flatConfig(c))
        if (path == key) return v.is_string() ? v.get<std::string>() : v.dump();
    return std::nullopt;
}

const std::vector<std::string> kSweepKeys = {"name", "base_config", "set", "axes", "repeats", "warmup"};

std::vector<std::string> knownAxes() {
    std::vector<std::string> k = {"pattern", "variant"};
    for (const auto& c : configKeys()) k.push_back(c);
    return k;
}

SweepAxis parseAxis(const std::string& file, const std::string& key, const YAML::Node& keyNode, const YAML::Node& v,
                    const Config& base) {
    const std::string path = "sweep.axes." + key;
    SweepAxis axis{key, {}};
    const bool named = key == "pattern" || key == "variant";
    if (!named && !isConfigKey(key)) {
        std::string hint;
        if (key == "patterns" || key == "variants")
            hint = fmt::format(" (did you mean {}?)", key.substr(0, key.size() - 1));
        else if (isConfigGroup(key))
            hint = " (a group: name one of its keys, e.g. " + key + "." + "<key>)";
        fail(file, keyNode, path, "unknown axis" + hint + " (known: " + joinList(knownAxes()) + ")");
    }
    if (named && v.IsScalar() && !isQuotedScalar(v) && v.Scalar() == "all") {
        if (key == "pattern")
            for (auto p : kAllRoutePatterns) axis.values.emplace_back(patternName(p));
        else
            for (auto x : kAllVariants) axis.values.emplace_back(variantName(x));
        return axis;
    }
    if (!v.IsSequence())
        fail(file, v, path,
             "got " + nodeKindName(v) + ", expected a list of values" + (named ? " or all" : "") + ", e.g. " + key +
                 ": [" + (named ? "..." : "4096") + "]");
    if (v.size() == 0) fail(file, v, path, "empty axis: list at least one value");
    std::set<std::string> seen;
    std::size_t i = 0;
    for (auto it = v.begin(); it != v.end(); ++it, ++i) {  // linear: no lookup of item i by index
        const YAML::Node item = *it;
        const std::string ipath = fmt::format("{}[{}]", path, i);
        if (!item.IsScalar()) fail(file, item, ipath, "got " + nodeKindName(item) + ", expected one value");
        std::string text;
        if (key == "pattern" && item.Scalar() == "all")  // the CLI's shorthand, not one pattern
            fail(
                file, item, ipath, "'all' is not one route pattern: list the patterns the axis takes (" + [] {
                    std::string names;
                    for (RoutePattern p : kAllRoutePatterns)
                        names += (names.empty() ? "" : ", ") + std::string(patternName(p));
                    return names;
                }() + ")");
        if (key == "pattern" || key == "variant") {
            try {
                text = key == "pattern" ? std::string(patternName(parsePattern(item.Scalar())))
                                        : std::string(variantName(parseVariant(item.Scalar())));
            } catch (const InputError& e) {
                fail(file, item, ipath, e.what());
            }
        } else {
            Config scratch = base;
            applyKey(scratch, key, item, file, "sweep.axes");
            text = *leafText(scratch, key);
            if (text.find_first_of(",=") != std::string::npos)
                fail(file, item, ipath,
                     quotedForMessage(text) + ": an axis value may not contain ',' or '=' (they separate point ids)");
        }
        if (!seen.insert(text).second) fail(file, item, ipath, text + ": duplicate value");
        axis.values.push_back(text);
    }
    return axis;
}

// ---------------------------------------------------------------- files

std::string errnoText() { return std::strerror(errno); }

class AppendFd {
public:
    AppendFd() = default;
    AppendFd(const std::filesystem::path& p, bool truncate) : path_(p) {
        fd_ = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
        if (fd_ < 0) throw InputError(p.string() + ": cannot open for writing: " + errnoText());
    }
    AppendFd(AppendFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)) {}
    AppendFd& operator=(AppendFd&& o) noexcept {
        if (this != &o) {
            close();
            fd_ = std::exchange(o.fd_, -1);
            path_ = std::move(o.path_);
        }
        return *this;
    }
    ~AppendFd() { close(); }

    // One write() per call where the kernel allows, then fsync: a row is on disk or torn, never reordered.
    void append(const std::string& text) {
        std::size_t off = 0;
        while (off < text.size()) {
            const ssize_t n = ::write(fd_, text.data() + off, text.size() - off);
            if (n < 0) {
                if (errno == EINTR) continue;
                throw InputError(path_.string() + ": write failed: " + errnoText());
            }
            off += std::size_t(n);
        }
        if (::fsync(fd_) != 0) throw InputError(path_.string() + ": fsync failed: " + errnoText());
    }
    bool open() const { return fd_ >= 0; }

private:
    void close() noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    int fd_ = -1;
    std::filesystem::path path_;
};

void fsyncDir(const std::filesystem::path& file) {
    const auto dir = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)::fsync(fd);  // best effort: the rows themselves are already synced
        ::close(fd);
    }
}

std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + "\"";
}

std::string cellText(const nlohmann::json& v) {
    if (v.is_null()) return "";
    if (v.is_string()) return v.get<std::string>();
    return v.dump();  // numbers, bools, arrays (as JSON text)
}

void flattenResult(const nlohmann::json& j, const std::string& prefix,
                   std::vector<std::pair<std::string, nlohmann::json>>& out) {
    if (!j.is_object()) {
        out.emplace_back(prefix.empty() ? "result" : prefix, j);
        return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (it->is_object() && !it->empty())
            flattenResult(*it, key, out);
        else
            out.emplace_back(key, *it);
    }
}

// The CSV side of the runner: the header is fixed by the first row that has a result.
class CsvWriter {
public:
    CsvWriter(AppendFd fd, std::vector<std::string> axisKeys) : fd_(std::move(fd)), axes_(std::move(axisKeys)) {
        base_ = {"id"};
        for (const auto& a : axes_) base_.push_back(a);
        for (const char* k : {"status", "reason", "elapsed_s"}) base_.push_back(k);
    }

    void add(const nlohmann::json& row) {
        if (!header_) {
            if (!row.contains("result")) {
                pending_.push_back(row);
                return;
            }
            fixHeader(&row);
        }
        fd_.append(line(row));
    }
    // No measured row came: write what there is under the base columns.
    void finish() {
        if (!header_ && !pending_.empty()) fixHeader(nullptr);
    }

private:
    void fixHeader(const nlohmann::json* first) {
        header_.emplace();
        resultCols_.clear();
        if (first) {
            std::vector<std::pair<std::string, nlohmann::json>> flat;
            flattenResult((*first)["result"], "", flat);
            for (auto& [k, v] : flat) {
                const bool clash = std::find(base_.begin(), base_.end(), k) != base_.end();
                resultCols_.emplace_back(clash ? "result." + k : k, k);
            }
        }
        std::string h;
        for (const auto& b : base_) h += (h.empty() ? "" : ",") + csvField(b);
        for (const auto& [col, key] : resultCols_) h += "," + csvField(col);
        std::string text = h + "\n";
        for (const auto& p : pending_) text += line(p);
        pending_.clear();
        fd_.append(text);
    }
    std::string line(const nlohmann::json& row) const {
        std::vector<std::string> cells;
        cells.push_back(row.value("id", ""));
        const nlohmann::json& point = row.contains("point") ? row["point"] : nlohmann::json::object();
        for (const auto& a : axes_) cells.push_back(point.contains(a) ? cellText(point[a]) : "");
        cells.push_back(row.value("status", ""));
        cells.push_back(row.value("reason", ""));
        cells.push_back(row.contains("elapsed_s") ? cellText(row["elapsed_s"]) : "");
        std::map<std::string, nlohmann::json> flat;
        if (row.contains("result")) {
            std::vector<std::pair<std::string, nlohmann::json>> f;
            flattenResult(row["result"], "", f);
            for (auto& [k, v] : f) flat.emplace(k, v);
        }
        for (const auto& [col, key] : resultCols_) {
            auto it = flat.find(key);
            cells.push_back(it == flat.end() ? "" : cellText(it->second));
        }
        std::string s;
        for (std::size_t i = 0; i < cells.size(); ++i) s += (i ? "," : "") + csvField(cells[i]);
        return s + "\n";
    }

    AppendFd fd_;
    std::vector<std::string> axes_, base_;
    std::optional<std::vector<std::string>> header_;
    std::vector<std::pair<std::string, std::string>> resultCols_;  // (column, flattened key)
    std::vector<nlohmann::json> pending_;
};

std::string duration(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const long long t = std::llround(s);
    if (t >= 3600) return fmt::format("{}h{:02}m{:02}s", t / 3600, t / 60 % 60, t % 60);
    if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
    return fmt::format("{}s", t);
}

}  // namespace

// ---------------------------------------------------------------- spec and plan

SweepSpec parseSweep(const std::string& yamlText, const std::string& file, const std::filesystem::path& baseDir) {
    // const: a non-const operator[] would insert the keys it looks up.
    const YAML::Node root = loadSingleDocument(yamlText, file);
    if (!root.IsDefined() || !root.IsMap() || root.size() != 1 || !root["sweep"])
        throw InputError(file + ": expected one top-level key, sweep: {name, base_config, set, axes, repeats, warmup}" +
                         (root.IsMap() && root.size() ? "" : " (the file is empty or not a map)"));

    SweepSpec spec;
    spec.file = file;
    spec.name = std::filesystem::path(file).stem().string();
    try {
        const YAML::Node s = root["sweep"];
        if (!s.IsMap())
            fail(file, s, "sweep",
                 "got " + nodeKindName(s) + ", expected a map of keys (" + joinList(kSweepKeys) + ")");
        std::set<std::string> seen;
        for (const auto& kv : s) {
            const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
            if (std::find(kSweepKeys.begin(), kSweepKeys.end(), k) == kSweepKeys.end())
                fail(file, kv.first, "sweep." + k, "unknown key (known: " + joinList(kSweepKeys) + ")");
            if (!seen.insert(k).second) fail(file, kv.first, "sweep." + k, "duplicate key");
        }
        if (s["name"]) {
            spec.name = readString(file, s["name"], "sweep.name");
            if (spec.name.empty() ||
                spec.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
                    std::string::npos)
                fail(file, s["name"], "sweep.name",
                     quotedForMessage(spec.name) + ": use letters, digits, '_', '.', '-'");
        }
        if (s["base_config"] && !s["base_config"].IsNull()) {
            const YAML::Node n = s["base_config"];
            const std::filesystem::path p = baseDir / readString(file, n, "sweep.base_config");
            try {
                spec.base = loadConfig(p);
            } catch (const InputError& e) {
                fail(file, n, "sweep.base_config", e.what());
            }
        }
        std::set<std::string> setKeys;
        if (s["set"] && !s["set"].IsNull()) {
            const YAML::Node set = s["set"];
            if (!set.IsMap())
                fail(file, set, "sweep.set", "got " + nodeKindName(set) + ", expected a map of config keys");
            for (const auto& kv : set) {
                const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
                if (!isConfigKey(k) && !isConfigGroup(k))
                    fail(file, kv.first, "sweep.set." + k,
                         "unknown config key (known: " + joinList(configKeys()) + ")");
                if (!setKeys.insert(k).second) fail(file, kv.first, "sweep.set." + k, "duplicate key");
                applyKey(spec.base, k, kv.second, file, "sweep.set");
            }
        }
        if (s["repeats"]) spec.repeats = readYamlIntAtLeast(file, s["repeats"], "sweep.repeats", 1);
        if (s["warmup"]) spec.warmup = readYamlIntAtLeast(file, s["warmup"], "sweep.warmup", 0);

        const YAML::Node axes = s["axes"];
        if (!axes)
            throw InputError(where(file, s) +
                             ": sweep.axes: missing: a sweep needs at least one axis, e.g. axes: {hidden: [4096]}");
        if (!axes.IsMap() || axes.size() == 0)
            fail(file, axes, "sweep.axes",
                 "got " + nodeKindName(axes) + ", expected a map of axis: [values] with at least one axis");
        std::set<std::string> axisSeen;
        for (const auto& kv : axes) {
            if (!kv.first.IsScalar())
                fail(file, kv.first, "sweep.axes", "an axis name must be a string, got " + nodeKindName(kv.first));
            const std::string k = kv.first.Scalar();
            if (!axisSeen.insert(k).second) fail(file, kv.first, "sweep.axes." + k, "duplicate axis");
            for (const auto& sk : setKeys)
                if (sk == k || (k.size() > sk.size() && k.compare(0, sk.size(), sk) == 0 && k[sk.size()] == '.'))
                    fail(file, kv.first, "sweep.axes." + k, "also set in sweep.set." + sk + "; give it in one place");
            spec.axes.push_back(parseAxis(file, k, kv.first, kv.second, spec.base));
        }
    } catch (const YAML::Exception& e) {
        throw InputError(file + ": " + e.what());
    }
    return spec;
}

SweepSpec loadSweep(const std::filesystem::path& path) {
    return parseSweep(readTextFile(path, "sweep"), path.string(), path.parent_path());
}

SweepPlan expandSweep(const SweepSpec& spec) {
    SweepPlan plan;
    plan.name = spec.name;
    plan.settings = {{"config", toJson(spec.base)}, {"repeats", spec.repeats}, {"warmup", spec.warmup}};
    std::size_t total = 1;
    for (const auto& a : spec.axes) {
        plan.axisKeys.push_back(a.key);
        if (a.values.empty()) throw InputError(spec.file + ": sweep.axes." + a.key + ": empty axis");
        total *= a.values.size();
        if (total > kMaxSweepPoints)
            throw InputError(fmt::format("{}: sweep.axes: the cross product exceeds {} points; split the sweep",
                                         spec.file, kMaxSweepPoints));
    }
    std::vector<std::size_t> at(spec.axes.size(), 0);
    std::optional<std::string> firstBad;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < total; ++i) {
        SweepPoint p;
        p.index = i;
        p.config = spec.base;
        p.repeats = spec.repeats;
        p.warmup = spec.warmup;
        for (std::size_t a = 0; a < spec.axes.size(); ++a) {
            const std::string& key = spec.axes[a].key;
            const std::string& value = spec.axes[a].values[at[a]];
            p.keys.emplace_back(key, value);
            p.id += (a ? "," : "") + key + "=" + value;
            if (key == "pattern")
                p.pattern = parsePattern(value);
            else if (key == "variant")
                p.variant = parseVariant(value);
        }
        try {
            for (const auto& [key, value] : p.keys)
                if (key != "pattern" && key != "variant")
                    applySet(p.config, key + "=" + value);  // canonical text reads back the same value
            validate(p.config);
            if (p.pattern) p.notValid = patternInvalidReason(p.config.shape, *p.pattern);
            plan.points.push_back(std::move(p));
        } catch (const InputError& e) {
            if (!bad++) firstBad = fmt::format("point {} of {} ({}): {}", i + 1, total, p.id, e.what());
        }
        for (std::size_t a = spec.axes.size(); a-- > 0;) {
            if (++at[a] < spec.axes[a].values.size()) break;
            at[a] = 0;
        }
    }
    if (bad)
        throw InputError(
            spec.file + ": " + *firstBad +
            (bad > 1 ? fmt::format(" (and {} more of the {} points fail validation)", bad - 1, total) : ""));
    return plan;
}

// ---------------------------------------------------------------- rows

namespace {

// The rows of a sweep JSONL (readSweepRows); *tornAt: where a torn last line starts, if one is.
std::vector<nlohmann::json> readRows(const std::filesystem::path& jsonl, std::optional<std::size_t>* tornAt) {
    const std::string text = readTextFile(jsonl, "sweep rows", kMaxSweepRowsBytes);

    std::vector<nlohmann::json> rows;
    std::size_t pos = 0, goodEnd = 0, lineNo = 0;
    bool torn = false;
    while (pos < text.size()) {
        ++lineNo;
        const auto nl = text.find('\n', pos);
        const bool complete = nl != std::string::npos;
        const std::string line = text.substr(pos, complete ? nl - pos : std::string::npos);
        const std::size_t next = complete ? nl + 1 : text.size();
        const bool last = next >= text.size();
        if (line.find_first_not_of(" \t\r") == std::string::npos) {
            if (complete)
                goodEnd = next;
            else
                torn = true;
            pos = next;
            continue;
        }
        nlohmann::json row = nlohmann::json::parse(
            line, jsonDepthLimit(fmt::format("{}:{}", jsonl.string(), lineNo), "sweep row"), false);
        if (!complete || row.is_discarded()) {
            if (!last)
                throw InputError(fmt::format("{}:{}: not a JSON row (only the last line may be torn by a kill): {}",
                                             jsonl.string(), lineNo, line.substr(0, 80)));
            torn = true;
            break;
        }
        if (!row.is_object() || !row.contains("id") || !row["id"].is_string())
            throw InputError(
                fmt::format("{}:{}: a sweep row must be a JSON object with a string \"id\"", jsonl.string(), lineNo));
        // A row is measured ("ok") or its pattern cannot be formed ("not_valid"): any other status
        // would be counted as one of them without being either.
        const nlohmann::json status = row.contains("status") ? row["status"] : nlohmann::json();
        if (status != "ok" && status != "not_valid")
            throw InputError(fmt::format("{}:{}: point {}: status {}: a sweep row's status is \"ok\" or \"not_valid\"",
                                         jsonl.string(), lineNo, row["id"].get<std::string>(),
                                         status.is_null() ? std::string("missing") : status.dump()));
        rows.push_back(std::move(row));
        goodEnd = next;
        pos = next;
    }
    if (torn) *tornAt = goodEnd;
    return rows;
}

void cutTornLine(const std::filesystem::path& jsonl, std::optional<std::size_t> tornAt) {
    if (!tornAt) return;
    std::error_code ec;
    std::filesystem::resize_file(jsonl, *tornAt, ec);
    if (ec) throw InputError(jsonl.string() + ": cannot cut off the torn last line: " + ec.message());
}

}  // namespace

std::vector<nlohmann::json> readSweepRows(const std::filesystem::path& jsonl, bool truncateTorn) {
    std::optional<std::size_t> tornAt;
    std::vector<nlohmann::json> rows = readRows(jsonl, &tornAt);
    if (truncateTorn) cutTornLine(jsonl, tornAt);
    return rows;
}

// ---------------------------------------------------------------- runner

SweepRunner::SweepRunner(SweepPlan plan, SweepRunOptions options) : plan_(std::move(plan)), opts_(std::move(options)) {}

std::vector<nlohmann::json> SweepRunner::run(const Measure& measure) {
    namespace fs = std::filesystem;
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();

    std::map<std::string, std::size_t> indexOf;
    for (const auto& p : plan_.points) indexOf.emplace(p.id, p.index);
    std::vector<std::optional<nlohmann::json>> byPoint(plan_.points.size());

    // Every check first: nothing is written (no directory, plan file or cut torn line) until the
    // rows already there are known to be of this plan.
    std::error_code ec;
    const bool exists = fs::exists(opts_.jsonlPath, ec) && fs::file_size(opts_.jsonlPath, ec) > 0;
    std::vector<nlohmann::json> resumed;
    std::optional<std::size_t> tornAt;
    if (exists && opts_.resume) {
        if (!opts_.planDir.empty()) checkSweepPlanFile(opts_.planDir, plan_);
        resumed = readRows(opts_.jsonlPath, &tornAt);
        for (std::size_t r = 0; r < resumed.size(); ++r) {
            const auto& row = resumed[r];
            const std::string id = row["id"].get<std::string>();
            if (row.contains("sweep") && row["sweep"] != plan_.name)
                throw InputError(fmt::format("{}:{}: row of sweep {}, not {}: resume into a fresh output directory",
                                             opts_.jsonlPath.string(), r + 1, row["sweep"].dump(), plan_.name));
            const auto it = indexOf.find(id);
            if (it == indexOf.end())
                throw InputError(
                    fmt::format("{}:{}: point {} is not in this sweep (was the sweep file changed?): "
                                "resume with the file it was started with, or start afresh",
                                opts_.jsonlPath.string(), r + 1, id));
            if (byPoint[it->second])
                throw InputError(fmt::format("{}:{}: point {} appears twice", opts_.jsonlPath.string(), r + 1, id));
            // The row's config is the point's as this run makes it (the sweep's set, base config and
            // axes): a row measured at another config is never mixed in.
            if (row.contains("config")) {
                const nlohmann::json now = toJson(plan_.points[it->second].config);
                if (row["config"] != now)
                    throw InputError(fmt::format(
                        "{}:{}: point {} was measured at another config than this run's ({}): resume with the sweep "
                        "file it was started with, or start afresh with --overwrite",
                        opts_.jsonlPath.string(), r + 1, id,
                        describeJsonDifferences(row["config"], now, "the row", "this run", "config")));
            }
            byPoint[it->second] = row;
        }
    } else if (exists && !opts_.overwrite) {
        throw InputError(opts_.jsonlPath.string() +
                         ": already holds rows of a sweep: continue it with --resume, start afresh with --overwrite, "
                         "or write to another --out");
    }

    for (const fs::path& p : {opts_.jsonlPath, opts_.csvPath})
        if (!p.parent_path().empty()) fs::create_directories(p.parent_path());
    cutTornLine(opts_.jsonlPath, tornAt);
    if (!opts_.planDir.empty()) writeSweepPlanFile(opts_.planDir, plan_);

    AppendFd jsonl(opts_.jsonlPath, !opts_.resume);
    // The CSV is derived: rebuilt from the JSONL's rows, so it never holds a row the JSONL lacks.
    const fs::path csvTmp = opts_.csvPath.string() + ".tmp";
    CsvWriter csv(AppendFd(resumed.empty() ? opts_.csvPath : csvTmp, true), plan_.axisKeys);
    if (!resumed.empty()) {
        for (const auto& row : resumed) csv.add(row);
        fs::rename(csvTmp, opts_.csvPath);
    }
    fsyncDir(opts_.jsonlPath);
    fsyncDir(opts_.csvPath);

    SweepProgress prog;
    prog.total = plan_.points.size();
    prog.resumed = resumed.size();
    prog.done = resumed.size();
    std::size_t measuredNow = 0, remainingToMeasure = 0;
    double measuredSeconds = 0;
    for (const auto& p : plan_.points)
        if (!byPoint[p.index] && !p.notValid) ++remainingToMeasure;
    auto report = [&](const SweepPoint* last) {
        if (!opts_.progress) return;
        prog.elapsedS = std::chrono::duration<double>(Clock::now() - t0).count();
        prog.last = last;
        if (remainingToMeasure == 0)
            prog.etaS = 0.0;
        else if (measuredNow)
            prog.etaS = measuredSeconds / double(measuredNow) * double(remainingToMeasure);
        else
            prog.etaS.reset();
        opts_.progress(prog);
    };
    report(nullptr);

    for (const SweepPoint& p : plan_.points) {
        if (byPoint[p.index]) continue;
        nlohmann::json point = nlohmann::json::object();
        for (const auto& [k, v] : p.keys) {
            const auto flat = flatConfig(p.config);
            // clang 14 cannot capture a structured binding in a lambda.
            auto it = std::find_if(flat.begin(), flat.end(), [&key = k](const auto& kv) { return kv.first == key; });
            point[k] = it != flat.end() ? it->second : nlohmann::json(v);
        }
        nlohmann::json row = {
            {"sweep", plan_.name}, {"id", p.id}, {"index", p.index}, {"point", point}, {"config", toJson(p.config)}};
        if (p.notValid) {
            row["status"] = "not_valid";
            row["reason"] = *p.notValid;
            row["elapsed_s"] = 0.0;
        } else {
            const auto ts = Clock::now();
            nlohmann::json result = measure(p);
            const double secs = std::chrono::duration<double>(Clock::now() - ts).count();
            row["status"] = "ok";
            row["elapsed_s"] = secs;
            row["result"] = std::move(result);
            ++measuredNow;
            measuredSeconds += secs;
            --remainingToMeasure;
        }
        jsonl.append(row.dump() + "\n");
        csv.add(row);
        byPoint[p.index] = std::move(row);
        ++prog.done;
        report(&p);
    }
    csv.finish();

    std::vector<nlohmann::json> rows;
    rows.reserve(byPoint.size());
    for (auto& r : byPoint) rows.push_back(std::move(*r));
    return rows;
}

// ---------------------------------------------------------------- text

std::string formatSweepSummary(const SweepPlan& plan, const std::vector<nlohmann::json>& rows,
                               const std::vector<std::string>& fieldsIn) {
    std::map<std::string, const nlohmann::json*> byId;
    for (const auto& r : rows)
        if (r.contains("id") && r["id"].is_string()) byId[r["id"].get<std::string>()] = &r;

    std::vector<std::string> fields = fieldsIn;
    if (fields.empty()) {
        for (const auto& p : plan.points) {
            auto it = byId.find(p.id);
            if (it == byId.end() || !it->second->contains("result") || !(*it->second)["result"].is_object()) continue;
            for (auto f = (*it->second)["result"].begin(); f != (*it->second)["result"].end() && fields.size() < 4; ++f)
                if (f->is_number()) fields.push_back(f.key());
            break;
        }
    }
    std::size_t idw = 2;
    for (const auto& p : plan.points) idw = std::max(idw, p.id.size());
    std::vector<std::size_t> fw;
    for (const auto& f : fields) fw.push_back(std::max<std::size_t>(f.size(), 10));

    std::string out = fmt::format("sweep {}: {} points\n", plan.name, plan.points.size());
    out += fmt::format("{:<{}}  {:<9}", "id", idw, "status");
    for (std::size_t i = 0; i < fields.size(); ++i) out += fmt::format("  {:>{}}", fields[i], fw[i]);
    out += "\n";
    std::size_t ok = 0, notValid = 0, missing = 0;
    for (const auto& p : plan.points) {
        auto it = byId.find(p.id);
        if (it == byId.end()) {
            ++missing;
            out += fmt::format("{:<{}}  {}\n", p.id, idw, "not run");
            continue;
        }
        const nlohmann::json& row = *it->second;
        const std::string status = row.value("status", "?");
        if (status != "ok") {
            ++notValid;
            out += fmt::format("{:<{}}  {:<9}  {}\n", p.id, idw, status, row.value("reason", ""));
            continue;
        }
        ++ok;
        out += fmt::format("{:<{}}  {:<9}", p.id, idw, status);
        for (std::size_t i = 0; i < fields.size(); ++i) {
            std::string cell = "-";
            const std::string ptr = "/result/" + [&] {
                std::string s = fields[i];
                std::replace(s.begin(), s.end(), '.', '/');
                return s;
            }();
            const nlohmann::json::json_pointer jp(ptr);
            if (row.contains(jp)) {
                const auto& v = row[jp];
                cell = v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : cellText(v);
            }
            out += fmt::format("  {:>{}}", cell, fw[i]);
        }
        out += "\n";
    }
    out += fmt::format("{} measured, {} not valid, {} not run\n", ok, notValid, missing);
    return out;
}

std::string formatSweepProgress(const SweepProgress& p, int barWidth) {
    const double frac = p.total ? double(p.done) / double(p.total) : 1.0;
    const int filled = static_cast<int>(std::lround(frac * barWidth));
    std::string bar = "[" + std::string(std::size_t(std::max(0, filled)), '#') +
                      std::string(std::size_t(std::max(0, barWidth - filled)), '.') + "]";
    std::string s =
        fmt::format("{} {}/{} {:3.0f}%  {} elapsed", bar, p.done, p.total, frac * 100.0, duration(p.elapsedS));
    s += p.etaS ? ", ETA " + duration(*p.etaS) : ", ETA ?";
    if (p.last) s += "  " + p.last->id;
    return s;
}

// ---------------------------------------------------------------- scaling out

SweepShard parseSweepShard(const std::string& text) {
    const auto bad = [&](const std::string& why) {
        return InputError("--shard " + text + ": " + why + " (expected K/N with 1 <= K <= N, e.g. 2/3)");
    };
    const auto slash = text.find('/');
    if (slash == std::string::npos) throw bad("no '/'");
    auto number = [&](std::string_view part) {
        std::size_t v = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        if (part.empty() || ec != std::errc() || end != part.data() + part.size()) throw bad("not a number");
        return v;
    };
    const std::string_view all(text);
    SweepShard s{number(all.substr(0, slash)), number(all.substr(slash + 1))};
    if (s.n < 1 || s.n > 4096) throw bad("N must be in [1, 4096]");
    if (s.k < 1 || s.k > s.n) throw bad("K must be in [1, N]");
    return s;
}

SweepPlan shardPlan(const SweepPlan& whole, SweepShard shard) {
    SweepPlan out;
    out.name = whole.name;
    out.axisKeys = whole.axisKeys;
    out.shard = fmt::format("{}/{}", shard.k, shard.n);
    out.settings = whole.settings;
    out.device = whole.device;
    out.allIds = whole.allIds;
    if (out.allIds.empty())
        for (const auto& p : whole.points) out.allIds.push_back(p.id);
    for (std::size_t i = shard.k - 1; i < whole.points.size(); i += shard.n) {
        SweepPoint p = whole.points[i];
        p.index = out.points.size();
        out.points.push_back(std::move(p));
    }
    return out;
}

namespace {

nlohmann::json planJson(const SweepPlan& plan) {
    nlohmann::json ids = nlohmann::json::array();
    if (plan.allIds.empty())
        for (const auto& p : plan.points) ids.push_back(p.id);
    else
        for (const auto& id : plan.allIds) ids.push_back(id);
    return {{"sweep", plan.name},        {"axes", plan.axisKeys}, {"shard", plan.shard.empty() ? "1/1" : plan.shard},
            {"settings", plan.settings}, {"device", plan.device}, {"points", ids}};
}

// The differences between two plan files' JSON, those of `keys` only, named: the points by
// their count and first differing id (a list of 100,000 ids is not printed), the rest as
// describeJsonDifferences says them.
std::string planDifferences(const nlohmann::json& a, const nlohmann::json& b, const std::vector<std::string>& keys,
                            std::string_view aName, std::string_view bName) {
    std::string out;
    for (const auto& k : keys) {
        const nlohmann::json& va = a.contains(k) ? a[k] : nlohmann::json();
        const nlohmann::json& vb = b.contains(k) ? b[k] : nlohmann::json();
        if (va == vb) continue;
        std::string d;
        if (k == "points" && va.is_array() && vb.is_array()) {
            std::size_t i = 0;
            while (i < va.size() && i < vb.size() && va[i] == vb[i]) ++i;
            d = fmt::format("points: {} in {}, {} in {}; point {} is {} in {}, {} in {}", va.size(), aName, vb.size(),
                            bName, i + 1, i < va.size() ? va[i].dump() : "absent", aName,
                            i < vb.size() ? vb[i].dump() : "absent", bName);
        } else {
            d = describeJsonDifferences(va, vb, aName, bName, k);
        }
        out += (out.empty() ? "" : "; ") + d;
    }
    return out;
}

nlohmann::json readPlanFile(const std::filesystem::path& file) {
    nlohmann::json plan = readJsonFile(file, "sweep plan");
    try {
        (void)plan.at("sweep").get<std::string>();
        (void)plan.at("axes").get<std::vector<std::string>>();
        (void)plan.at("points").get<std::vector<std::string>>();
        (void)parseSweepShard(plan.at("shard").get<std::string>());
    } catch (const nlohmann::json::exception& e) {
        throw InputError(file.string() + ": not a sweep plan: " + e.what());
    } catch (const InputError& e) {
        throw InputError(file.string() + ": not a sweep plan: " + e.what());
    }
    if (!plan.contains("settings"))
        throw InputError(file.string() +
                         ": a sweep plan without \"settings\" (written by an older ze-probe): what its rows were "
                         "measured at is not recorded; rerun it with --overwrite");
    return plan;
}

}  // namespace

void writeSweepPlanFile(const std::filesystem::path& dir, const SweepPlan& plan) {
    writeFileAtomically(dir / (plan.name + ".plan.json"), planJson(plan).dump(1) + "\n", "--out");
}

void checkSweepPlanFile(const std::filesystem::path& dir, const SweepPlan& plan) {
    const std::filesystem::path file = dir / (plan.name + ".plan.json");
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(file, ec)))
        throw InputError(file.string() +
                         ": missing: what the sweep's rows were measured at is not recorded, so they cannot be "
                         "resumed; start afresh with --overwrite");
    const nlohmann::json then = readPlanFile(file);
    const std::string diff = planDifferences(
        then, planJson(plan), {"sweep", "axes", "shard", "settings", "device", "points"}, "the plan file", "this run");
    if (!diff.empty())
        throw InputError(file.string() + ": --resume refused: this run differs from the one that wrote the rows (" +
                         diff +
                         "): resume with the sweep file and options it was started with, or start afresh with "
                         "--overwrite or another --out");
}

SweepMerge mergeSweepShards(const std::vector<std::filesystem::path>& dirs) {
    namespace fs = std::filesystem;
    if (dirs.empty()) throw InputError("sweep-merge: no shard directories given");
    refuseRepeatedPaths(dirs, "sweep-merge");
    SweepMerge m;
    std::vector<std::string> ids;
    fs::path firstPlan;
    nlohmann::json first;
    std::map<std::string, fs::path> shardOf;  // "K/N" -> the plan file of that shard
    std::map<std::string, std::size_t> indexOf;
    std::map<std::string, std::string> heldBy;  // id -> file that holds its row
    std::vector<std::optional<nlohmann::json>> byIndex;
    for (const auto& dir : dirs) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) throw InputError(dir.string() + ": not a directory");
        std::vector<fs::path> plans;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().string().ends_with(".plan.json")) plans.push_back(e.path());
        if (plans.empty())
            throw InputError(dir.string() +
                             ": no <sweep>.plan.json (write shards with ze-probe --sweep FILE --shard K/N)");
        if (plans.size() > 1)
            throw InputError(dir.string() + ": holds the plans of " + std::to_string(plans.size()) +
                             " sweeps; give one sweep's shard directories");
        const nlohmann::json plan = readPlanFile(plans[0]);
        const auto name = plan["sweep"].get<std::string>();
        const std::string shard = plan["shard"].get<std::string>();
        if (m.name.empty()) {
            m.name = name;
            m.axisKeys = plan["axes"].get<std::vector<std::string>>();
            ids = plan["points"].get<std::vector<std::string>>();
            first = plan;
            firstPlan = plans[0];
            for (std::size_t i = 0; i < ids.size(); ++i) indexOf.emplace(ids[i], i);
            byIndex.resize(ids.size());
        } else {
            // One sweep at one configuration: the plans agree in everything but the shard index
            // (and the device, which may differ between the GPUs of one kind).
            nlohmann::json a = first, b = plan;
            for (auto* j : {&a, &b}) (*j)["shards"] = parseSweepShard((*j)["shard"].get<std::string>()).n;
            const std::string diff = planDifferences(a, b, {"sweep", "axes", "shards", "settings", "points"},
                                                     firstPlan.string(), plans[0].string());
            if (!diff.empty())
                throw InputError("sweep-merge: " + dir.string() + " is not a shard of the sweep in " +
                                 firstPlan.parent_path().string() + " (" + diff +
                                 "): merge the shards of one run only");
        }
        const auto [held, fresh] = shardOf.emplace(shard, plans[0]);
        if (!fresh)
            throw InputError("sweep-merge: " + held->second.string() + " and " + plans[0].string() +
                             " are both shard " + shard + ": give each shard once");
        const fs::path jsonl = dir / (name + ".jsonl");
        if (!fs::exists(jsonl)) continue;  // a shard that never started: its points are reported missing
        const auto rows = readSweepRows(jsonl, false);
        for (std::size_t r = 0; r < rows.size(); ++r) {
            nlohmann::json row = rows[r];
            const std::string id = row.value("id", "");
            const auto it = indexOf.find(id);
            if (it == indexOf.end())
                throw InputError(fmt::format("{}:{}: point {} is not in the plan of {}", jsonl.string(), r + 1, id,
                                             firstPlan.string()));
            if (byIndex[it->second])
                throw InputError(fmt::format("{}:{}: point {} is also in {}: the shards overlap", jsonl.string(), r + 1,
                                             id, heldBy[id]));
            heldBy[id] = jsonl.string();
            row["index"] = it->second;
            byIndex[it->second] = std::move(row);
        }
    }
    m.total = ids.size();
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (byIndex[i])
            m.rows.push_back(std::move(*byIndex[i]));
        else
            m.missing.push_back(ids[i]);
    }
    return m;
}

void writeSweepFiles(const std::filesystem::path& jsonl, const std::filesystem::path& csv,
                     const std::vector<std::string>& axisKeys, const std::vector<nlohmann::json>& rows) {
    namespace fs = std::filesystem;
    for (const fs::path& p : {jsonl, csv}) {
        std::error_code ec;
        if (fs::exists(p, ec)) throw InputError(p.string() + ": already exists; merge into a fresh directory");
        if (!p.parent_path().empty()) fs::create_directories(p.parent_path());
    }
    AppendFd j(jsonl, true);
    std::string text;
    for (const auto& r : rows) text += r.dump() + "\n";
    if (!text.empty()) j.append(text);
    CsvWriter c(AppendFd(csv, true), axisKeys);
    for (const auto& r : rows) c.add(r);
    c.finish();
    fsyncDir(jsonl);
}

}  // namespace zp::probe
