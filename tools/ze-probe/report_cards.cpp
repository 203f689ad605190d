#include "report_cards.hpp"

#include "zp/probe/file_io.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <functional>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "result_schemas.hpp"
#include "zp/probe/gate.hpp"
#include "zp/probe/input_error.hpp"

namespace zp::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string esc(const std::string& s) {
    std::string o;
    for (char c : s) {
        switch (c) {
            case '&': o += "&amp;"; break;
            case '<': o += "&lt;"; break;
            case '>': o += "&gt;"; break;
            case '"': o += "&quot;"; break;
            default: o += c;
        }
    }
    return o;
}

// A pattern name that may wrap after its underscores (within_<wbr>row_<wbr>duplicate).
std::string breakable(const std::string& s) {
    std::string o;
    for (char c : esc(s)) o += c == '_' ? std::string("_<wbr>") : std::string(1, c);
    return o;
}

std::optional<double> num(const json& j, const char* key) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
    return j[key].get<double>();
}

std::string ms(std::optional<double> v) { return v ? fmt::format("{:.3f}", *v) : "–"; }

enum class Cell { pass, fail, on_bar, unknown };

const char* cellClass(Cell c) {
    switch (c) {
        case Cell::pass: return "pass";
        case Cell::fail: return "fail";
        case Cell::on_bar: return "onbar";
        default: return "unknown";
    }
}
const char* cellColour(Cell c) {
    switch (c) {
        case Cell::pass: return "#2e7d32";
        case Cell::fail: return "#c62828";
        case Cell::on_bar: return "#ef8f00";
        default: return "#777777";
    }
}
const char* cellWord(Cell c) {
    switch (c) {
        case Cell::pass: return "pass";
        case Cell::fail: return "fail";
        case Cell::on_bar: return "on the bar";
        default: return "no figure";
    }
}

// One pattern of one candidate against the bar: from the CI where it is there; a projection
// that carries its own verdict string (later schemas) wins.
Cell classify(const json& p, double bar) {
    if (p.contains("verdict") && p["verdict"].is_string()) {
        const std::string v = p["verdict"];
        if (v == "pass") return Cell::pass;
        if (v == "fail") return Cell::fail;
        if (v == "on_the_bar" || v == "on the bar") return Cell::on_bar;
    }
    const auto lo = num(p, "ci_low_ms"), hi = num(p, "ci_high_ms");
    if (!lo || !hi) return Cell::unknown;
    if (*lo >= bar) return Cell::pass;
    if (*hi < bar) return Cell::fail;
    return Cell::on_bar;
}

// A candidate's verdict: a string (`verdict` or `verdict.verdict`), else `verdict.pass`.
std::string verdictWord(const json& cand) {
    if (!cand.contains("verdict")) return "–";
    const json& v = cand["verdict"];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object()) {
        if (v.contains("verdict") && v["verdict"].is_string()) return v["verdict"].get<std::string>();
        if (v.contains("pass") && v["pass"].is_boolean()) return v["pass"].get<bool>() ? "pass" : "fail";
    }
    return "–";
}
Cell verdictCell(const std::string& w) {
    if (w == "pass") return Cell::pass;
    if (w == "fail") return Cell::fail;
    if (w == "on_the_bar" || w == "on the bar") return Cell::on_bar;
    return Cell::unknown;
}

const json& gateOf(const LoadedCard& c) {
    static const json none;
    return c.card.contains("gate") && c.card["gate"].is_object() ? c.card["gate"] : none;
}
const json& candidatesOf(const LoadedCard& c) {
    static const json none = json::array();
    const json& g = gateOf(c);
    return g.contains("candidates") && g["candidates"].is_array() ? g["candidates"] : none;
}
double barOf(const LoadedCard& c, const json& cand) {
    if (auto b = num(cand, "min_saving_ms")) return *b;
    if (auto b = num(gateOf(c), "min_saving_ms")) return *b;
    return 0.5;
}

// Every pattern named by any card's gate, in first-seen order.
std::vector<std::string> patternsOf(const std::vector<LoadedCard>& cards) {
    std::vector<std::string> out;
    auto add = [&](const std::string& p) {
        if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    };
    for (const auto& c : cards)
        for (const auto& cand : candidatesOf(c)) {
            if (cand.contains("projections"))
                for (const auto& p : cand["projections"]) add(p.value("pattern", "?"));
            if (cand.contains("not_valid"))
                for (const auto& p : cand["not_valid"]) add(p.value("pattern", "?"));
        }
    return out;
}

const json* projection(const json& cand, const std::string& pattern) {
    if (!cand.contains("projections")) return nullptr;
    for (const auto& p : cand["projections"])
        if (p.value("pattern", "") == pattern) return &p;
    return nullptr;
}
const json* notValid(const json& cand, const std::string& pattern) {
    if (!cand.contains("not_valid")) return nullptr;
    for (const auto& p : cand["not_valid"])
        if (p.value("pattern", "") == pattern) return &p;
    return nullptr;
}

// An axis label that fits the panel's 46 px margin: 3 digits, thousands as k and millions as M
// (a wide CPU interval's "-4.46e+04" would not).
std::string tickLabel(double v) {
    if (std::fabs(v) >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
    if (std::fabs(v) >= 1e3) return fmt::format("{:.3g}k", v / 1e3);
    return fmt::format("{:.3g}", v);
}

// One pattern's panel: the CI as a whisker, the median as a dot, the bar dashed, zero solid;
// the scale is the panel's own (the CI, the bar and zero, with a margin).
std::string panelSvg(const json& p, double bar, const std::string& title, double x0, double y0, double w, double h) {
    std::string s;
    const Cell cell = classify(p, bar);
    const auto lo = num(p, "ci_low_ms"), hi = num(p, "ci_high_ms"), med = num(p, "median_ms");
    s += fmt::format(R"~(<g transform="translate({:.1f},{:.1f})">)~", x0, y0);
    s += fmt::format(R"~(<rect x="0" y="0" width="{:.1f}" height="{:.1f}" fill="#fafafa" stroke="#cccccc"/>)~", w, h);
    s += fmt::format(R"~(<text x="6" y="15" font-size="12" font-weight="bold">{}</text>)~", esc(title));
    s += fmt::format(R"~(<text x="6" y="28" font-size="10" fill="{}">{}</text>)~", cellColour(cell), cellWord(cell));
    if (!lo || !hi || !med) {
        s += R"~(<text x="6" y="40" font-size="11" fill="#777">no CI (not finite)</text></g>)~";
        return s;
    }
    double vmin = std::min({*lo, bar, 0.0}), vmax = std::max({*hi, bar, 0.0});
    const double pad = (vmax - vmin) * 0.12 + 1e-9;
    vmin -= pad;
    vmax += pad;
    const double top = 36, bottom = h - 22, left = 46, right = w - 10;
    auto y = [&](double v) { return bottom - (v - vmin) / (vmax - vmin) * (bottom - top); };
    for (int t = 0; t <= 4; ++t) {
        const double v = vmin + (vmax - vmin) * t / 4;
        s += fmt::format(R"~(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#e4e4e4"/>)~", left, right,
                         y(v), y(v));
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="9" text-anchor="end" fill="#555">{}</text>)~",
                         left - 3, y(v) + 3, tickLabel(v));
    }
    s += fmt::format(R"~(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#000" stroke-width="0.8"/>)~",
                     left, right, y(0), y(0));
    s += fmt::format(
        R"~(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#1565c0" stroke-dasharray="5,3"/>)~", left,
        right, y(bar), y(bar));
    s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="9" text-anchor="end" fill="#1565c0">bar {}</text>)~",
                     right, y(bar) - 3, bar);
    const double cx = (left + right) / 2;
    const char* col = cellColour(cell);
    s += fmt::format(R"~(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="{3}" stroke-width="2"/>)~",
                     cx, y(*lo), y(*hi), col);
    for (double v : {*lo, *hi})
        s += fmt::format(R"~(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"/>)~",
                         cx - 8, cx + 8, y(v), y(v), col);
    s += fmt::format(R"~(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"/>)~", cx, y(*med), col);
    s += fmt::format(R"~(<text x="6" y="{:.1f}" font-size="10" fill="#333">{} ms [{}, {}]</text>)~", h - 7, ms(med),
                     ms(lo), ms(hi));
    s += "</g>";
    return s;
}

// Per-pattern panels of one candidate, wrapped into rows that fit `width`.
std::string candidatePanelsSvg(const LoadedCard& card, const json& cand, double width) {
    const double bar = barOf(card, cand), w = 190, h = 150, gap = 10;
    const int perRow = std::max(1, int((width + gap) / (w + gap)));
    const auto& projs = cand.contains("projections") ? cand["projections"] : json::array();
    const int n = int(projs.size());
    const int rows = std::max(1, (n + perRow - 1) / perRow);
    const double H = rows * (h + gap);
    std::string s = fmt::format(
        R"~(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif">)~",
        width, H, width, H);
    for (int i = 0; i < n; ++i)
        s += panelSvg(projs[std::size_t(i)], bar, projs[std::size_t(i)].value("pattern", "?"), (i % perRow) * (w + gap),
                      (i / perRow) * (h + gap), w, h);
    if (n == 0) s += R"~(<text x="4" y="20" font-size="12">no projections</text>)~";
    return s + "</svg>";
}

// A colour for the i-th of a chart's kernels or a plot's lines: 20 fixed, then hues a golden
// angle apart, so no two indices share a colour (17 kernels once shared 10 colours).
std::string seriesColour(std::size_t i) {
    static const char* const kFixed[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                                         "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#8c6d31",
                                         "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"};
    if (i < std::size(kFixed)) return kFixed[i];
    const std::size_t k = i - std::size(kFixed);
    return fmt::format("hsl({:.3f},{}%,{}%)", std::fmod(double(k) * 137.50776405, 360.0), 55 + int(k % 3) * 10,
                       35 + int(k % 4) * 8);
}

// The bar and the layers of a candidate, and its projections as the gate's, for the deciding rule.
std::vector<probe::Projection> projectionsOf(const json& cand) {
    std::vector<probe::Projection> out;
    if (!cand.contains("projections") || !cand["projections"].is_array()) return out;
    for (const auto& p : cand["projections"]) {
        probe::Projection q;
        q.pattern = p.value("pattern", "?");
        q.medianMs = num(p, "median_ms").value_or(NAN);
        q.ciLowMs = num(p, "ci_low_ms").value_or(NAN);
        q.ciHighMs = num(p, "ci_high_ms").value_or(NAN);
        out.push_back(std::move(q));
    }
    return out;
}
// The pattern that decides the candidate's verdict, by the gate's own rule (probe::decidingPattern).
std::optional<std::string> decidingOf(const LoadedCard& c, const json& cand) {
    return probe::decidingPattern(projectionsOf(cand), barOf(c, cand));
}

int layersOf(const LoadedCard& c, const json& cand) {
    if (auto l = num(cand, "layers")) return int(*l);
    if (auto l = num(gateOf(c), "layers")) return int(*l);
    return 43;
}

// The verdict line as the report shows it (at most 200 characters: a card of an older ze-probe
// may hold a paragraph, which then goes to the detail) and the detail.
std::pair<std::string, std::string> verdictLineAndDetail(const json& cand) {
    const json v = cand.value("verdict", json());
    std::string line = v.is_object() ? v.value("line", std::string()) : std::string();
    std::string detail = v.is_object() ? v.value("detail", std::string()) : std::string();
    if (line.size() > probe::kVerdictLineMax) {
        if (detail.empty()) detail = line;
        std::size_t cut = probe::kVerdictLineMax - 3;
        while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80)
            --cut;  // not inside a UTF-8 character
        line = line.substr(0, cut) + "...";
    }
    if (line.empty()) line = verdictWord(cand) + " " + cand.value("candidate", "?");
    return {line, detail == line ? std::string() : detail};
}

// The bar, stated: every (bar, layers) the cards' candidates are held to.
std::string barStatement(const std::vector<LoadedCard>& cards) {
    std::set<std::pair<double, int>> bars;
    for (const auto& c : cards)
        for (const auto& cand : candidatesOf(c)) bars.insert({barOf(c, cand), layersOf(c, cand)});
    if (bars.empty()) return {};
    std::string which;
    for (const auto& [bar, layers] : bars)
        which += (which.empty() ? "" : "; ") + fmt::format("<b>{} ms</b> over {} layers", bar, layers);
    return "<p class=\"bar-statement\"><b>The bar:</b> a candidate passes when, on every valid route pattern, the 95% "
           "CI of its projected saving against the baseline lies at or above " +
           which +
           " (CONTRACT §8) and every case it ran is bit-exact. It fails when a pattern's CI lies wholly below the "
           "bar (or a case failed), and is on the bar otherwise: more rounds would decide it.</p>";
}

// One candidate's forest plot: the patterns on one axis (rows), each interval as a whisker with
// its median, the bar dashed and zero solid; the pattern that decides the verdict marked.
std::string forestSvg(const LoadedCard& c, const json& cand, const std::vector<std::string>& patterns, double width,
                      double* height = nullptr) {
    const double bar = barOf(c, cand);
    const auto decides = decidingOf(c, cand);
    std::vector<std::string> rows;
    for (const auto& p : patterns)
        if (projection(cand, p) || notValid(cand, p)) rows.push_back(p);
    const double rowH = 22, top = 26, label = 170, right = 200, H = top + rowH * double(rows.size()) + 28;
    if (height) *height = H;
    const double left = label, plotR = width - right;
    double vmin = std::min(bar, 0.0), vmax = std::max(bar, 0.0);
    for (const auto& p : rows)
        if (const json* pr = projection(cand, p)) {
            for (const char* k : {"ci_low_ms", "ci_high_ms", "median_ms"})
                if (auto v = num(*pr, k); v && std::isfinite(*v)) {
                    vmin = std::min(vmin, *v);
                    vmax = std::max(vmax, *v);
                }
        }
    const double pad = (vmax - vmin) * 0.06 + 1e-9;
    vmin -= pad;
    vmax += pad;
    auto x = [&](double v) { return left + (v - vmin) / (vmax - vmin) * (plotR - left); };
    std::string s = fmt::format(
        R"~(<svg xmlns="http://www.w3.org/2000/svg" class="forest" data-candidate="{}" data-bar="{}" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif">)~",
        esc(cand.value("candidate", "?")), bar, width, H, width, H);
    s += fmt::format(R"~(<rect x="0" y="0" width="{:.0f}" height="{:.0f}" fill="#fcfcfc" stroke="#dddddd"/>)~", width,
                     H);
    s += fmt::format(R"~(<text x="6" y="16" font-size="12" font-weight="bold">{}</text>)~",
                     esc(cand.value("candidate", "?") + " · " + c.label));
    s += fmt::format(
        R"~(<text x="{:.1f}" y="16" font-size="10" text-anchor="end" fill="#555">median [95% CI], ms over {} layers · &#9654; decides the verdict</text>)~",
        width - 6, layersOf(c, cand));
    const double y0 = top, y1 = top + rowH * double(rows.size());
    for (int t = 0; t <= 4; ++t) {
        const double v = vmin + (vmax - vmin) * t / 4;
        s += fmt::format(R"~(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="#eeeeee"/>)~", x(v), y0,
                         y1);
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="9" text-anchor="middle" fill="#555">{}</text>)~",
                         std::clamp(x(v), left + 12, plotR - 12), y1 + 12, tickLabel(v));
    }
    s += fmt::format(
        R"~(<line class="zero" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="#000" stroke-width="0.8"/>)~",
        x(0), y0 - 4, y1);
    s += fmt::format(
        R"~(<line class="bar" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="#1565c0" stroke-width="1.5" stroke-dasharray="5,3"/>)~",
        x(bar), y0 - 4, y1 + 2);
    s += fmt::format(
        R"~(<text x="{:.1f}" y="{:.1f}" font-size="9" text-anchor="middle" fill="#1565c0">bar {} ms</text>)~",
        std::clamp(x(bar), left + 24, plotR - 24), y1 + 24, bar);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string& p = rows[i];
        const double yc = top + rowH * (double(i) + 0.5);
        const bool isDecider = decides && *decides == p;
        s += fmt::format(R"~(<g class="row{}" data-pattern="{}">)~", isDecider ? " decides" : "", esc(p));
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="11" text-anchor="end"{}>{}{}</text>)~", left - 6,
                         yc + 4, isDecider ? R"~( font-weight="bold")~" : "", isDecider ? "&#9654; " : "", esc(p));
        const json* pr = projection(cand, p);
        const auto lo = pr ? num(*pr, "ci_low_ms") : std::nullopt, hi = pr ? num(*pr, "ci_high_ms") : std::nullopt,
                   med = pr ? num(*pr, "median_ms") : std::nullopt;
        if (!pr) {
            s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="10" fill="#777">not valid</text></g>)~",
                             left + 4, yc + 4);
            continue;
        }
        const Cell cell = classify(*pr, bar);
        const char* col = cellColour(cell);
        if (lo && hi && med) {
            s += fmt::format(
                R"~(<line class="ci" x1="{0:.1f}" x2="{1:.1f}" y1="{2:.1f}" y2="{2:.1f}" stroke="{3}" stroke-width="2.5"/>)~",
                x(*lo), x(*hi), yc, col);
            for (double v : {*lo, *hi})
                s += fmt::format(
                    R"~(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="{3}" stroke-width="2"/>)~",
                    x(v), yc - 5, yc + 5, col);
            s += fmt::format(R"~(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}"/>)~", x(*med), yc, col);
        }
        const auto compact = [](std::optional<double> v) {
            return !v ? std::string("–") : std::fabs(*v) < 1e3 ? fmt::format("{:.3f}", *v) : fmt::format("{:.5g}", *v);
        };
        s +=
            fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="10" fill="{}"><title>{}</title>{} [{}, {}]</text>)~",
                        plotR + 8, yc + 4, col, cellWord(cell), compact(med), compact(lo), compact(hi));
        s += "</g>";
    }
    return s + "</svg>";
}

// The overview's lead: the bar, then per candidate its verdict line, forest plot and the detail.
std::string forestSection(const std::vector<LoadedCard>& cards, const std::vector<std::string>& patterns) {
    std::string s = barStatement(cards);
    for (const auto& c : cards)
        for (const auto& cand : candidatesOf(c)) {
            const auto [line, detail] = verdictLineAndDetail(cand);
            s += fmt::format(R"~(<div class="candidate"><p class="verdict-line {}">{}</p>)~",
                             cellClass(verdictCell(verdictWord(cand))), esc(line));
            s += forestSvg(c, cand, patterns, 960);
            if (!detail.empty())
                s += "<details class=\"verdict-detail\"><summary>detail</summary><p>" + esc(detail) + "</p></details>";
            s += "</div>";
        }
    return s;
}

// The sweep's plots: a metric against one axis, one line per variant (and per value of any other
// axis that varies). The x axis is the first axis other than variant whose value varies, a
// numeric one first (log2 when it spans 8x or more); categories otherwise.
struct SweepSeries {
    std::string name;
    std::vector<std::tuple<json, double, double, double>> points;  // x, y, y low, y high (NaN: none)
};

// The axes of a sweep's points, the values each takes, and the plot's x axis.
struct SweepAxes {
    std::vector<std::string> axes;  // first seen first
    std::map<std::string, std::vector<json>> values;
    std::string xAxis;
    bool numeric = false;  // the x axis' values are all numbers
    double xmin = 0, xmax = 1;
    bool log2x = false;
};

SweepAxes sweepAxes(const std::vector<json>& rows) {
    SweepAxes ax;
    auto& axes = ax.axes;
    auto& values = ax.values;
    auto& xAxis = ax.xAxis;
    for (const auto& r : rows)
        if (r.contains("point") && r["point"].is_object())
            for (const auto& [k, v] : r["point"].items()) {
                if (std::find(axes.begin(), axes.end(), k) == axes.end()) axes.push_back(k);
                auto& vs = values[k];
                if (std::find(vs.begin(), vs.end(), v) == vs.end()) vs.push_back(v);
            }
    for (int numericPass = 1; numericPass >= 0 && xAxis.empty(); --numericPass)
        for (const auto& a : axes) {
            if (a == "variant" || values[a].size() < 2) continue;
            const bool numeric =
                std::all_of(values[a].begin(), values[a].end(), [](const json& v) { return v.is_number(); });
            if (numeric == bool(numericPass)) {
                xAxis = a;
                break;
            }
        }
    if (xAxis.empty()) xAxis = "variant";
    const auto& xs = values[xAxis];
    ax.numeric = !xs.empty() && std::all_of(xs.begin(), xs.end(), [](const json& v) { return v.is_number(); });
    double& xmin = ax.xmin;
    double& xmax = ax.xmax;
    if (ax.numeric) {
        xmin = xmax = xs[0].get<double>();
        for (const auto& v : xs) {
            xmin = std::min(xmin, v.get<double>());
            xmax = std::max(xmax, v.get<double>());
        }
        ax.log2x = xmin > 0 && xmax / xmin >= 8;
        if (xmax == xmin) xmax = xmin + 1;
    }
    return ax;
}

using SweepMetric = std::function<std::optional<std::tuple<double, double, double>>(const json&)>;

// The plot's series (one per variant and value of the other varying axes) and the range of
// their y values, the bar included.
struct SweepData {
    std::vector<SweepSeries> series;
    double ymin, ymax;
};

SweepData sweepSeries(const std::vector<json>& rows, SweepAxes& ax, const SweepMetric& metric,
                      std::optional<double> bar, bool withBaseline, std::vector<std::string>& colourOrder) {
    const auto& axes = ax.axes;
    auto& values = ax.values;
    const auto& xAxis = ax.xAxis;
    // Series: variant, then the other varying axes' values.
    SweepData data{{}, bar.value_or(INFINITY), bar.value_or(-INFINITY)};
    auto& series = data.series;
    double& ymin = data.ymin;
    double& ymax = data.ymax;
    auto seriesOf = [&](const std::string& name) -> SweepSeries& {
        for (auto& s : series)
            if (s.name == name) return s;
        series.push_back({name, {}});
        if (std::find(colourOrder.begin(), colourOrder.end(), name) == colourOrder.end()) colourOrder.push_back(name);
        return series.back();
    };
    for (const auto& r : rows) {
        if (r.value("status", "") != "ok" || !r.contains("result") || !r.contains("point")) continue;
        const json& point = r["point"];
        const json& res = r["result"];
        if (!point.contains(xAxis)) continue;
        std::string rest;
        for (const auto& a : axes)
            if (a != xAxis && a != "variant" && values[a].size() > 1 && point.contains(a))
                rest += " · " + a + "=" + (point[a].is_string() ? point[a].get<std::string>() : point[a].dump());
        const std::string variant =
            point.contains("variant") ? point.value("variant", "?") : res.value("variant", std::string("?"));
        auto add = [&](const std::string& name, double y, double lo, double hi, bool once = false) {
            if (!std::isfinite(y)) return;
            if (once)  // the baseline of every variant's point at this x: one point
                for (const auto& q : seriesOf(name).points)
                    if (std::get<0>(q) == point[xAxis]) return;
            seriesOf(name).points.emplace_back(point[xAxis], y, lo, hi);
            for (double v : {y, lo, hi})
                if (std::isfinite(v)) {
                    ymin = std::min(ymin, v);
                    ymax = std::max(ymax, v);
                }
        };
        if (const auto m = metric(res)) add(variant + rest, std::get<0>(*m), std::get<1>(*m), std::get<2>(*m));
        if (withBaseline && variant != "baseline")
            if (const auto b = num(res, "baseline_median_ns")) add("baseline" + rest, *b / 1e3, NAN, NAN, true);
    }
    return data;
}

// `colourOrder`: the series named so far, shared by the plots of a report (a series keeps its colour).
std::string sweepPlotSvg(const std::vector<json>& rows, const std::string& title, const SweepMetric& metric,
                         std::optional<double> bar, bool withBaseline, double width,
                         std::vector<std::string>& colourOrder) {
    SweepAxes ax = sweepAxes(rows);
    SweepData data = sweepSeries(rows, ax, metric, bar, withBaseline, colourOrder);
    const std::string& xAxis = ax.xAxis;
    const auto& xs = ax.values[xAxis];
    const bool numeric = ax.numeric, log2x = ax.log2x;
    const double xmin = ax.xmin, xmax = ax.xmax;
    const auto& series = data.series;
    double ymin = data.ymin, ymax = data.ymax;
    const double label = 60, rightPad = 20, top = 28, plotH = 220;
    const double legendRows = double((series.size() + 2) / 3), H = top + plotH + 40 + 18 * legendRows + 8;
    std::string s = fmt::format(
        R"~(<svg xmlns="http://www.w3.org/2000/svg" class="sweep-plot" data-x="{}" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif">)~",
        esc(xAxis), width, H, width, H);
    s += fmt::format(R"~(<rect x="0" y="0" width="{:.0f}" height="{:.0f}" fill="#fcfcfc" stroke="#dddddd"/>)~", width,
                     H);
    s += fmt::format(R"~(<text x="6" y="16" font-size="12" font-weight="bold">{} against {}{}</text>)~", esc(title),
                     esc(xAxis), log2x ? " (log2 scale)" : "");
    if (series.empty()) return s + R"~(<text x="6" y="40" font-size="11" fill="#777">no measured point</text></svg>)~";
    if (ymax == ymin) ymax = ymin + 1;
    const double padY = (ymax - ymin) * 0.08;
    ymin -= padY;
    ymax += padY;
    const double left = label, plotR = width - rightPad, bottom = top + plotH;
    auto X = [&](const json& v) {
        if (numeric) {
            const double a = log2x ? std::log2(v.get<double>()) : v.get<double>();
            const double lo = log2x ? std::log2(xmin) : xmin, hi = log2x ? std::log2(xmax) : xmax;
            return left + 20 + (a - lo) / (hi - lo) * (plotR - left - 40);
        }
        const auto i = double(std::find(xs.begin(), xs.end(), v) - xs.begin());
        return left + (i + 0.5) / double(std::max<std::size_t>(1, xs.size())) * (plotR - left);
    };
    auto Y = [&](double v) { return bottom - (v - ymin) / (ymax - ymin) * plotH; };
    for (int t = 0; t <= 4; ++t) {
        const double v = ymin + (ymax - ymin) * t / 4;
        s += fmt::format(R"~(<line x1="{0:.1f}" x2="{1:.1f}" y1="{2:.1f}" y2="{2:.1f}" stroke="#eeeeee"/>)~", left,
                         plotR, Y(v));
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="9" text-anchor="end" fill="#555">{}</text>)~",
                         left - 4, Y(v) + 3, tickLabel(v));
    }
    for (const auto& v : xs) {
        const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="9" text-anchor="middle" fill="#555">{}</text>)~",
                         X(v), bottom + 14, esc(text.size() > 24 ? text.substr(0, 22) + ".." : text));
    }
    if (bar) {
        s += fmt::format(
            R"~(<line class="bar" x1="{0:.1f}" x2="{1:.1f}" y1="{2:.1f}" y2="{2:.1f}" stroke="#1565c0" stroke-dasharray="5,3"/>)~",
            left, plotR, Y(*bar));
        s += fmt::format(
            R"~(<text x="{:.1f}" y="{:.1f}" font-size="9" text-anchor="end" fill="#1565c0">bar {} ms</text>)~",
            plotR - 2, Y(*bar) - 3, *bar);
    }
    for (std::size_t i = 0; i < series.size(); ++i) {
        auto pts = series[i].points;
        if (numeric)
            std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) {
                return std::get<0>(a).template get<double>() < std::get<0>(b).template get<double>();
            });
        const std::string col = seriesColour(
            std::size_t(std::find(colourOrder.begin(), colourOrder.end(), series[i].name) - colourOrder.begin()));
        std::string path;
        for (const auto& [xv, y, lo, hi] : pts)
            path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", X(xv), Y(y));
        s += fmt::format(R"~(<g class="series" data-series="{}">)~", esc(series[i].name));
        s += fmt::format(R"~(<polyline points="{}" fill="none" stroke="{}" stroke-width="1.8"/>)~", path, col);
        for (const auto& [xv, y, lo, hi] : pts) {
            if (std::isfinite(lo) && std::isfinite(hi))
                s += fmt::format(
                    R"~(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="{3}" stroke-width="1"/>)~",
                    X(xv), Y(lo), Y(hi), col);
            s += fmt::format(R"~(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)~", X(xv), Y(y), col);
        }
        s += "</g>";
        const double lx = 6 + double(i % 3) * (width / 3), ly = bottom + 30 + 18 * double(i / 3);
        s += fmt::format(R"~(<rect x="{:.1f}" y="{:.1f}" width="10" height="10" fill="{}"/>)~", lx, ly, col);
        const std::string name = series[i].name.size() > 48 ? series[i].name.substr(0, 46) + ".." : series[i].name;
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="10">{}</text>)~", lx + 14, ly + 9, esc(name));
    }
    return s + "</svg>";
}

std::string sweepPlots(const std::vector<json>& rows) {
    std::optional<double> bar;
    for (const auto& r : rows)
        if (r.contains("result"))
            if (auto b = num(r["result"], "min_saving_ms")) bar = *b;
    std::string s = "<h3>Sweep plots</h3>";
    std::vector<std::string> colourOrder;
    s += sweepPlotSvg(
        rows, "Projected saving over the layers, ms (median and 95% CI)",
        [](const json& res) -> std::optional<std::tuple<double, double, double>> {
            const auto m = num(res, "saving_median_ms");
            if (!m) return std::nullopt;
            return std::tuple{*m, num(res, "saving_ci_low_ms").value_or(NAN),
                              num(res, "saving_ci_high_ms").value_or(NAN)};
        },
        bar, false, 960, colourOrder);
    s += sweepPlotSvg(
        rows, "Median device time per execution, µs",
        [](const json& res) -> std::optional<std::tuple<double, double, double>> {
            const auto m = num(res, "candidate_median_ns");
            if (!m) return std::nullopt;
            return std::tuple{*m / 1e3, NAN, NAN};
        },
        std::nullopt, true, 960, colourOrder);
    return s;
}
// Stacked median time per kernel, one bar per variant, each on its own scale (the bar is the
// variant's own total: a slow variant cannot squeeze the others), with a thin grey bar under it
// for its total against the slowest. `colourOf`: the card's colour of each kernel.
std::string kernelBarsSvg(const json& variants, double width, const std::map<std::string, std::string>& colourOf) {
    std::vector<std::string> kernels;
    double longest = 0;
    for (auto it = variants.begin(); it != variants.end(); ++it) {
        double total = 0;
        if (it->contains("kernels"))
            for (const auto& k : (*it)["kernels"]) {
                const std::string name = k.value("kernel", "?");
                if (std::find(kernels.begin(), kernels.end(), name) == kernels.end()) kernels.push_back(name);
                total += num(k, "median_ns").value_or(0);
            }
        longest = std::max(longest, total);
    }
    const auto colour = [&](const std::string& k) {
        const auto it = colourOf.find(k);
        return it == colourOf.end() ? std::string("#777777") : it->second;
    };
    const double label = 150, barH = 14, refH = 3, gap = 9, legendH = 18 * double((kernels.size() + 3) / 4) + 6;
    const double H = double(variants.size()) * (barH + refH + gap) + 20 + legendH;
    std::string s = fmt::format(
        R"~(<svg xmlns="http://www.w3.org/2000/svg" class="kernel-bars" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif">)~",
        width, H, width, H);
    const double plotW = width - label - 150;
    double yy = 4;
    for (auto it = variants.begin(); it != variants.end(); ++it) {
        s += fmt::format(R"~(<g class="variant" data-variant="{}">)~", esc(it.key()));
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)~", label - 6,
                         yy + 11, esc(it.key()));
        double total = 0;
        if (it->contains("kernels"))
            for (const auto& k : (*it)["kernels"]) total += std::max(0.0, num(k, "median_ns").value_or(0));
        double x = label;
        if (it->contains("kernels"))
            for (const auto& k : (*it)["kernels"]) {
                const double ns = std::max(0.0, num(k, "median_ns").value_or(0));
                const double bw = total > 0 ? ns / total * plotW : 0;
                s += fmt::format(
                    R"~(<rect class="kernel" data-kernel="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{} {:.0f} ns ({:.0f}%)</title></rect>)~",
                    esc(k.value("kernel", "?")), x, yy, bw, barH, colour(k.value("kernel", "?")),
                    esc(k.value("kernel", "?")), ns, total > 0 ? 100 * ns / total : 0.0);
                x += bw;
            }
        s += fmt::format(
            R"~(<rect class="total" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="#9e9e9e"><title>total against the slowest variant</title></rect>)~",
            label, yy + barH + 1, longest > 0 ? total / longest * plotW : 0.0, refH);
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="10">{:.1f} µs · {:.0f}%</text>)~",
                         label + plotW + 4, yy + 11, total / 1e3, longest > 0 ? 100 * total / longest : 0.0);
        s += "</g>";
        yy += barH + refH + gap;
    }
    yy += 8;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        const double lx = double(i % 4) * (width / 4), ly = yy + 18 * double(i / 4);
        s += fmt::format(R"~(<rect x="{:.1f}" y="{:.1f}" width="10" height="10" fill="{}"/>)~", lx, ly,
                         colour(kernels[i]));
        const std::string name = kernels[i].size() > 36 ? kernels[i].substr(0, 34) + ".." : kernels[i];
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="10">{}</text>)~", lx + 14, ly + 9, esc(name));
    }
    return s + "</svg>";
}

// The saving as decode speed against gate.reference_step_ms (cards that carry it), under the ms.
std::string decodeGainText(const json& projection, const json& cand) {
    if (!projection.contains("decode_gain_tok_s") || !projection["decode_gain_tok_s"].is_object()) return "";
    const auto gain = num(projection["decode_gain_tok_s"], "median");
    if (!gain) return "";
    const auto ref = num(cand, "reference_step_ms");
    return fmt::format(
        R"~(<br><small class="tok" title="against a decode step of {} ms per token">{:+.2f} tok/s</small>)~",
        ref ? fmt::format("{:.2f}", *ref) : std::string("?"), *gain);
}

std::string overviewTable(const std::vector<LoadedCard>& cards, const std::vector<std::string>& patterns) {
    std::string s = R"~(<table class="overview"><caption>Projected saving per layer stack, ms: median [95% CI])~"
                    R"~( against the bar (CONTRACT §8)</caption><thead><tr><th>candidate</th><th>verdict</th>)~";
    for (const auto& p : patterns) s += "<th>" + breakable(p) + "</th>";
    s += "</tr></thead><tbody>";
    for (const auto& c : cards)
        for (const auto& cand : candidatesOf(c)) {
            const double bar = barOf(c, cand);
            const std::string v = verdictWord(cand);
            const auto decides = decidingOf(c, cand);
            s += "<tr><th scope=\"row\">" + esc(cand.value("candidate", "?")) + "<br><small>" + esc(c.label) +
                 "</small></th>";
            s += fmt::format(R"~(<td class="{}">{}</td>)~", cellClass(verdictCell(v)), esc(v));
            for (const auto& p : patterns) {
                if (const json* pr = projection(cand, p)) {
                    const Cell cell = classify(*pr, bar);
                    const bool isDecider = decides && *decides == p;
                    s +=
                        fmt::format(R"~(<td class="{}" title="{} (bar {} ms)">{}<br><small>[{}, {}]</small>{}{}</td>)~",
                                    cellClass(cell), cellWord(cell), bar, ms(num(*pr, "median_ms")),
                                    ms(num(*pr, "ci_low_ms")), ms(num(*pr, "ci_high_ms")), decodeGainText(*pr, cand),
                                    isDecider ? "<br><small class=\"decides\">&#9654; decides</small>" : "");
                } else if (const json* nv = notValid(cand, p)) {
                    s += "<td class=\"unknown\" title=\"" + esc(nv->value("reason", "")) + "\">not valid</td>";
                } else {
                    s += "<td class=\"unknown\">–</td>";
                }
            }
            s += "</tr>";
        }
    s += "</tbody></table>";
    s +=
        R"~(<p class="legend"><span class="pass">pass</span>: CI low end ≥ bar · <span class="onbar">on the bar</span>:)~"
        R"~( the CI straddles the bar · <span class="fail">fail</span>: CI high end below the bar · &#9654; decides:)~"
        R"~( the pattern that decides the candidate's verdict</p>)~";
    return s;
}

std::string cardSections(const LoadedCard& c) {
    std::string s = "<section class=\"card\"><h2>" + esc(c.label) + "</h2>";
    const json& j = c.card;
    if (j.contains("correctness") && j["correctness"].is_object()) {
        const json& k = j["correctness"];
        s += fmt::format("<p>correctness: {} passed, {} failed, {} skipped</p>", k.value("passed", 0),
                         k.value("failed", 0), k.value("skipped", 0));
    }
    if (!j.contains("timings") || !j["timings"].is_object()) {
        s += "<p class=\"missing\">no timing in this card (" + esc(j.value("timing_skipped", std::string("null"))) +
             "): no gate, kernels, launch floor or roofline</p></section>";
        return s;
    }
    for (const auto& cand : candidatesOf(c)) {
        s += "<h3>" + esc(cand.value("candidate", "?")) + ": per pattern, each on its own scale</h3>";
        const auto [line, detail] = verdictLineAndDetail(cand);
        s += "<p class=\"verdict-line\">" + esc(line) + "</p>";
        if (!detail.empty())
            s += "<details class=\"verdict-detail\"><summary>detail</summary><p>" + esc(detail) + "</p></details>";
        s += candidatePanelsSvg(c, cand, 960);
    }
    const json& pats = j["timings"].contains("patterns") ? j["timings"]["patterns"] : json::object();
    // One colour per kernel of the card, the same in every chart of it: no two kernels of a bar share one.
    std::map<std::string, std::string> colourOf;
    for (auto it = pats.begin(); it != pats.end(); ++it) {
        if (!it->contains("variants") || !(*it)["variants"].is_object()) continue;
        for (const auto& [name, v] : (*it)["variants"].items())
            if (v.contains("kernels") && v["kernels"].is_array())
                for (const auto& k : v["kernels"])
                    if (const std::string kn = k.value("kernel", "?"); !colourOf.count(kn))
                        colourOf.emplace(kn, seriesColour(colourOf.size()));
    }
    s += "<h3>Where the time goes: median time per kernel, per pattern (each variant on its own scale; the grey bar "
         "under it and the %: its total against the slowest)</h3>";
    for (auto it = pats.begin(); it != pats.end(); ++it) {
        if (!it->contains("variants")) continue;
        s += "<h4>" + esc(it.key()) + "</h4>" + kernelBarsSvg((*it)["variants"], 960, colourOf);
        s += "<table><thead><tr><th>variant</th><th>launch</th><th>kernel</th><th>median ns</th></tr></thead><tbody>";
        const json& vs = (*it)["variants"];
        for (auto v = vs.begin(); v != vs.end(); ++v)
            if (v->contains("kernels"))
                for (const auto& k : (*v)["kernels"])
                    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:.0f}</td></tr>",
                                     esc(v.key()), k.value("launch", 0), esc(k.value("kernel", "?")),
                                     num(k, "median_ns").value_or(NAN));
        s += "</tbody></table>";
    }
    // Roofline fraction: variants x patterns.
    std::vector<std::string> variants;
    for (auto it = pats.begin(); it != pats.end(); ++it)
        if (it->contains("variants"))
            for (auto v = (*it)["variants"].begin(); v != (*it)["variants"].end(); ++v)
                if (std::find(variants.begin(), variants.end(), v.key()) == variants.end()) variants.push_back(v.key());
    s += "<h3>Roofline fraction (bytes / median device time / bandwidth)</h3><table><thead><tr><th>variant</th>";
    for (auto it = pats.begin(); it != pats.end(); ++it) s += "<th>" + esc(it.key()) + "</th>";
    s += "</tr></thead><tbody>";
    for (const auto& v : variants) {
        s += "<tr><th scope=\"row\">" + esc(v) + "</th>";
        for (auto it = pats.begin(); it != pats.end(); ++it) {
            const json& vs = (*it).value("variants", json::object());
            const auto f = vs.contains(v) ? num(vs[v], "roofline_fraction") : std::nullopt;
            s += "<td class=\"n\">" + (f ? fmt::format("{:.3f}", *f) : std::string("–")) + "</td>";
        }
        s += "</tr>";
    }
    s += "</tbody></table>";
    s += "<h3>Launch floor (all_remote: every launch exits at once)</h3>";
    if (!j.contains("launch_floor") || !j["launch_floor"].is_object()) {
        s += "<p class=\"missing\">not measured (all_remote was not run)</p>";
    } else {
        s += "<table><thead><tr><th>variant</th><th>launches</th><th>device µs / launch</th><th>host µs / "
             "launch</th><th>launches removed</th><th>device saving µs</th><th>host saving µs</th></tr></thead><tbody>";
        const json& lf = j["launch_floor"];
        auto cell = [](const json& o, const char* k) {
            if (!o.contains(k) || o[k].is_null()) return std::string("–");
            return o[k].is_number_float() ? fmt::format("{:.2f}", o[k].get<double>()) : o[k].dump();
        };
        for (auto v = lf.begin(); v != lf.end(); ++v)
            s += "<tr><th scope=\"row\">" + esc(v.key()) + "</th><td class=\"n\">" + cell(*v, "launches") +
                 "</td><td class=\"n\">" + cell(*v, "device_us_per_launch") + "</td><td class=\"n\">" +
                 cell(*v, "host_us_per_launch") + "</td><td class=\"n\">" + cell(*v, "launches_removed") +
                 "</td><td class=\"n\">" + cell(*v, "saving_device_us") + "</td><td class=\"n\">" +
                 cell(*v, "saving_host_us") + "</td></tr>";
        s += "</tbody></table>";
    }
    return s + "</section>";
}

// A sweep row's gate verdict: `gate_verdict` ("pass", "on_the_bar", "fail": what sweeps write),
// or a boolean `passes_gate` of an older row.
std::string sweepVerdict(const json& res) {
    if (res.contains("gate_verdict") && res["gate_verdict"].is_string()) return res["gate_verdict"].get<std::string>();
    if (res.contains("passes_gate") && res["passes_gate"].is_boolean())
        return res["passes_gate"].get<bool>() ? "pass" : "fail";
    return "–";
}

std::string sweepTable(const std::vector<json>& rows) {
    std::string s =
        "<table class=\"sweep\"><caption>Sweep points: saving projected over the layers, ms; the gate's verdict of "
        "each point's interval against the bar</caption><thead><tr><th>point</th><th>status</th><th>saving "
        "ms</th><th>95% CI</th><th>gate verdict</th><th>correctness</th></tr></thead><tbody>";
    for (const auto& r : rows) {
        const json res = r.value("result", json::object());
        const std::string v = sweepVerdict(res);
        s += fmt::format(
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">[{}, {}]</td><td "
            "class=\"{}\">{}</td><td>{}</td></tr>",
            esc(r.value("id", "?")), esc(r.value("status", "?")), ms(num(res, "saving_median_ms")),
            ms(num(res, "saving_ci_low_ms")), ms(num(res, "saving_ci_high_ms")), cellClass(verdictCell(v)), esc(v),
            esc(res.value("correctness", r.value("reason", std::string("–")))));
    }
    return s + "</tbody></table>";
}

// The step as a card of the overview: its gate is the card's `gate`.
LoadedCard stepAsCard(const json& step) {
    std::string ids;
    for (const auto& c : step.value("cards", json::array())) ids += (ids.empty() ? "" : ",") + c.dump();
    return {
        fmt::format("step of cards {} ({})", ids, step.value("concurrent", false) ? "at once" : "one after another"),
        {{"gate", step.value("gate", json())}}};
}

// A card's median device time of one pattern and variant, from its timings.
std::optional<double> cardMedianNs(const json& card, const std::string& pattern, const std::string& variant) {
    if (!card.contains("timings") || !card["timings"].is_object()) return std::nullopt;
    const json& pats = card["timings"].value("patterns", json::object());
    if (!pats.contains(pattern) || !pats[pattern].contains("variants")) return std::nullopt;
    const json& vs = pats[pattern]["variants"];
    if (!vs.contains(variant) || !vs[variant].contains("device_ns")) return std::nullopt;
    return num(vs[variant]["device_ns"], "median");
}

std::string us(std::optional<double> ns) { return ns ? fmt::format("{:.1f}", *ns / 1e3) : "–"; }

std::string stepSection(const std::vector<LoadedCard>& cards, const json& step) {
    const LoadedCard asCard = stepAsCard(step);
    std::string s = "<section class=\"step\"><h2>The step: " + esc(asCard.label) + "</h2>";
    s += "<p><b>How the cards ran:</b> " + esc(step.value("how", std::string())) + ".<br><b>Step time:</b> " +
         esc(step.value("step_time", std::string())) + ".</p>";
    s += "<table class=\"placement\"><caption>Which card ran where</caption><thead><tr><th>card</th><th>device "
         "(--device)</th><th>name</th><th>file</th></tr></thead><tbody>";
    for (const auto& p : step.value("placement", json::array()))
        s += fmt::format("<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", p.value("card", 0),
                         esc(p.value("device_spec", "?")), esc(p.value("device", "?")), esc(p.value("file", "?")));
    s += "</tbody></table>";
    const auto patterns = patternsOf({asCard});
    if (patterns.empty())
        s += "<p class=\"missing\">no candidate ran on every card: no gate on the step</p>";
    else
        s += forestSection({asCard}, patterns) + overviewTable({asCard}, patterns);
    // The cards side by side: each card's median and the step's, per pattern and variant.
    std::vector<const LoadedCard*> byCard;
    for (const auto& p : step.value("placement", json::array())) {
        const LoadedCard* found = nullptr;
        for (const auto& c : cards)
            if (c.card.value("card", -1) == p.value("card", -2)) found = &c;
        byCard.push_back(found);
    }
    s += "<table class=\"sidebyside\"><caption>Median device time, µs: each card and the step (per round the "
         "slowest card)</caption><thead><tr><th>pattern</th><th>variant</th>";
    for (const auto& p : step.value("placement", json::array()))
        s += fmt::format("<th>card {}</th>", p.value("card", 0));
    s += "<th>step</th><th>slowest card (rounds)</th></tr></thead><tbody>";
    const json& pats = step.value("patterns", json::object());
    // Rows in the cards' order: baseline, m1_oracle, then the candidates as the gate lists them.
    std::vector<std::string> order = {"baseline", "m1_oracle"};
    for (const auto& cand : candidatesOf(asCard)) order.push_back(cand.value("candidate", "?"));
    for (auto pt = pats.begin(); pt != pats.end(); ++pt) {
        const json& vs = pt->value("variants", json::object());
        std::vector<std::string> names;
        for (const auto& n : order)
            if (vs.contains(n)) names.push_back(n);
        for (auto v = vs.begin(); v != vs.end(); ++v)
            if (std::find(names.begin(), names.end(), v.key()) == names.end()) names.push_back(v.key());
        for (const auto& name : names) {
            const auto v = vs.find(name);
            s += "<tr><th scope=\"row\">" + breakable(pt.key()) + "</th><td>" + esc(v.key()) + "</td>";
            for (const LoadedCard* c : byCard)
                s += "<td class=\"n\">" + (c ? us(cardMedianNs(c->card, pt.key(), v.key())) : std::string("–")) +
                     "</td>";
            s += "<td class=\"n\"><b>" + us(num(v->value("step_ns", json::object()), "median")) + "</b></td><td>";
            std::string who;
            const json& counts = v->value("slowest_count", json::object());
            for (auto c = counts.begin(); c != counts.end(); ++c)
                who += (who.empty() ? "" : ", ") + std::string("card ") + esc(c.key()) + ": " + c->dump();
            s += who + "</td></tr>";
        }
    }
    s += "</tbody></table>";
    const json& inter = step.contains("interference") ? step["interference"] : json();
    if (!inter.is_array()) {
        s += "<p class=\"missing\">interference not measured: " +
             esc(step.value("interference_skipped", std::string("–"))) + "</p>";
    } else {
        // The cards side by side again: per pattern and variant, each card's together / alone.
        std::vector<int> ids;
        std::vector<std::pair<std::string, std::string>> rows;
        std::map<std::pair<std::string, std::string>, std::map<int, const json*>> cell;
        for (const auto& r : inter) {
            const int card = r.value("card", 0);
            const std::pair<std::string, std::string> key{r.value("pattern", "?"), r.value("variant", "?")};
            if (std::find(ids.begin(), ids.end(), card) == ids.end()) ids.push_back(card);
            if (std::find(rows.begin(), rows.end(), key) == rows.end()) rows.push_back(key);
            cell[key][card] = &r;
        }
        s += "<table class=\"interference\"><caption>Interference: median device time with the other cards running / "
             "alone (the others idle); below, both in µs</caption><thead><tr><th>pattern</th><th>variant</th>";
        for (int c : ids) s += fmt::format("<th>card {}</th>", c);
        s += "</tr></thead><tbody>";
        for (const auto& key : rows) {
            s += "<tr><th scope=\"row\">" + breakable(key.first) + "</th><td>" + esc(key.second) + "</td>";
            for (int c : ids) {
                const auto it = cell[key].find(c);
                if (it == cell[key].end()) {
                    s += "<td class=\"n\">–</td>";
                    continue;
                }
                const json& r = *it->second;
                const auto ratio = num(r, "ratio");
                s += fmt::format("<td class=\"n\">×{}<br><small>{} / {}</small></td>",
                                 ratio ? fmt::format("{:.2f}", *ratio) : std::string("–"),
                                 us(num(r, "together_median_ns")), us(num(r, "alone_median_ns")));
            }
            s += "</tr>";
        }
        s += "</tbody></table>";
    }
    return s + "</section>";
}

}  // namespace

namespace {

LoadedCard cardOf(const fs::path& path, json j) {
    checkCardRead(j, path.string());  // the schema holds: "card" an integer, "device"."name" a string
    LoadedCard c;
    c.card = std::move(j);
    c.label = fmt::format("card{} · {}", c.card["card"].dump(), c.card["device"]["name"].get<std::string>());
    return c;
}

}  // namespace

LoadedResult loadResult(const fs::path& path) {
    json j = probe::readJsonFile(path, "card");  // a regular file, bounded: never a FIFO's reader
    // A step.json by either of its own keys: a damaged one is named as a step, not as a card.
    if (j.is_object() && (j.contains("step_time") || j.contains("placement"))) {
        if (!j.contains("schema") || !j["schema"].is_number_integer() || j["schema"] != kStepSchemaVersion)
            throw probe::InputError(path.string() + ": a step.json of a schema this report does not know (want 1)");
        checkStepRead(j, path.string());
        return {{path.filename().string(), std::move(j)}, true};
    }
    return {cardOf(path, std::move(j)), false};
}

LoadedCard loadCard(const fs::path& path) { return cardOf(path, probe::readJsonFile(path, "card")); }

ReportFormat reportFormatOf(const fs::path& p) {
    const std::string ext = p.extension().string();
    if (ext == ".html" || ext == ".htm") return ReportFormat::html;
    if (ext == ".svg") return ReportFormat::svg;
    throw probe::InputError(p.string() + ": unknown report format '" + ext + "': write FILE.html or FILE.svg");
}

std::string cardsReportHtml(const std::vector<LoadedCard>& cards, const std::vector<json>& sweepRows,
                            const std::string& repeatTable, const json& step) {
    std::string s = R"~(<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>ze-probe report</title><style>
body{font-family:sans-serif;margin:16px;max-width:1000px;color:#222}
table{border-collapse:collapse;margin:8px 0 16px 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:bold;padding:4px 0}
.pass{background:#c8e6c9}.fail{background:#ffcdd2}.onbar{background:#ffe0b2}.unknown{background:#eeeeee}
.overview td{text-align:center}
.cards{display:flex;flex-wrap:wrap;gap:16px}.card{flex:1 1 100%;min-width:0}
.overview th{font-size:12px}.overview td{font-size:12px}
.missing{color:#777;font-style:italic}svg{max-width:100%;height:auto;display:block}
</style></head><body><h1>ze-probe report</h1>)~";
    if (!cards.empty()) {
        s += "<p>";
        for (std::size_t i = 0; i < cards.size(); ++i) s += (i ? "; " : "") + esc(cards[i].label);
        s += "</p>";
    }
    if (step.is_object()) s += stepSection(cards, step) + "<h2>The cards</h2>";
    const auto patterns = patternsOf(cards);
    if (cards.empty())
        ;  // a sweep alone (`ze-probe report --sweep X.jsonl`)
    else if (patterns.empty())
        s += "<p class=\"missing\">no gate in these cards (no timing): nothing to compare against the bar</p>";
    else
        s += forestSection(cards, patterns) + overviewTable(cards, patterns);
    if (!repeatTable.empty())
        s += "<h2>Repeatability: the gate in fresh processes</h2>\n<pre class=\"repeat\">" + esc(repeatTable) +
             "</pre>\n";
    s += "<div class=\"cards\">";
    for (const auto& c : cards) s += cardSections(c);
    s += "</div>";
    if (!sweepRows.empty()) s += "<h2>Sweep</h2>" + sweepPlots(sweepRows) + sweepTable(sweepRows);
    return s + "</body></html>\n";
}

std::string cardsReportSvg(const std::vector<LoadedCard>& given, const json& step) {
    // The overview as a grid of coloured cells, then each candidate's panels.
    std::vector<LoadedCard> cards;
    if (step.is_object()) cards.push_back(stepAsCard(step));
    cards.insert(cards.end(), given.begin(), given.end());
    const auto patterns = patternsOf(cards);
    const double width = 1000, label = 200,
                 cellW = std::min(110.0, (width - label - 70) / double(std::max<std::size_t>(1, patterns.size()))),
                 cellH = 34;
    std::vector<std::string> bodies;
    double y = 40;
    std::string grid;
    grid +=
        fmt::format(R"~(<text x="0" y="20" font-size="13" font-weight="bold">Overview: saving vs the bar, ms</text>)~");
    for (std::size_t i = 0; i < patterns.size(); ++i)
        grid += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="10" text-anchor="middle">{}</text>)~",
                            label + 70 + cellW * (double(i) + 0.5), y, esc(patterns[i]));
    y += 8;
    for (const auto& c : cards)
        for (const auto& cand : candidatesOf(c)) {
            const double bar = barOf(c, cand);
            grid += fmt::format(R"~(<text x="0" y="{:.1f}" font-size="11">{}</text>)~", y + 14,
                                esc(cand.value("candidate", "?")));
            grid +=
                fmt::format(R"~(<text x="0" y="{:.1f}" font-size="9" fill="#555">{}</text>)~", y + 27, esc(c.label));
            const std::string v = verdictWord(cand);
            grid += fmt::format(
                R"~(<rect x="{:.1f}" y="{:.1f}" width="66" height="{:.1f}" fill="{}" opacity="0.25"/><text x="{:.1f}" y="{:.1f}" font-size="10" text-anchor="middle">{}</text>)~",
                label, y, cellH - 2, cellColour(verdictCell(v)), label + 33, y + 20, esc(v));
            for (std::size_t i = 0; i < patterns.size(); ++i) {
                const double x = label + 70 + cellW * double(i);
                if (const json* pr = projection(cand, patterns[i])) {
                    const Cell cell = classify(*pr, bar);
                    grid += fmt::format(
                        R"~(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" opacity="0.25"/>)~", x,
                        y, cellW - 2, cellH - 2, cellColour(cell));
                    grid +=
                        fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="10" text-anchor="middle">{}</text>)~",
                                    x + cellW / 2, y + 13, ms(num(*pr, "median_ms")));
                    grid += fmt::format(
                        R"~(<text x="{:.1f}" y="{:.1f}" font-size="8" text-anchor="middle">[{}, {}]</text>)~",
                        x + cellW / 2, y + 26, ms(num(*pr, "ci_low_ms")), ms(num(*pr, "ci_high_ms")));
                } else {
                    grid += fmt::format(R"~(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="#eee"/>)~",
                                        x, y, cellW - 2, cellH - 2);
                }
            }
            y += cellH;
        }
    y += 16;
    // The forest plots lead, after the bar; the grid and the panels follow them.
    std::string forests =
        R"~(<text x="0" y="18" font-size="16" font-weight="bold">ze-probe report: saving vs the bar, ms</text>)~";
    double fy = 38;
    std::set<std::pair<double, int>> bars;
    for (const auto& c : cards)
        for (const auto& cand : candidatesOf(c)) bars.insert({barOf(c, cand), layersOf(c, cand)});
    std::string barText;
    for (const auto& [bar, layers] : bars)
        barText += (barText.empty() ? "" : "; ") + fmt::format("{} ms over {} layers", bar, layers);
    if (!bars.empty()) {
        forests += fmt::format(
            R"~(<text class="bar-statement" x="0" y="{:.1f}" font-size="11">The bar: every valid pattern's 95% CI of the projected saving at or above {} (CONTRACT §8)</text>)~",
            fy, esc(barText));
        fy += 10;
    }
    for (const auto& c : cards)
        for (const auto& cand : candidatesOf(c)) {
            const auto [line, detail] = verdictLineAndDetail(cand);
            forests += fmt::format(R"~(<text x="0" y="{:.1f}" font-size="11" fill="{}">{}</text>)~", fy + 14,
                                   cellColour(verdictCell(verdictWord(cand))), esc(line));
            fy += 20;
            double h = 0;
            const std::string plot = forestSvg(c, cand, patterns, width, &h);
            forests += fmt::format(R"~(<g transform="translate(0,{:.1f})">{}</g>)~", fy, plot);
            fy += h + 8;
        }
    y += fy;
    grid = fmt::format(R"~(<g transform="translate(0,{:.1f})">{}</g>)~", fy, grid);
    std::string panels;
    for (const auto& c : cards)
        for (const auto& cand : candidatesOf(c)) {
            panels += fmt::format(R"~(<text x="0" y="{:.1f}" font-size="12" font-weight="bold">{} · {}</text>)~",
                                  y + 12, esc(cand.value("candidate", "?")), esc(c.label));
            y += 18;
            const std::string inner = candidatePanelsSvg(c, cand, width);
            const int n = cand.contains("projections") ? int(cand["projections"].size()) : 0;
            const int perRow = int((width + 10) / 200);  // candidatePanelsSvg's panels: 190 + 10 px
            const double h = std::max(1, (n + perRow - 1) / perRow) * 160.0;
            panels += fmt::format(R"~(<g transform="translate(0,{:.1f})">{}</g>)~", y, inner);
            y += h + 10;
        }
    return fmt::format(
               R"~(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}" viewBox="0 0 {0:.0f} {1:.0f}" font-family="sans-serif"><rect width="100%" height="100%" fill="#fff"/>{2}{3}</svg>)~",
               width, y, forests + grid, panels) +
           "\n";
}

void writeCardsReport(const fs::path& path, const std::vector<LoadedCard>& cards, const std::vector<json>& sweepRows,
                      const std::string& repeatTable, const json& step) {
    const ReportFormat f = reportFormatOf(path);
    const std::string text =
        f == ReportFormat::html ? cardsReportHtml(cards, sweepRows, repeatTable, step) : cardsReportSvg(cards, step);
    probe::writeFileAtomically(path, text, "--report");
}

}  // namespace zp::app
