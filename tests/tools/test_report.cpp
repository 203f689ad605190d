// report_svg and trace_json: the gate picture is well-formed SVG with one whisker per
// pattern × candidate and the gate line; the kernel trace is Chrome trace-event JSON.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_svg.hpp"
#include "trace_json.hpp"

namespace fs = std::filesystem;
using namespace zp;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
    return n;
}

// A minimal XML well-formedness check: tags balance and nest, attributes are quoted,
// entities are the five XML ones or numeric. Returns "" when well-formed, else what is wrong.
std::string xmlProblem(const std::string& x) {
    std::vector<std::string> open;
    std::size_t i = 0;
    int roots = 0;
    auto isName = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.';
    };
    while (i < x.size()) {
        if (x[i] == '&') {
            const auto semi = x.find(';', i);
            if (semi == std::string::npos) return "unterminated entity";
            const std::string e = x.substr(i + 1, semi - i - 1);
            static const std::set<std::string> ok = {"amp", "lt", "gt", "quot", "apos"};
            if (!ok.count(e) && !(e.size() > 1 && e[0] == '#')) return "unknown entity &" + e + ";";
            i = semi + 1;
            continue;
        }
        if (x[i] == '>') return "stray '>' at " + std::to_string(i);
        if (x[i] != '<') {
            ++i;
            continue;
        }
        if (x.compare(i, 4, "<!--") == 0) {
            i = x.find("-->", i);
            if (i == std::string::npos) return "unterminated comment";
            i += 3;
            continue;
        }
        if (x.compare(i, 2, "<?") == 0 || x.compare(i, 2, "<!") == 0) {
            i = x.find('>', i) + 1;
            continue;
        }
        const bool closing = x[i + 1] == '/';
        std::size_t j = i + (closing ? 2 : 1);
        const std::size_t nameStart = j;
        while (j < x.size() && isName(x[j])) ++j;
        const std::string name = x.substr(nameStart, j - nameStart);
        if (name.empty()) return "empty tag name at " + std::to_string(i);
        // Attributes: name="value" (no '<' inside values).
        bool selfClosing = false;
        while (j < x.size()) {
            while (j < x.size() && std::isspace(static_cast<unsigned char>(x[j]))) ++j;
            if (x[j] == '>') break;
            if (x.compare(j, 2, "/>") == 0) {
                selfClosing = true;
                ++j;
                break;
            }
            if (closing) return "attributes on closing tag " + name;
            const std::size_t a = j;
            while (j < x.size() && isName(x[j])) ++j;
            if (j == a || x[j] != '=' || (x[j + 1] != '"' && x[j + 1] != '\''))
                return "bad attribute in <" + name + "> at " + std::to_string(a);
            const char q = x[j + 1];
            const auto end = x.find(q, j + 2);
            if (end == std::string::npos) return "unterminated attribute value";
            if (x.substr(j + 2, end - j - 2).find('<') != std::string::npos) return "'<' in an attribute value";
            j = end + 1;
        }
        if (j >= x.size()) return "unterminated tag " + name;
        ++j;
        if (closing) {
            if (open.empty() || open.back() != name)
                return "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
            open.pop_back();
        } else if (!selfClosing) {
            if (open.empty()) ++roots;
            open.push_back(name);
        } else if (open.empty()) {
            ++roots;
        }
        i = j;
    }
    if (!open.empty()) return "<" + open.back() + "> never closed";
    if (roots != 1) return std::to_string(roots) + " root elements";
    return "";
}

sched::CandidateGate candidate(const std::string& name, double shift) {
    const std::vector<std::string> patterns = {
        "same_typical",  "disjoint_typical", "cross_row_overlap", "within_row_duplicate",
        "all_duplicate", "six_local",        "all_remote"};
    std::vector<sched::Projection> ps;
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        sched::Projection p;
        p.pattern = patterns[i];
        p.medianMs = 0.55 + shift + 0.05 * double(i % 3);
        p.ciLowMs = p.medianMs - 0.06 - 0.01 * double(i);
        p.ciHighMs = p.medianMs + 0.07;
        p.pairs = 50;
        ps.push_back(p);
    }
    return sched::evaluateGate(name, ps, {84, 0, 0}, 0.50, 43);
}

probe::ReportInput sampleReport() {
    probe::ReportInput in;
    in.device = "Intel(R) Arc(TM) B580 Graphics <test & \"quotes\">";
    in.candidates = {candidate("paired_epilogue", 0.12), candidate("source_direct", 0.0),
                     candidate("gemm2_loader_fused", -0.6)};
    return in;
}

}  // namespace

TEST(XmlCheck, GivenBrokenXml_ThenTheCheckerSaysSo) {  // the checker itself must be able to fail
    EXPECT_EQ(xmlProblem("<a><b/></a>"), "");
    EXPECT_NE(xmlProblem("<a><b></a>"), "");
    EXPECT_NE(xmlProblem("<a x=1/>"), "");
    EXPECT_NE(xmlProblem("<a>&nbsp;</a>"), "");
    EXPECT_NE(xmlProblem("<a/><b/>"), "");
}

TEST(ReportSvg, GivenThreeCandidates_ThenWellFormed_WithTheGateLineAndOneWhiskerPerPatternAndCandidate) {
    const auto in = sampleReport();
    const std::string svg = probe::reportSvg(in);
    EXPECT_EQ(xmlProblem(svg), "");
    EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
    EXPECT_EQ(count(svg, "class=\"ci\""), 3u * 7u);
    EXPECT_EQ(count(svg, "class=\"gate-line\""), 3u);  // one per panel
    EXPECT_NE(svg.find("gate 0.50 ms"), std::string::npos);
    EXPECT_NE(svg.find("saving over 43 layers (ms)"), std::string::npos);
    EXPECT_NE(svg.find("&lt;test &amp; &quot;quotes&quot;&gt;"), std::string::npos);  // the device name, escaped
    EXPECT_NE(svg.find("data-candidate=\"gemm2_loader_fused\" data-pattern=\"all_remote\""), std::string::npos);
    // gemm2_loader_fused fails every pattern; paired_epilogue passes every one.
    EXPECT_EQ(
        count(svg, "data-pass=\"false\""), 7u + 7u - [&] {
            int n = 0;
            for (const auto& p : in.candidates[1].projections) n += p.passes;
            return std::size_t(n);
        }());
    EXPECT_EQ(count(svg, ">PASS<"), 1u);
    EXPECT_EQ(count(svg, ">FAIL<"), 2u);
}

TEST(ReportSvg, GivenNotValidAndNonFinitePatterns_ThenLabelledNotDrawn) {
    auto c = candidate("x", 0.2);
    c.projections.back().ciLowMs = std::nan("");
    c.notValid.push_back({"all_remote_extra", "C = 1"});
    c = sched::evaluateGate(c.candidate, c.projections, c.correctness, 0.5, 43, c.notValid);
    probe::ReportInput in;
    in.candidates = {c};
    const std::string svg = probe::reportSvg(in);
    EXPECT_EQ(xmlProblem(svg), "");
    EXPECT_EQ(count(svg, "class=\"ci\""), 6u);
    EXPECT_EQ(count(svg, "class=\"ci-na\""), 1u);
    EXPECT_NE(svg.find("not valid"), std::string::npos);
    EXPECT_EQ(xmlProblem(probe::reportSvg({})), "");  // no candidates: still a picture
}

TEST(ReportSvg, GivenAnHtmlPath_ThenTheSvgIsInlineWithTheTables) {
    const fs::path dir = fs::temp_directory_path() / ("zp-report-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    probe::writeReport(dir / "gate.html", sampleReport());
    probe::writeReport(dir / "gate.svg", sampleReport());
    std::ifstream h(dir / "gate.html"), s(dir / "gate.svg");
    std::stringstream hs, ss;
    hs << h.rdbuf();
    ss << s.rdbuf();
    EXPECT_EQ(hs.str().rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(hs.str().find(ss.str()), std::string::npos);
    EXPECT_NE(hs.str().find("verdict: PASS paired_epilogue"), std::string::npos);
    EXPECT_EQ(xmlProblem(ss.str()), "");
    if (const char* keep = std::getenv("ZP_REPORT_KEEP"))
        fs::copy_file(dir / "gate.svg", keep, fs::copy_options::overwrite_existing);
    fs::remove_all(dir);
}

TEST(TraceJson, GivenSpansOfTwoVariants_ThenOneNamedTrackEach_AndCompleteEventsInMicroseconds) {
    std::vector<probe::TraceSpan> spans;
    const std::uint64_t t0 = 1'700'000'000'000'000'123ull;  // absolute device ticks: ts must stay exact
    const char* kernels[] = {"route_compact", "gemm1", "gemm2"};
    for (int rep = 0; rep < 2; ++rep)
        for (const char* variant : {"baseline", "paired_epilogue"})
            for (int k = 0; k < 3; ++k) {
                const std::uint64_t s =
                    t0 + std::uint64_t(rep) * 100000 + std::uint64_t(k) * 5000 + (variant[0] == 'p') * 50000;
                spans.push_back({variant,
                                 kernels[k],
                                 s,
                                 s + 1234 + std::uint64_t(k),
                                 {{"case", "six_local/v0"}, {"pattern", "six_local"}}});
            }
    const nlohmann::json j = nlohmann::json::parse(probe::traceJson(spans).dump());
    EXPECT_EQ(j["displayTimeUnit"], "ns");
    std::map<int, std::string> threadNames;
    int complete = 0;
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name") {
            EXPECT_TRUE(threadNames.emplace(e["tid"].get<int>(), e["args"]["name"].get<std::string>()).second);
        } else if (e["ph"] == "X") {
            ++complete;
            EXPECT_GE(e["dur"].get<double>(), 0.0);
            EXPECT_GE(e["ts"].get<double>(), 0.0);
            EXPECT_EQ(e["cat"], "kernel");
            EXPECT_EQ(e["args"]["pattern"], "six_local");
            EXPECT_TRUE(e.contains("pid"));
            EXPECT_TRUE(threadNames.count(e["tid"].get<int>())) << "X event on an unnamed track";
        }
    }
    EXPECT_EQ(threadNames.size(), 2u);
    EXPECT_EQ(threadNames[1], "baseline");
    EXPECT_EQ(threadNames[2], "paired_epilogue");
    EXPECT_EQ(complete, 12);
    // First span of paired_epilogue, gemm1: starts 55000 ns after the origin, lasts 1235 ns.
    bool found = false;
    for (const auto& e : j["traceEvents"])
        if (e["ph"] == "X" && e["tid"] == 2 && e["name"] == "gemm1" && e["ts"].get<double>() < 100.0) {
            EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 55.0);
            EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.235);
            found = true;
        }
    EXPECT_TRUE(found);
}

TEST(TraceJson, GivenASpanEndingBeforeItStarts_ThenThrows) {
    EXPECT_THROW(probe::traceJson({{"baseline", "gemm1", 100, 50, {}}}), std::invalid_argument);
    const auto empty = probe::traceJson({});
    EXPECT_EQ(empty["traceEvents"].size(), 1u);  // the process name only
}
