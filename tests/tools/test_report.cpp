// report_cards and trace_json: the report of the kept cards is well-formed SVG with one whisker per
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

#include "report_cards.hpp"
#include "zp/probe/input_error.hpp"
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
    // Two candidates x 7 patterns in each of the two cards with timing (the H200 card has none).
    EXPECT_EQ(count(svg, "<circle"), 2u * 7u * 2u);
    EXPECT_EQ(count(svg, ">bar 0.5<"), 2u * 7u * 2u);
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
