#include "report_svg.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace zp::probe {
namespace {

constexpr const char* kPass = "#1a9850";
constexpr const char* kFail = "#d73027";
constexpr const char* kOnTheBar = "#b8860b";

const char* verdictColour(sched::Verdict v) {
    return v == sched::Verdict::Pass ? kPass : v == sched::Verdict::Fail ? kFail : kOnTheBar;
}
constexpr const char* kGate = "#e08214";
constexpr const char* kInk = "#222222";
constexpr const char* kMuted = "#6b6b6b";
constexpr const char* kGrid = "#e6e6e6";

std::string esc(const std::string& s) {
    std::string o;
    for (char c : s) {
        switch (c) {
            case '&': o += "&amp;"; break;
            case '<': o += "&lt;"; break;
            case '>': o += "&gt;"; break;
            case '"': o += "&quot;"; break;
            case '\'': o += "&apos;"; break;
            default: o += c;
        }
    }
    return o;
}

// Ticks at 1, 2 or 5 × 10^k covering [lo, hi] with about `want` intervals.
std::vector<double> niceTicks(double& lo, double& hi, int want) {
    const double raw = (hi - lo) / want;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (raw <= m * mag) {
            step = m * mag;
            break;
        }
    lo = std::floor(lo / step) * step;
    hi = std::ceil(hi / step) * step;
    std::vector<double> t;
    for (double v = lo; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
    return t;
}

std::string tickText(double v, double step) {
    const int decimals = std::clamp(int(std::ceil(-std::log10(step) - 1e-9)), 0, 4);
    return fmt::format("{:.{}f}", v, decimals);
}

// Two lines at the underscore nearest the middle, so long pattern names fit their band.
std::pair<std::string, std::string> splitLabel(const std::string& s) {
    if (s.size() <= 13) return {s, ""};
    std::size_t best = std::string::npos;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i] == '_' && (best == std::string::npos ||
                            std::abs(int(i) - int(s.size() / 2)) < std::abs(int(best) - int(s.size() / 2))))
            best = i;
    if (best == std::string::npos) return {s, ""};
    return {s.substr(0, best + 1), s.substr(best + 1)};
}

bool finiteProjection(const sched::Projection& p) {
    return std::isfinite(p.medianMs) && std::isfinite(p.ciLowMs) && std::isfinite(p.ciHighMs);
}

}  // namespace

std::string reportSvg(const ReportInput& in) {
    const int layers = in.candidates.empty() ? 43 : in.candidates.front().layers;
    const double gate = in.candidates.empty() ? 0.5 : in.candidates.front().minSavingMs;

    // Every pattern any candidate names, in first-seen order.
    std::vector<std::string> patterns;
    auto addPattern = [&](const std::string& p) {
        if (std::find(patterns.begin(), patterns.end(), p) == patterns.end()) patterns.push_back(p);
    };
    for (const auto& c : in.candidates) {
        for (const auto& p : c.projections) addPattern(p.pattern);
        for (const auto& n : c.notValid) addPattern(n.pattern);
    }

    // One y scale for all panels: the data, zero and the gate line, padded.
    double lo = std::min(0.0, gate), hi = std::max(0.0, gate);
    for (const auto& c : in.candidates)
        for (const auto& p : c.projections)
            if (finiteProjection(p)) {
                lo = std::min(lo, p.ciLowMs);
                hi = std::max(hi, p.ciHighMs);
            }
    const double pad = (hi - lo) * 0.08 + 1e-6;
    lo -= lo < 0 ? pad : 0;
    hi += pad;
    const std::vector<double> ticks = niceTicks(lo, hi, 6);
    const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0;

    const int width = 1000, left = 96, right = 118, top = 118;
    const int panelHead = 44, plotH = 230, labelsH = 46, panelGap = 18;
    const int panelH = panelHead + plotH + labelsH;
    const int nPanels = std::max<int>(1, int(in.candidates.size()));
    const int height = top + nPanels * panelH + (nPanels - 1) * panelGap + 24;
    const double plotW = width - left - right;
    const double band = patterns.empty() ? plotW : plotW / double(patterns.size());

    std::string s;
    s += fmt::format(R"~(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" )~"
                     R"~(font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">)~"
                     "\n",
                     width, height);
    s += fmt::format(R"~(<rect class="background" x="0" y="0" width="{}" height="{}" fill="#ffffff"/>)~"
                     "\n",
                     width, height);
    // Title, subtitle, legend.
    s += fmt::format(R"~(<text class="title" x="{}" y="28" font-size="18" font-weight="bold" fill="{}">{}</text>)~"
                     "\n",
                     24, kInk, esc(in.title));
    s += fmt::format(R"~(<text class="device" x="24" y="48" font-size="13" fill="{}">{}{}</text>)~"
                     "\n",
                     kInk, in.device.empty() ? "" : "device: ", esc(in.device));
    s += fmt::format(
        R"~(<text x="24" y="{}" font-size="12" fill="{}">candidates vs baseline, measured interleaved A B A B; )~"
        R"~(projected saving over {} layers (ms); pass = 95% CI lower end &#8805; {:.2f} ms on every pattern</text>)~"
        "\n",
        in.device.empty() ? 48 : 66, kMuted, layers, gate);
    {
        double x = 24;
        const double y = 92;
        auto item = [&](const std::string& glyph, const std::string& label) {
            s += glyph;
            s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" fill="{}">{}</text>)~"
                             "\n",
                             x + 26, y + 4, kInk, esc(label));
            x += 26 + 7.0 * double(label.size()) + 26;
        };
        auto whisker = [&](const char* colour) {
            return fmt::format(
                R"~(<g stroke="{0}" stroke-width="2"><line x1="{1:.1f}" y1="{2:.1f}" x2="{1:.1f}" y2="{3:.1f}"/>)~"
                R"~(<line x1="{4:.1f}" y1="{2:.1f}" x2="{5:.1f}" y2="{2:.1f}"/><line x1="{4:.1f}" y1="{3:.1f}" x2="{5:.1f}" y2="{3:.1f}"/></g>)~"
                R"~(<circle cx="{1:.1f}" cy="{6:.1f}" r="4" fill="{0}" stroke="#ffffff" stroke-width="1"/>)~"
                "\n",
                colour, x + 10, y - 8, y + 8, x + 5, x + 15, y);
        };
        item(whisker(kPass), "pattern passes");
        item(whisker(kOnTheBar), "pattern on the bar");
        item(whisker(kFail), "pattern fails");
        item(
            fmt::format(
                R"~(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2" stroke-dasharray="6 4"/>)~"
                "\n",
                x, y, x + 20, y, kGate),
            fmt::format("gate {:.2f} ms", gate));
        item(fmt::format(R"~(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"/>)~"
                         "\n",
                         x + 10, y, kMuted),
             "median");
        item(
            fmt::format(R"~(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}" stroke-width="2"/>)~"
                        "\n",
                        x + 10, y - 8, y + 8, kMuted),
            "95% bootstrap CI");
    }

    for (int pi = 0; pi < nPanels; ++pi) {
        const double py = top + pi * (panelH + panelGap);
        const double plotTop = py + panelHead, plotBottom = plotTop + plotH;
        auto Y = [&](double v) { return plotBottom - (v - lo) / (hi - lo) * plotH; };
        s += "<g class=\"panel\">\n";
        s += fmt::format(R"~(<rect x="{}" y="{:.1f}" width="{:.1f}" height="{}" fill="#fafafa" stroke="#d0d0d0"/>)~"
                         "\n",
                         left, plotTop, plotW, plotH);
        if (in.candidates.empty()) {
            s += fmt::format(
                R"~(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="{}">no candidates measured</text>)~"
                "\n",
                left + plotW / 2, plotTop + plotH / 2, kMuted);
        }
        // Grid and y axis.
        for (double t : ticks) {
            const double y = Y(t);
            s += fmt::format(R"~(<line x1="{}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="{}"/>)~"
                             "\n",
                             left, y, left + plotW, y, t == 0.0 ? "#9a9a9a" : kGrid, t == 0.0 ? 1.2 : 1);
            s += fmt::format(R"~(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="{}"/>)~"
                             "\n",
                             left - 5, y, left, y, kInk);
            s += fmt::format(R"~(<text class="tick" x="{}" y="{:.1f}" text-anchor="end" fill="{}">{}</text>)~"
                             "\n",
                             left - 8, y + 4, kInk, tickText(t, step));
        }
        s += fmt::format(R"~(<line x1="{0}" y1="{1:.1f}" x2="{0}" y2="{2:.1f}" stroke="{3}"/>)~"
                         "\n",
                         left, plotTop, plotBottom, kInk);
        s += fmt::format(
            R"~(<text x="{0:.1f}" y="{1:.1f}" transform="rotate(-90 {0:.1f} {1:.1f})" text-anchor="middle" fill="{2}">)~"
            R"~(saving over {3} layers (ms)</text>)~"
            "\n",
            left - 58.0, (plotTop + plotBottom) / 2, kInk, layers);
        // Gate line, labelled at the right.
        const double gy = Y(gate);
        s += fmt::format(
            R"~(<line class="gate-line" x1="{}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2" stroke-dasharray="6 4"/>)~"
            "\n",
            left, gy, left + plotW, gy, kGate);
        s += fmt::format(
            R"~(<text class="gate-label" x="{:.1f}" y="{:.1f}" fill="{}" font-weight="bold">gate {:.2f} ms</text>)~"
            "\n",
            left + plotW + 8, gy + 4, kGate, gate);

        // Pattern labels under the plot.
        for (std::size_t k = 0; k < patterns.size(); ++k) {
            const double cx = left + band * (double(k) + 0.5);
            const auto [a, b] = splitLabel(patterns[k]);
            s += fmt::format(R"~(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="{3}"/>)~"
                             "\n",
                             cx, plotBottom, plotBottom + 5, kInk);
            s += fmt::format(R"~(<text class="pattern" x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="{}">{})~", cx,
                             plotBottom + 19, kInk, esc(a));
            if (!b.empty()) s += fmt::format(R"~(<tspan x="{:.1f}" dy="14">{}</tspan>)~", cx, esc(b));
            s += "</text>\n";
        }
        if (in.candidates.empty()) {
            s += "</g>\n";
            continue;
        }

        const sched::CandidateGate& c = in.candidates[std::size_t(pi)];
        // Heading: name, verdict badge, the worst pattern.
        const std::string badge(sched::verdictName(c.verdict.verdict));
        const double badgeW = badge.size() > 4 ? 96 : 48;
        // Badge first: its width is known, so nothing depends on guessing the name's rendered width but the note after
        // it.
        const double badgeX = left;
        s += fmt::format(
            R"~(<rect class="verdict" x="{:.1f}" y="{:.1f}" width="{:.0f}" height="20" rx="4" fill="{}"/>)~"
            R"~(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" font-weight="bold" fill="#ffffff">{}</text>)~"
            "\n",
            badgeX, py + 11, badgeW, verdictColour(c.verdict.verdict), badgeX + badgeW / 2, py + 25, badge);
        s += fmt::format(
            R"~(<text class="candidate" x="{:.1f}" y="{:.1f}" font-size="15" font-weight="bold" fill="{}">{}</text>)~"
            "\n",
            badgeX + badgeW + 10, py + 26, kInk, esc(c.candidate));
        std::string why;
        if (!c.verdict.correctnessOk)
            why = fmt::format("correctness {} passed, {} failed, {} skipped", c.correctness.passed,
                              c.correctness.failed, c.correctness.skipped);
        if (c.verdict.worstPattern) {
            const auto w = std::find_if(c.projections.begin(), c.projections.end(),
                                        [&](const auto& p) { return p.pattern == *c.verdict.worstPattern; });
            if (w != c.projections.end())
                why += fmt::format("{}worst pattern {}: lower end {:.3f} ms", why.empty() ? "" : " \u00b7 ", w->pattern,
                                   w->ciLowMs);
        } else {
            why += std::string(why.empty() ? "" : " \u00b7 ") + "no valid pattern measured";
        }
        s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" fill="{}">{}</text>)~"
                         "\n",
                         badgeX + badgeW + 10 + 10.0 * double(c.candidate.size()) + 14, py + 25, kMuted, esc(why));

        for (std::size_t k = 0; k < patterns.size(); ++k) {
            const double cx = left + band * (double(k) + 0.5);
            const auto p = std::find_if(c.projections.begin(), c.projections.end(),
                                        [&](const auto& q) { return q.pattern == patterns[k]; });
            if (p == c.projections.end()) {
                const auto nv = std::find_if(c.notValid.begin(), c.notValid.end(),
                                             [&](const auto& q) { return q.pattern == patterns[k]; });
                s += fmt::format(
                    R"~(<text x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="{}" font-style="italic">{}</text>)~"
                    "\n",
                    cx, plotTop + 20, kMuted, nv != c.notValid.end() ? "not valid" : "not measured");
                continue;
            }
            if (!finiteProjection(*p)) {
                s += fmt::format(
                    R"~(<text class="ci-na" x="{:.1f}" y="{:.1f}" text-anchor="middle" fill="{}">n/a</text>)~"
                    "\n",
                    cx, plotTop + 20, kFail);
                continue;
            }
            const char* colour = verdictColour(p->verdict);
            const double y0 = Y(p->ciLowMs), y1 = Y(p->ciHighMs), ym = Y(p->medianMs);
            const double cap = std::min(10.0, band * 0.12);
            s += fmt::format(
                R"~(<g class="ci" data-candidate="{}" data-pattern="{}" data-median-ms="{:.6g}" data-ci-low-ms="{:.6g}" )~"
                R"~(data-ci-high-ms="{:.6g}" data-pass="{}" data-verdict="{}">)~"
                "\n",
                esc(c.candidate), esc(p->pattern), p->medianMs, p->ciLowMs, p->ciHighMs, p->passes ? "true" : "false",
                sched::verdictKey(p->verdict));
            s += fmt::format(R"~(<title>{} / {}: median {:.3f} ms, 95% CI [{:.3f}, {:.3f}] ms, {} pairs: {}</title>)~"
                             "\n",
                             esc(c.candidate), esc(p->pattern), p->medianMs, p->ciLowMs, p->ciHighMs, p->pairs,
                             p->passes                            ? "passes"
                             : p->verdict == sched::Verdict::Fail ? "fails"
                                                                  : "on the bar");
            s += fmt::format(
                R"~(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" fill-opacity="0.12"/>)~"
                "\n",
                cx - cap, y1, 2 * cap, std::max(0.5, y0 - y1), colour);
            s += fmt::format(
                R"~(<g stroke="{0}" stroke-width="2.2" stroke-linecap="round"><line x1="{1:.1f}" y1="{2:.1f}" x2="{1:.1f}" y2="{3:.1f}"/>)~"
                R"~(<line x1="{4:.1f}" y1="{2:.1f}" x2="{5:.1f}" y2="{2:.1f}"/><line x1="{4:.1f}" y1="{3:.1f}" x2="{5:.1f}" y2="{3:.1f}"/></g>)~"
                "\n",
                colour, cx, y0, y1, cx - cap, cx + cap);
            s +=
                fmt::format(R"~(<circle cx="{:.1f}" cy="{:.1f}" r="5" fill="{}" stroke="#ffffff" stroke-width="1.5"/>)~"
                            "\n",
                            cx, ym, colour);
            s += fmt::format(R"~(<text x="{:.1f}" y="{:.1f}" font-size="11" fill="{}">{:.3f}</text>)~"
                             "\n",
                             cx + cap + 4, ym + 4, kInk, p->medianMs);
            s += "</g>\n";
        }
        s += "</g>\n";
    }
    s += "</svg>\n";
    return s;
}

std::string reportHtml(const ReportInput& in) {
    std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    h += "<title>" + esc(in.device.empty() ? in.title : in.title + " \u2014 " + in.device) + "</title>\n";
    h += "<style>body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;margin:24px;color:#222}"
         "pre{background:#f6f6f6;padding:12px;border-radius:6px;overflow-x:auto}</style>\n</head>\n<body>\n";
    h += reportSvg(in);
    for (const auto& c : in.candidates) h += "<pre>" + esc(sched::formatGateTable(c)) + "</pre>\n";
    if (!in.repeatTable.empty())
        h += "<h2>Repeatability: the gate in fresh processes</h2>\n<pre class=\"repeat\">" + esc(in.repeatTable) +
             "</pre>\n";
    h += "</body>\n</html>\n";
    return h;
}

void writeReport(const std::filesystem::path& path, const ReportInput& in) {
    const std::string text = path.extension() == ".html" ? reportHtml(in) : reportSvg(in);
    if (!path.parent_path().empty()) std::filesystem::create_directories(path.parent_path());
    const std::filesystem::path tmp = path.string() + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary);
        if (!f) throw std::runtime_error("cannot write " + tmp.string());
        f << text;
        if (!f.flush()) throw std::runtime_error("cannot write " + tmp.string() + ": disk full?");
    }
    std::filesystem::rename(tmp, path);
}

}  // namespace zp::probe
