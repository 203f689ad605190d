// report_cards and trace_json: the report of the kept cards is well-formed SVG with one whisker per
// pattern × candidate and the gate line; the overview states the bar and leads with a forest plot
// per candidate; kernels keep their colours; a sweep renders alone with its verdicts and plots; the
// kernel trace is Chrome trace-event JSON.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_cards.hpp"
#include "trace_json.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/probe/sweep.hpp"

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

std::vector<app::LoadedCard> keptCards() {
    const std::string data = ZP_TOOLS_TEST_DATA;
    return {app::loadCard(data + "/card0_pocl_fixture.json"), app::loadCard(data + "/card0_h200_no_timing.json"),
            app::loadCard(data + "/card1_future_verdicts.json")};
}

}  // namespace

TEST(XmlCheck, GivenBrokenXml_ThenTheCheckerSaysSo) {  // the checker itself must be able to fail
    EXPECT_EQ(xmlProblem("<a><b/></a>"), "");
    EXPECT_NE(xmlProblem("<a><b></a>"), "");
    EXPECT_NE(xmlProblem("<a x=1/>"), "");
    EXPECT_NE(xmlProblem("<a>&nbsp;</a>"), "");
    EXPECT_NE(xmlProblem("<a/><b/>"), "");
}

TEST(ReportCards, GivenTheKeptCards_ThenSvgWellFormed_OnePanelPerPatternAndCandidate) {
    const auto cards = keptCards();
    const std::string svg = app::cardsReportSvg(cards);
    EXPECT_EQ(xmlProblem(svg), "");
    EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
    // Two candidates x 7 patterns in each of the two cards with timing (the H200 card has none):
    // a panel each, and a row of each candidate's forest plot, which lead after the bar.
    EXPECT_EQ(count(svg, "<circle"), 2u * 2u * 7u * 2u);
    EXPECT_EQ(count(svg, ">bar 0.5<"), 2u * 7u * 2u);
    EXPECT_EQ(count(svg, "class=\"forest\""), 2u * 2u);
    EXPECT_LT(svg.find("class=\"bar-statement\""), svg.find("class=\"forest\""));
    EXPECT_LT(svg.find("class=\"forest\""), svg.find(">bar 0.5<"));
}

TEST(ReportCards, GivenBooleanAndStringVerdicts_ThenCellsColouredPassFailOrOnTheBar) {
    const std::string html = app::cardsReportHtml(keptCards());
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_EQ(html.find("<pre"), std::string::npos);
    // Schema 2 (verdict.pass false) reads "fail"; the future card's strings are taken as given.
    EXPECT_NE(html.find(R"(<td class="fail">fail</td>)"), std::string::npos);
    EXPECT_NE(html.find(R"(<td class="onbar">on_the_bar</td>)"), std::string::npos);
    EXPECT_NE(html.find(R"(<td class="pass">pass</td>)"), std::string::npos);
    // From the CI: six_local [-166, 4] straddles the 0.5 bar; within_row_duplicate [0.1, 0.3] fails.
    EXPECT_NE(html.find(R"~(<td class="onbar" title="on the bar (bar 0.5 ms)">-80.000)~"), std::string::npos);
    EXPECT_NE(html.find(R"~(<td class="fail" title="fail (bar 0.5 ms)">0.200)~"), std::string::npos);
    EXPECT_NE(html.find("no timing in this card (--no-timing)"), std::string::npos) << html.substr(0, 400);
}

TEST(ReportCards, GivenHostileNames_ThenEscaped_AndBadInputRejected) {
    auto cards = keptCards();
    cards[0].label = "<test & \"quotes\">";
    const std::string html = app::cardsReportHtml({cards[0]});
    EXPECT_NE(html.find("&lt;test &amp; &quot;quotes&quot;&gt;"), std::string::npos);
    EXPECT_EQ(xmlProblem(app::cardsReportSvg({cards[0]})), "");
    EXPECT_EQ(xmlProblem(app::cardsReportSvg({})), "");  // no cards: still a picture

    EXPECT_EQ(app::reportFormatOf("r.html"), app::ReportFormat::html);
    EXPECT_EQ(app::reportFormatOf("r.svg"), app::ReportFormat::svg);
    EXPECT_THROW(app::reportFormatOf("r.png"), probe::InputError);
    EXPECT_THROW(app::reportFormatOf("report"), probe::InputError);

    const fs::path dir = fs::temp_directory_path() / ("zp-report-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "old.json") << R"({"schema": 1, "card": 0})";
    std::ofstream(dir / "junk.json") << "{not json";
    EXPECT_THROW(app::loadCard(dir / "old.json"), probe::InputError);
    EXPECT_THROW(app::loadCard(dir / "junk.json"), probe::InputError);
    EXPECT_THROW(app::loadCard(dir / "missing.json"), probe::InputError);
    fs::remove_all(dir);
}

TEST(TraceJson, GivenSpansOfTwoVariants_ThenOneNamedTrackEach_AndCompleteEventsInMicroseconds) {
    std::vector<app::TraceSpan> spans;
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
    const nlohmann::json j = nlohmann::json::parse(app::traceJson(spans).dump());
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
    EXPECT_THROW(app::traceJson({{"baseline", "gemm1", 100, 50, {}}}), std::invalid_argument);
    const auto empty = app::traceJson({});
    EXPECT_EQ(empty["traceEvents"].size(), 1u);  // the process name only
}

namespace {

// The text of every element opened by `open` (up to its first `close`), in order.
std::vector<std::string> between(const std::string& text, const std::string& open, const std::string& close) {
    std::vector<std::string> out;
    for (auto p = text.find(open); p != std::string::npos; p = text.find(open, p + open.size())) {
        const auto e = text.find(close, p + open.size());
        out.push_back(text.substr(p, e == std::string::npos ? std::string::npos : e + close.size() - p));
    }
    return out;
}

// The value of attribute `name` in the first tag of `tag`.
std::string attr(const std::string& tag, const std::string& name) {
    const auto p = tag.find(" " + name + "=\"");
    if (p == std::string::npos) return "";
    const auto b = p + name.size() + 3;
    return tag.substr(b, tag.find('"', b) - b);
}

std::vector<nlohmann::json> sweepFixture() {
    return probe::readSweepRows(std::string(ZP_TOOLS_TEST_DATA) + "/sweep_hidden.jsonl", false);
}

}  // namespace

// The overview states the bar and leads with one forest plot per candidate: every
// pattern on one axis with its interval, the bar drawn, the deciding pattern marked (the gate's rule).
TEST(ReportCards, GivenTheKeptCards_ThenTheBarIsStated_AndOneForestPlotPerCandidateLeads) {
    const std::string html = app::cardsReportHtml(keptCards());
    EXPECT_NE(html.find("<p class=\"bar-statement\"><b>The bar:</b>"), std::string::npos);
    EXPECT_NE(html.find("at or above <b>0.5 ms</b> over 43 layers"), std::string::npos);
    const auto forests = between(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"forest\"", "</svg>");
    ASSERT_EQ(forests.size(), 4u);  // two candidates in each of the two cards with timing
    EXPECT_LT(html.find("class=\"forest\""), html.find("<table class=\"overview\">")) << "the forests lead";
    EXPECT_LT(html.find("class=\"bar-statement\""), html.find("class=\"forest\""));
    const std::vector<std::pair<std::string, std::string>> expected = {{"paired_direct", "within_row_duplicate"},
                                                                       {"two_launch", "same_typical"},
                                                                       {"paired_direct", "within_row_duplicate"},
                                                                       {"two_launch", "same_typical"}};
    for (std::size_t i = 0; i < forests.size(); ++i) {
        const std::string& f = forests[i];
        EXPECT_EQ(xmlProblem(f), "") << f.substr(0, 200);
        EXPECT_EQ(attr(f, "data-candidate"), expected[i].first);
        EXPECT_EQ(attr(f, "data-bar"), "0.5");
        EXPECT_EQ(count(f, "<line class=\"bar\""), 1u);
        EXPECT_EQ(count(f, "<line class=\"ci\""), 7u) << "one interval per pattern";
        EXPECT_EQ(count(f, "<g class=\"row"), 7u);
        const auto deciding = between(f, "<g class=\"row decides\"", ">");
        ASSERT_EQ(deciding.size(), 1u) << "one pattern decides";
        // The failing pattern with the smallest upper end (probe::decidingPattern), not six_local's
        // smallest lower end that the fixture's old worst_pattern names.
        EXPECT_EQ(attr(deciding[0], "data-pattern"), expected[i].second);
    }
    // The bar sits at x(0.5) of the plot's own scale: left of every whisker's right end that passes.
    const std::string& pd = forests[0];
    const auto barLine = between(pd, "<line class=\"bar\"", "/>")[0];
    const auto zero = between(pd, "<line class=\"zero\"", "/>")[0];
    EXPECT_GT(std::stod(attr(barLine, "x1")), std::stod(attr(zero, "x1")));
    // The overview table marks the same pattern.
    EXPECT_EQ(count(html, "<small class=\"decides\">"), 4u);
}

// Verdict lines of at most 200 characters; a card's paragraph (an older ze-probe's) is cut and
// kept whole in the detail.
TEST(ReportCards, GivenAVerdictParagraph_ThenTheLineIsAtMost200Characters_AndTheDetailHoldsIt) {
    auto cards = keptCards();
    std::string paragraph = "ON THE BAR paired_direct: on the bar:";
    while (paragraph.size() < 1172) paragraph += " six_local 95% CI [-8805.243 ms, 10603.800 ms] holds 0.500 ms;";
    cards[0].card["gate"]["candidates"][0]["verdict"]["line"] = paragraph;
    cards[0].card["gate"]["candidates"][1]["verdict"]["line"] = "FAIL two_launch: short";
    cards[0].card["gate"]["candidates"][1]["verdict"]["detail"] = "FAIL two_launch: the whole story";
    const std::string html = app::cardsReportHtml({cards[0]});
    const auto lines = between(html, "<p class=\"verdict-line", "</p>");
    ASSERT_EQ(lines.size(), 4u);  // forest section and card section, two candidates
    for (const auto& l : lines) {
        const std::string text = l.substr(l.find('>') + 1, l.size() - l.find('>') - 1 - 4);
        EXPECT_LE(text.size(), 200u) << text;
    }
    EXPECT_NE(html.find("<details class=\"verdict-detail\"><summary>detail</summary><p>" + paragraph + "</p>"),
              std::string::npos);
    EXPECT_NE(html.find(">FAIL two_launch: short</p>"), std::string::npos);
    EXPECT_NE(html.find("<p>FAIL two_launch: the whole story</p>"), std::string::npos);
}

// Where the time goes: one colour per kernel of a card (no two kernels of one bar share one,
// however many), and every variant's bar on its own scale (its kernels fill the plot's width).
TEST(ReportCards, GivenSeventeenKernels_ThenNoTwoKernelsOfABarShareAColour_AndEachVariantHasItsOwnScale) {
    auto cards = keptCards();
    nlohmann::json& v = cards[0].card["timings"]["patterns"]["six_local"]["variants"];
    nlohmann::json kernels = nlohmann::json::array();
    for (int k = 0; k < 17; ++k)
        kernels.push_back({{"kernel", "k" + std::to_string(k)}, {"launch", k}, {"median_ns", 1000.0 * (k + 1)}});
    v["baseline"]["kernels"] = kernels;
    v["paired_direct"]["kernels"] = nlohmann::json::array({{{"kernel", "k0"}, {"launch", 0}, {"median_ns", 10.0}}});
    const std::string html = app::cardsReportHtml({cards[0]});
    const auto charts = between(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"kernel-bars\"", "</svg>");
    ASSERT_EQ(charts.size(), 7u);  // one per pattern
    std::map<std::string, std::string> colourOfKernel;
    std::size_t bars = 0;
    for (const auto& chart : charts) {
        EXPECT_EQ(xmlProblem(chart), "");
        for (const auto& g : between(chart, "<g class=\"variant\"", "</g>")) {
            ++bars;
            std::set<std::string> colours;
            double width = 0;
            const auto rects = between(g, "<rect class=\"kernel\"", "</rect>");
            for (const auto& r : rects) {
                const std::string kernel = attr(r, "data-kernel"), fill = attr(r, "fill");
                EXPECT_TRUE(colours.insert(fill).second) << "two kernels of one bar share " << fill;
                const auto [it, fresh] = colourOfKernel.emplace(kernel, fill);
                EXPECT_EQ(it->second, fill) << kernel << " changes colour between charts";
                width += std::stod(attr(r, "width"));
            }
            if (!rects.empty()) {
                EXPECT_NEAR(width, 960.0 - 150 - 150, 0.5) << "a variant's own scale fills the plot";
            }
        }
    }
    EXPECT_EQ(bars, 7u * 3u);
    std::set<std::string> all;
    for (const auto& [k, c] : colourOfKernel) all.insert(c);
    EXPECT_EQ(all.size(), colourOfKernel.size()) << "one colour per kernel of the card";
    EXPECT_GE(colourOfKernel.size(), 17u);
    // The one-kernel 10 ns variant is still a full-width bar; its total against the slowest is tiny.
    const auto six = charts[5];
    ASSERT_NE(six.find("data-variant=\"paired_direct\""), std::string::npos);
    const auto pd = between(six, "<g class=\"variant\" data-variant=\"paired_direct\"", "</g>")[0];
    EXPECT_NEAR(std::stod(attr(between(pd, "<rect class=\"kernel\"", ">")[0], "width")), 660.0, 0.5);
    EXPECT_LT(std::stod(attr(between(pd, "<rect class=\"total\"", ">")[0], "width")), 1.0);
}

// The sweep: rows' verdicts in the table (gate_verdict, or an older passes_gate), and plots of a
// metric against the axis, one line per variant; a sweep alone renders.
TEST(ReportCards, GivenASweepAlone_ThenItsVerdictsAndOnePlotLinePerVariant) {
    auto rows = sweepFixture();
    ASSERT_EQ(rows.size(), 12u);
    const std::string html = app::cardsReportHtml({}, rows);
    EXPECT_EQ(html.find("no gate in these cards"), std::string::npos);
    const auto table = between(html, "<table class=\"sweep\">", "</table>");
    ASSERT_EQ(table.size(), 1u);
    EXPECT_EQ(count(table[0], "<tr><td>"), 12u);
    EXPECT_EQ(count(table[0], "<td class=\"pass\">pass</td>"), 5u);
    EXPECT_EQ(count(table[0], "<td class=\"onbar\">on_the_bar</td>"), 2u);
    EXPECT_EQ(count(table[0], "<td class=\"fail\">fail</td>"), 4u);
    EXPECT_EQ(count(table[0], "<td class=\"unknown\">–</td>"), 1u);  // the not-valid point
    const auto plots = between(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"sweep-plot\"", "</svg>");
    ASSERT_EQ(plots.size(), 2u);
    for (const auto& p : plots) {
        EXPECT_EQ(xmlProblem(p), "");
        EXPECT_EQ(attr(p, "data-x"), "hidden");
    }
    const auto saving = between(plots[0], "<g class=\"series\"", "</g>");
    ASSERT_EQ(saving.size(), 3u);
    EXPECT_EQ(attr(saving[0], "data-series"), "paired_direct");
    EXPECT_EQ(attr(saving[1], "data-series"), "two_launch");
    EXPECT_EQ(attr(saving[2], "data-series"), "one_launch");
    EXPECT_EQ(count(saving[0], "<circle"), 4u);
    EXPECT_EQ(count(saving[2], "<circle"), 3u);  // one_launch at hidden=1024 is not valid
    EXPECT_EQ(count(plots[0], "<line class=\"bar\""), 1u);
    // The time plot: the three variants and the baseline, a variant in the colour it had in the
    // saving plot, the baseline in its own.
    std::map<std::string, std::string> inTime;
    for (const auto& g : between(plots[1], "<g class=\"series\"", "</g>")) inTime[attr(g, "data-series")] = g;
    ASSERT_EQ(inTime.size(), 4u);
    ASSERT_TRUE(inTime.count("baseline"));
    EXPECT_EQ(count(inTime["baseline"], "<circle"), 4u) << "the baseline once per x";
    const auto stroke = [&](const std::string& g) { return attr(between(g, "<polyline", ">")[0], "stroke"); };
    for (const auto& g : saving) {
        const std::string name = attr(g, "data-series");
        ASSERT_TRUE(inTime.count(name)) << name;
        EXPECT_EQ(stroke(inTime[name]), stroke(g)) << name << " changes colour between the plots";
        EXPECT_NE(stroke(inTime["baseline"]), stroke(g)) << name;
    }
    // The x positions rise with hidden (log2: 512 .. 4096 evenly spaced).
    const auto pts = between(saving[0], "<polyline points=\"", "\"");
    ASSERT_EQ(pts.size(), 1u);
    std::istringstream in(pts[0].substr(std::string("<polyline points=\"").size()));
    std::vector<double> xs;
    for (std::string xy; in >> xy;) xs.push_back(std::stod(xy.substr(0, xy.find(','))));
    ASSERT_EQ(xs.size(), 4u);
    EXPECT_NEAR(xs[1] - xs[0], xs[2] - xs[1], 0.2);
    EXPECT_NEAR(xs[3] - xs[2], xs[2] - xs[1], 0.2);
    EXPECT_GT(xs[1], xs[0]);

    // An older row's boolean passes_gate is read too.
    rows[0]["result"].erase("gate_verdict");
    rows[0]["result"]["passes_gate"] = false;
    const std::string older = app::cardsReportHtml({}, rows);
    EXPECT_EQ(count(between(older, "<table class=\"sweep\">", "</table>")[0], "<td class=\"fail\">fail</td>"), 5u);
}

// A timed H200 card set kept as test data (tools/bench/h200_stream.sh, the gate at NVIDIA's stream
// tile): a real GPU's gate reads as the card says, six candidates, six_local deciding one_launch's FAIL.
TEST(ReportCards, GivenTheTimedH200Card_ThenOneForestPerCandidate_AndSixLocalDecidesOneLaunch) {
    const std::string data = ZP_TOOLS_TEST_DATA;
    const std::vector<app::LoadedCard> cards = {app::loadCard(data + "/card0_h200_stream_gate.json")};
    const std::string html = app::cardsReportHtml(cards);
    EXPECT_EQ(xmlProblem(app::cardsReportSvg(cards)), "");
    EXPECT_NE(html.find("NVIDIA H200"), std::string::npos);
    const auto forests = between(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"forest\"", "</svg>");
    ASSERT_EQ(forests.size(),
              6u);  // gemm2_loader_fused, source_direct, paired_epilogue, paired_direct, two_launch, one_launch
    const std::string& one = forests.back();
    EXPECT_EQ(attr(one, "data-candidate"), "one_launch");
    const auto deciding = between(one, "<g class=\"row decides\"", ">");
    ASSERT_EQ(deciding.size(), 1u);
    EXPECT_EQ(attr(deciding[0], "data-pattern"), "six_local");
    EXPECT_EQ(count(one, "<line class=\"ci\""), 7u);
    // Its verdict line, as the card has it: FAIL on six_local's interval [-1.170, -1.136] ms.
    EXPECT_NE(html.find("[-1.170 ms, -1.136 ms]"), std::string::npos);
}
