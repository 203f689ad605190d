#include "report_cards.hpp"

#include "zp/probe/file_io.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

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

const char* kKernelColours[] = {"#1565c0", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f",
                                "#ad1457", "#5d4037", "#9e9d24", "#37474f", "#d84315"};

// Stacked median time per kernel, one bar per variant, for one pattern (its own scale).
std::string kernelBarsSvg(const json& variants, double width) {
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
    const double label = 150, barH = 16, gap = 6, legendH = 18 * double((kernels.size() + 3) / 4) + 6;
    const double H = double(variants.size()) * (barH + gap) + 20 + legendH;
    std::string s = fmt::format(
        R"~(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif">)~",
        width, H, width, H);
    const double plotW = width - label - 90;
    double yy = 4;
    for (auto it = variants.begin(); it != variants.end(); ++it) {
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)~", label - 6,
                         yy + 12, esc(it.key()));
        double x = label, total = 0;
        if (it->contains("kernels"))
            for (const auto& k : (*it)["kernels"]) {
                const double ns = num(k, "median_ns").value_or(0);
                const auto idx = std::find(kernels.begin(), kernels.end(), k.value("kernel", "?")) - kernels.begin();
                const double bw = longest > 0 ? ns / longest * plotW : 0;
                s += fmt::format(
                    R"~(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{} {:.0f} ns</title></rect>)~",
                    x, yy, bw, barH, kKernelColours[idx % 10], esc(k.value("kernel", "?")), ns);
                x += bw;
                total += ns;
            }
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="10">{:.1f} µs</text>)~", x + 4, yy + 12,
                         total / 1e3);
        yy += barH + gap;
    }
    yy += 8;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        const double lx = double(i % 4) * (width / 4), ly = yy + 18 * double(i / 4);
        s += fmt::format(R"~(<rect x="{:.1f}" y="{:.1f}" width="10" height="10" fill="{}"/>)~", lx, ly,
                         kKernelColours[i % 10]);
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="10">{}</text>)~", lx + 14, ly + 9, esc(kernels[i]));
    }
    return s + "</svg>";
}

// The saving as decode speed against gate.reference_step_ms (cards since issue 25), under the ms.
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
            s += "<tr><th scope=\"row\">" + esc(cand.value("candidate", "?")) + "<br><small>" + esc(c.label) +
                 "</small></th>";
            s += fmt::format(R"~(<td class="{}">{}</td>)~", cellClass(verdictCell(v)), esc(v));
            for (const auto& p : patterns) {
                if (const json* pr = projection(cand, p)) {
                    const Cell cell = classify(*pr, bar);
                    s += fmt::format(R"~(<td class="{}" title="{} (bar {} ms)">{}<br><small>[{}, {}]</small>{}</td>)~",
                                     cellClass(cell), cellWord(cell), bar, ms(num(*pr, "median_ms")),
                                     ms(num(*pr, "ci_low_ms")), ms(num(*pr, "ci_high_ms")), decodeGainText(*pr, cand));
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
        R"~( the CI straddles the bar · <span class="fail">fail</span>: CI high end below the bar</p>)~";
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
        if (cand.contains("verdict") && cand["verdict"].is_object() && cand["verdict"].contains("line"))
            s += "<p>" + esc(cand["verdict"].value("line", "")) + "</p>";
        s += candidatePanelsSvg(c, cand, 960);
    }
    const json& pats = j["timings"].contains("patterns") ? j["timings"]["patterns"] : json::object();
    s += "<h3>Where the time goes: median time per kernel, per pattern</h3>";
    for (auto it = pats.begin(); it != pats.end(); ++it) {
        if (!it->contains("variants")) continue;
        s += "<h4>" + esc(it.key()) + "</h4>" + kernelBarsSvg((*it)["variants"], 960);
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

std::string sweepTable(const std::vector<json>& rows) {
    std::string s =
        "<h2>Sweep</h2><table><thead><tr><th>point</th><th>status</th><th>saving ms</th><th>95% "
        "CI</th><th>passes gate</th><th>correctness</th></tr></thead><tbody>";
    for (const auto& r : rows) {
        const json res = r.value("result", json::object());
        s += fmt::format(
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">[{}, {}]</td><td>{}</td><td>{}</td></tr>",
            esc(r.value("id", "?")), esc(r.value("status", "?")), ms(num(res, "saving_median_ms")),
            ms(num(res, "saving_ci_low_ms")), ms(num(res, "saving_ci_high_ms")),
            res.contains("passes_gate") ? res["passes_gate"].dump() : "–",
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
        s += overviewTable({asCard}, patterns);
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

LoadedResult loadResult(const fs::path& path) {
    std::ifstream f(path);
    if (!f) throw probe::InputError(path.string() + ": cannot open the file");
    json j;
    try {
        j = json::parse(f);
    } catch (const json::exception& e) {
        throw probe::InputError(path.string() + ": not JSON: " + e.what());
    }
    if (j.is_object() && j.contains("step_time") && j.contains("placement")) {
        if (!j.contains("schema") || !j["schema"].is_number_integer() || j["schema"].get<int>() != 1)
            throw probe::InputError(path.string() + ": a step.json of a schema this report does not know (want 1)");
        return {{path.filename().string(), j}, true};
    }
    return {loadCard(path), false};
}

LoadedCard loadCard(const fs::path& path) {
    std::ifstream f(path);
    if (!f) throw probe::InputError(path.string() + ": cannot open the card");
    LoadedCard c;
    try {
        c.card = json::parse(f);
    } catch (const json::exception& e) {
        throw probe::InputError(path.string() + ": not JSON: " + e.what());
    }
    if (!c.card.is_object() || !c.card.contains("schema") || !c.card["schema"].is_number_integer())
        throw probe::InputError(path.string() + ": not a ze-probe card (no integer \"schema\")");
    const int schema = c.card["schema"];
    if (schema < 2)
        throw probe::InputError(fmt::format("{}: card schema {}: the report needs schema 2 or later (rerun ze-probe)",
                                            path.string(), schema));
    std::string device = path.filename().string();
    if (c.card.contains("device") && c.card["device"].is_object()) device = c.card["device"].value("name", device);
    c.label = fmt::format("card{} · {}", c.card.value("card", 0), device);
    return c;
}

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
    s += "<p>";
    for (std::size_t i = 0; i < cards.size(); ++i) s += (i ? "; " : "") + esc(cards[i].label);
    s += "</p>";
    if (step.is_object()) s += stepSection(cards, step) + "<h2>The cards</h2>";
    const auto patterns = patternsOf(cards);
    if (patterns.empty())
        s += "<p class=\"missing\">no gate in these cards (no timing): nothing to compare against the bar</p>";
    else
        s += overviewTable(cards, patterns);
    if (!repeatTable.empty())
        s += "<h2>Repeatability: the gate in fresh processes</h2>\n<pre class=\"repeat\">" + esc(repeatTable) +
             "</pre>\n";
    s += "<div class=\"cards\">";
    for (const auto& c : cards) s += cardSections(c);
    s += "</div>";
    if (!sweepRows.empty()) s += sweepTable(sweepRows);
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
    grid += fmt::format(
        R"~(<text x="0" y="20" font-size="16" font-weight="bold">ze-probe report: saving vs the bar, ms</text>)~");
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
               width, y, grid, panels) +
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
