// Findings of the fuzz targets (tests/fuzz/fuzz_*.cpp) as plain tests, and a check that the
// seed corpus is what its file names say (valid_* accepted, bad_* rejected with InputError).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_cards.hpp"
#include "zp/oracle/chain.hpp"
#include "zp/probe/config.hpp"
#include "zp/probe/safetensors.hpp"
#if defined(ZP_FUZZ_MOE_REQUEST)
#include "request_body.hpp"
#endif

namespace fs = std::filesystem;
using namespace zp::probe;

namespace {

const fs::path kCorpus = fs::path(ZP_FUZZ_CORPUS_DIR);

std::vector<std::uint8_t> readBytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<fs::path> corpusFiles(const std::string& target, const std::string& prefix) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(kCorpus / target))
        if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
    return out;
}

TEST(FuzzCorpus, GivenSafetensorsSeeds_WhenParsed_ThenValidOnesParseAndBadOnesThrowInputError) {
    const auto valid = corpusFiles("safetensors", "valid_"), bad = corpusFiles("safetensors", "bad_");
    ASSERT_GE(valid.size(), 3u);
    ASSERT_GE(bad.size(), 3u);
    for (const auto& p : valid) EXPECT_NO_THROW(parseSafetensors(readBytes(p), p.string())) << p;
    for (const auto& p : bad) EXPECT_THROW(parseSafetensors(readBytes(p), p.string()), InputError) << p;
}

TEST(FuzzCorpus, GivenConfigSeeds_WhenParsed_ThenValidOnesParseAndBadOnesThrowInputError) {
    const auto valid = corpusFiles("config", "valid_"), bad = corpusFiles("config", "bad_");
    ASSERT_GE(valid.size(), 3u);
    ASSERT_GE(bad.size(), 3u);
    for (const auto& p : valid) {
        const auto b = readBytes(p);
        EXPECT_NO_THROW(parseConfig(std::string(b.begin(), b.end()), p.string())) << p;
    }
    for (const auto& p : bad) {
        const auto b = readBytes(p);
        EXPECT_THROW(parseConfig(std::string(b.begin(), b.end()), p.string()), InputError) << p;
    }
}

// The card seeds as ze-probe report reads a file: valid_* accepted (cards and a step.json of real
// runs, cut to fit 4 KB), bad_* refused naming the file.
TEST(FuzzCorpus, GivenCardSeeds_WhenReadAsResults_ThenValidOnesAcceptedAndBadOnesThrowInputError) {
    const auto valid = corpusFiles("card", "valid_"), bad = corpusFiles("card", "bad_");
    ASSERT_GE(valid.size(), 3u);
    ASSERT_GE(bad.size(), 3u);
    for (const auto& p : valid) EXPECT_NO_THROW(zp::app::loadResult(p)) << p;
    for (const auto& p : bad) {
        try {
            zp::app::loadResult(p);
            ADD_FAILURE() << p << " accepted";
        } catch (const InputError& e) {
            EXPECT_EQ(std::string(e.what()).rfind(p.string() + ": ", 0), 0u) << e.what();
        }
    }
}

#if defined(ZP_FUZZ_MOE_REQUEST)
// moe-server's request seeds (byte 0: the Content-Type and the shape, fuzz_moe_request.cpp):
// valid_* decode, bad_* are a 400 (BadRequest).
zp::moeserver::MoeRequest decodeMoeSeed(const std::vector<std::uint8_t>& bytes) {
    zeprobe::Shape s;
    const int shapes[4][3] = {{32, 2, 2}, {64, 6, 2}, {32, 1, 1}, {128, 8, 4}};  // hidden, top_k, rows
    const int* pick = shapes[(bytes.at(0) >> 1) & 3];
    s.hidden = pick[0];
    s.topK = pick[1];
    s.rows = pick[2];
    const std::string_view body(reinterpret_cast<const char*>(bytes.data() + 1), bytes.size() - 1);
    return bytes[0] & 1 ? zp::moeserver::parseSafetensorsRequest(body, s) : zp::moeserver::parseJsonRequest(body, s);
}

TEST(FuzzCorpus, GivenMoeRequestSeeds_WhenDecoded_ThenValidOnesDecodeAndBadOnesAreBadRequests) {
    const auto valid = corpusFiles("moe_request", "valid_"), bad = corpusFiles("moe_request", "bad_");
    ASSERT_GE(valid.size(), 3u);
    ASSERT_GE(bad.size(), 3u);
    for (const auto& p : valid) EXPECT_NO_THROW(decodeMoeSeed(readBytes(p))) << p;
    for (const auto& p : bad) EXPECT_THROW(decodeMoeSeed(readBytes(p)), zp::moeserver::BadRequest) << p;
}

// A 400 quotes the request (a value, a key, a JSON token): at most an excerpt of it, so that an
// answer does not grow with the body. Each body below quotes 1 MiB of its own; the message still
// says where and what, and names the quoted text's length.
TEST(MoeRequestBodies, GivenBodiesThatQuoteAMebibyte_WhenRefused_ThenTheAnswerQuotesAnExcerpt) {
    zeprobe::Shape s;
    s.hidden = 32;
    s.topK = 2;
    s.rows = 2;
    const std::string big(1 << 20, 'x'), digits(1 << 20, '9');
    const std::string ids = R"("topk_ids":[[0,1]],"topk_weights":[[0.5,0.5]])";
    // One row of hidden = 32 values, the first `first`.
    const auto row = [](const std::string& first) {
        std::string r = "[[" + first;
        for (int h = 1; h < 32; ++h) r += ",0";
        return r + "]]";
    };
    const std::string hidden = R"("hidden":)" + row("0");
    const struct {
        std::string body, says;
    } bodies[] = {
        {"{" + ids + R"(,"hidden":)" + row('"' + big + '"') + "}", "hidden[0][0] must be a number, got \"xxxx"},
        {"{" + ids + R"(,"hidden_bf16":)" + row('"' + big + '"') + "}", "hidden_bf16[0][0] = \"xxxx"},
        {"{" + ids + ",\"" + big + "\":1}", "unknown key 'xxxx"},
        {"{" + ids + "," + hidden + R"(,"out_format":")" + big + "\"}", "'out_format' must be"},
        {R"({"topk_ids":[[)" + digits + "]]}", "topk_ids[0][0] = 9999"},
        {R"({"topk_ids":")" + big, "malformed JSON"},
    };
    for (const auto& b : bodies) {
        try {
            zp::moeserver::parseJsonRequest(b.body, s);
            ADD_FAILURE() << b.says << ": accepted";
        } catch (const zp::moeserver::BadRequest& e) {
            const std::string answer = zp::moeserver::jsonError(e.what(), "invalid_argument");
            EXPECT_LT(answer.size(), 600u) << b.says << ": " << answer.substr(0, 300);
            const std::string error = nlohmann::json::parse(answer).at("error");
            EXPECT_NE(error.find(b.says), std::string::npos) << error.substr(0, 300);
            EXPECT_NE(error.find(" bytes)"), std::string::npos) << error.substr(0, 300);
        }
    }
}
#endif

// ---- findings (docs/reliability.md "Findings"); each input is also in tests/fuzz/corpus/config/crash-* ----

// What parseConfig(text) did: "ok", "InputError: ...", or another exception type.
std::string parseOutcome(const std::string& text) {
    try {
        parseConfig(text, "fuzz.yaml");
        return "ok";
    } catch (const InputError& e) {
        return std::string("InputError: ") + e.what();
    } catch (const std::exception& e) {
        return std::string("other exception (a bug: tools exit 1): ") + e.what();
    }
}

// parseOutcome in a child process that is killed after `seconds`: a parser that loops forever
// (allocating as it goes) fails the test instead of hanging the suite and eating the memory.
std::string parseOutcomeWithin(const std::string& text, unsigned seconds) {
    int fds[2];
    if (::pipe(fds) != 0) return "pipe failed";
    const pid_t pid = ::fork();
    if (pid < 0) return "fork failed";
    if (pid == 0) {
        ::close(fds[0]);
        ::alarm(seconds);
        const std::string out = parseOutcome(text);
        (void)!::write(fds[1], out.data(), out.size());
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string out;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        return "killed by signal " + std::to_string(WTERMSIG(status)) +
               (WTERMSIG(status) == SIGALRM ? " (still parsing after " + std::to_string(seconds) + " s: a hang)" : "");
    return out;
}

// fuzz_config, finding 1: an error message quoting a scalar that is not UTF-8 went through
// nlohmann::json::dump(), which throws type_error 316, so a non-InputError escaped parseConfig.
TEST(FuzzRegression, GivenAKeyThatIsNotUtf8_WhenTheConfigIsParsed_ThenInputError) {
    const std::string outcome = parseOutcome("-- ro \x93ws\n 2\n");
    EXPECT_EQ(outcome.rfind("InputError: fuzz.yaml", 0), 0u) << outcome;
}

// fuzz_config, finding 2: yaml-cpp 0.7's LoadAll never returns on a stray ',' (allocating a
// null document per turn; jbeder/yaml-cpp#1040), so ze-probe hung on such a config.
TEST(FuzzRegression, GivenAStrayComma_WhenTheConfigIsParsed_ThenInputErrorWithoutHanging) {
    for (const std::string text : {",", "\n,-- 2\n", "rows: 2\n,\n"}) {
        const std::string outcome = parseOutcomeWithin(text, 3);
        EXPECT_EQ(outcome.rfind("InputError: fuzz.yaml:", 0), 0u)
            << "input " << ::testing::PrintToString(text) << ": " << outcome;
    }
}

// fuzz_config, finding 3: weights.prefix took any bytes; toYaml/toJson (the card JSON) then
// threw nlohmann type_error 316 on a prefix that is not UTF-8, or wrote a different prefix.
TEST(FuzzRegression, GivenAWeightsPrefixThatIsNotUtf8_WhenTheConfigIsParsed_ThenInputErrorNamingTheKey) {
    const std::string outcome = parseOutcome("weights: {prefix: \"model.layers.3.ml\x90\xd1\x9a\xcdpert+.\"}\n");
    EXPECT_EQ(outcome.rfind("InputError: fuzz.yaml", 0), 0u) << outcome;
    EXPECT_NE(outcome.find("weights.prefix"), std::string::npos) << outcome;
    Config cfg;
    EXPECT_THROW(applySet(cfg,
                          "weights.prefix=a\xff"
                          "b"),
                 InputError);
}

// fuzz_config, finding 4: rows × top_k beyond INT32_MAX validated, and ChainShape::maxRoutes()
// (int rows * topK) then overflowed: undefined behaviour in every plan sized by it.
TEST(FuzzRegression, GivenRowsTimesTopKBeyondInt32_WhenTheConfigIsParsed_ThenInputErrorNamingRows) {
    const std::string outcome = parseOutcome("rows: 1600880343\n");  // × the default top_k 6
    EXPECT_EQ(outcome.rfind("InputError: fuzz.yaml", 0), 0u) << outcome;
    EXPECT_NE(outcome.find("rows"), std::string::npos) << outcome;
    Config cfg;
    applySet(cfg, "rows=1073741824");
    applySet(cfg, "top_k=2");
    EXPECT_THROW(validate(cfg), InputError);
    // Below INT32_MAX routes the documented maximum of rows refuses it too (docs/reliability.md),
    // naming the key, so maxRoutes() never sees such a shape.
    applySet(cfg, "top_k=1");
    try {
        validate(cfg);
        ADD_FAILURE() << "rows=1073741824 was accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("rows"), std::string::npos) << e.what();
    }
}

// fuzz_config, finding 5: a limit whose text rounds to a BF16 value (10 * 2^64 + 7.01 reads as
// 5 * 2^65) validated, and toYaml wrote it as the f32's shortest text 1.8446744e+20, which names
// no BF16 value: the written config did not parse back.
TEST(FuzzRegression, GivenALimitThatReadsAsALargeBf16Value_WhenWrittenAndParsedBack_ThenTheSameConfig) {
    const Config cfg = parseConfig("swiglu: {limit: 184467440737095516167.01}\n", "fuzz.yaml");
    EXPECT_EQ(double(cfg.shape.swigluLimit), 184467440737095516160.0);
    EXPECT_EQ(parseConfig(toYaml(cfg), "toYaml"), cfg) << toYaml(cfg);
}

}  // namespace
