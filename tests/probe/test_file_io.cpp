// file_io: bounded reads that refuse what is not a regular file, output paths checked
// before work, atomic writes that leave no temporary file, the output lock. (The tools' strict
// command-line numbers: tests/tools/test_option_values.cpp.)
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "zp/probe/config.hpp"
#include "zp/probe/file_io.hpp"

namespace fs = std::filesystem;
using namespace zp::probe;

namespace {

class FileIo : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / ("zp-file-io-" + std::to_string(::getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }
    std::string messageOf(const std::function<void()>& f) {
        try {
            f();
        } catch (const InputError& e) {
            return e.what();
        }
        return "(no InputError)";
    }
    fs::path dir;
};

TEST_F(FileIo, GivenARegularFile_WhenRead_ThenItsBytes) {
    std::ofstream(dir / "a.yaml") << "hidden: 64\n";
    EXPECT_EQ(readTextFile(dir / "a.yaml", "config"), "hidden: 64\n");
}

TEST_F(FileIo, GivenNonRegularFiles_WhenRead_ThenRefusedNamingTheKind) {
    ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_NE(messageOf([&] { readTextFile(dir / "fifo", "config"); }).find("a FIFO, not a regular file"),
              std::string::npos);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0)
        << "a FIFO without a writer must not block";
    EXPECT_NE(messageOf([] {
                  readTextFile("/dev/zero", "config");
              }).find("/dev/zero: cannot read config: a character device"),
              std::string::npos);
    EXPECT_NE(messageOf([&] { readTextFile(dir, "config"); }).find("a directory"), std::string::npos);
    EXPECT_NE(messageOf([&] { readTextFile(dir / "missing", "config"); }).find("No such file"), std::string::npos);
}

TEST_F(FileIo, GivenAFileAboveTheCap_WhenRead_ThenRefusedBeforeReading) {
    std::ofstream(dir / "big") << std::string(101, 'x');
    EXPECT_NE(
        messageOf([&] { readTextFile(dir / "big", "sweep", 100); }).find("101 bytes, more than the 100-byte limit"),
        std::string::npos);
    EXPECT_EQ(readTextFile(dir / "big", "sweep", 101).size(), 101u);
}

// Nesting is bounded while parsing: 5 million '[' once overflowed the stack of `ze-probe report`
// (nlohmann copies a document recursively) instead of ending in a message.
TEST_F(FileIo, GivenJsonNestedPastTheLimit_WhenRead_ThenRefusedNamingTheFileAndTheLimit) {
    const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
    std::ofstream(dir / "ok.json") << nested(kMaxJsonDepth);
    nlohmann::json j = readJsonFile(dir / "ok.json", "card");
    int levels = 1;
    for (const nlohmann::json* at = &j; !at->empty(); at = &(*at)[0]) ++levels;
    EXPECT_EQ(levels, kMaxJsonDepth);
    for (int deep : {kMaxJsonDepth + 1, 5000000}) {
        std::ofstream(dir / "deep.json") << nested(deep);
        EXPECT_EQ(messageOf([&] { readJsonFile(dir / "deep.json", "card"); }),
                  (dir / "deep.json").string() + ": JSON nested deeper than 64 levels: not a card ze-probe wrote")
            << deep;
    }
    std::string objects;
    for (int i = 0; i < 100; ++i) objects += "{\"a\": ";
    std::ofstream(dir / "objects.json") << objects + "1" + std::string(100, '}');
    EXPECT_NE(messageOf([&] { readJsonFile(dir / "objects.json", "step"); }).find("nested deeper than 64 levels"),
              std::string::npos);
}

TEST_F(FileIo, GivenBadOutputPaths_WhenChecked_ThenRefusedNamingOptionAndPath) {
    std::ofstream(dir / "f") << "x";
    EXPECT_NE(messageOf([&] { checkOutputDir(dir / "f", "--out"); }).find("is a regular file, not a directory"),
              std::string::npos);
    EXPECT_NE(
        messageOf([&] { checkOutputDir(dir / "f" / "sub", "--out"); }).find("--out " + (dir / "f" / "sub").string()),
        std::string::npos);
    EXPECT_NE(messageOf([&] { checkOutputFile(dir, "--trace"); }).find("--trace " + dir.string() + ": is a directory"),
              std::string::npos);
    EXPECT_NE(
        messageOf([] { checkOutputFile("/dev/null/x.json", "--report"); }).find("/dev/null is a character device"),
        std::string::npos);
    EXPECT_NO_THROW(checkOutputDir(dir / "new" / "deeper", "--out"));  // created later, under a writable directory
    EXPECT_NO_THROW(checkOutputFile(dir / "new" / "t.json", "--trace"));
    EXPECT_FALSE(fs::exists(dir / "new")) << "a check creates nothing";
}

// The check makes what the run will make: access(2) says yes to root under /proc,
// where mkdir and open then fail after the run's work. Each refusal names the option, the path
// and why; a check that passes leaves nothing behind.
TEST_F(FileIo, GivenPlacesNothingCanBeCreatedIn_WhenChecked_ThenRefusedNamingPathAndWhy) {
    EXPECT_EQ(messageOf([] {
                  checkOutputDir("/proc/nope", "--out");
              }).rfind("--out /proc/nope: cannot create directory /proc/nope: ", 0),
              0u);
    EXPECT_EQ(messageOf([] {
                  checkOutputDir("/proc/nope/deeper", "--out");
              }).rfind("--out /proc/nope/deeper: cannot create directory /proc/nope: ", 0),
              0u);
    EXPECT_EQ(messageOf([] {
                  checkOutputFile("/proc/nope/t.json", "--trace");
              }).rfind("--trace /proc/nope/t.json: cannot create directory /proc/nope: ", 0),
              0u);
    EXPECT_EQ(messageOf([] {
                  checkOutputFile("/proc/t.json", "--report");
              }).rfind("--report /proc/t.json: directory /proc is not writable: ", 0),
              0u);
    EXPECT_FALSE(fs::exists("/proc/nope"));
    // A file where a directory goes, at any depth.
    std::ofstream(dir / "f") << "x";
    EXPECT_NE(messageOf([&] { checkOutputFile(dir / "f" / "a" / "t.json", "-o"); })
                  .find("-o " + (dir / "f" / "a" / "t.json").string() + ": " + (dir / "f").string() +
                        " is a regular file, not a directory"),
              std::string::npos);
    // Passing checks leave nothing: no directory made, no probe file.
    EXPECT_NO_THROW(checkOutputDir(dir / "a" / ".." / "b" / "c", "--out"));
    EXPECT_NO_THROW(checkOutputFile(dir / "d" / "e" / "t.json", "--trace"));
    EXPECT_NO_THROW(checkOutputFile(dir / "f", "--dump"));  // an existing file is replaced later
    std::vector<std::string> left;
    for (const auto& e : fs::recursive_directory_iterator(dir)) left.push_back(e.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{"f"});
}

// Runs started together with the same missing --out, or with their own under one missing parent
// (a sweep's jobs, parallel ctests): each check makes the directories and removes them again, so
// one run's removal can pull a directory from under another's check. None may fail for it.
TEST_F(FileIo, GivenMissingDirectoriesCheckedByManyAtOnce_ThenEveryCheckPasses) {
    constexpr int kRounds = 40, kThreads = 4, kChecksPerThread = 25;
    std::mutex m;
    std::vector<std::string> failures;
    for (int r = 0; r < kRounds; ++r) {
        const fs::path round = dir / ("round" + std::to_string(r));
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                const fs::path own = round / ("run" + std::to_string(t)) / "out";
                for (int c = 0; c < kChecksPerThread; ++c) {
                    try {
                        checkOutputDir(c % 2 == 0 ? round / "out" : own, "--out");
                    } catch (const InputError& e) {
                        std::lock_guard<std::mutex> lock(m);
                        failures.push_back(e.what());
                    }
                }
            });
        for (auto& t : threads) t.join();
    }
    EXPECT_TRUE(failures.empty()) << failures.size() << " of " << kRounds * kThreads * kChecksPerThread
                                  << " checks failed, the first: " << failures.front();
    // No probe file is left; a directory may stay where two checks overlapped (rmdir refuses a
    // directory that holds another check's probe file), empty, as the runs would make it anyway.
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (!e.is_directory()) files.push_back(e.path().string());
    EXPECT_TRUE(files.empty()) << files.size() << " files left, the first: " << files.front();
}

TEST_F(FileIo, GivenAFailedWrite_ThenInputErrorAndNoTemporaryFileLeft) {
    writeFileAtomically(dir / "ok.json", "{}\n", "--out");
    EXPECT_EQ(readTextFile(dir / "ok.json", "json"), "{}\n");
    fs::create_directories(dir / "d");  // a directory where the file goes: the rename fails
    EXPECT_NE(
        messageOf([&] { writeFileAtomically(dir / "d", "x", "--trace"); }).find("--trace " + (dir / "d").string()),
        std::string::npos);
    for (const auto& e : fs::directory_iterator(dir))
        EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
    // Never replaced by a rename (as root, /dev/full would become a regular file).
    EXPECT_NE(messageOf([] {
                  writeFileAtomically("/dev/full", "x", "--dump");
              }).find("--dump /dev/full: is a character device"),
              std::string::npos);
    struct stat st {};
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(FileIo, GivenTheLongestFileName_WhenWritten_ThenItsTemporaryNameFitsToo) {
    const fs::path longest = dir / std::string(255, 'n');
    writeFileAtomically(longest, "x", "--report");  // the temporary name is cut to fit, not the file's
    EXPECT_EQ(readTextFile(longest, "report"), "x");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);
    const fs::path tooLong = dir / std::string(256, 'n');
    EXPECT_NE(messageOf([&] {
                  checkOutputFile(tooLong, "--report");
              }).find("--report " + tooLong.string() + ": the file name is 256 bytes, more than the 255"),
              std::string::npos);
}

TEST_F(FileIo, GivenOutputsOverAnInputOrEachOther_WhenChecked_ThenRefusedNamingBoth) {
    std::ofstream(dir / "w.st") << "w";
    fs::create_symlink(dir / "w.st", dir / "link.st");
    fs::create_hard_link(dir / "w.st", dir / "hard.st");
    const std::vector<NamedFile> inputs{{dir / "w.st", "--weights"}, {"", "--config"}};
    // the same file by another spelling, a symbolic link or a hard link
    for (const fs::path& over : {dir / "w.st", dir / "." / "w.st", dir / "link.st", dir / "hard.st"})
        EXPECT_NE(messageOf([&] {
                      checkOutputsApart(inputs, {{over, "--dump"}});
                  }).find("--dump " + over.string() + " is the file --weights reads (" + (dir / "w.st").string()),
                  std::string::npos)
            << over;
    // two outputs, one not written yet (compared by path)
    EXPECT_NE(messageOf([&] {
                  checkOutputsApart(inputs, {{dir / "t.json", "--trace"}, {"", "--report"}, {dir / "t.json", "--out"}});
              }).find("--out " + (dir / "t.json").string() + " is also where --trace writes"),
              std::string::npos);
    EXPECT_NO_THROW(checkOutputsApart(inputs, {{dir / "t.json", "--trace"}, {dir / "r.html", "--report"}}));
    EXPECT_TRUE(sameFile(dir / "sub" / ".." / "w.st", dir / "w.st"));
    EXPECT_FALSE(sameFile(dir / "a.json", dir / "b.json"));
}

TEST_F(FileIo, GivenTheOutputLocked_WhenASecondLockIsTaken_ThenRefusedNamingTheHolder) {
    const fs::path lock = dir / "s.jsonl.lock";
    {
        const OutputLock first(lock, "--out s.jsonl");
        const std::string m = messageOf([&] { OutputLock second(lock, "--out s.jsonl"); });
        EXPECT_NE(
            m.find("--out s.jsonl: another process is writing it (pid " + std::to_string(::getpid()) + " on host "),
            std::string::npos)
            << m;
    }
    EXPECT_NO_THROW(OutputLock again(lock, "--out s.jsonl")) << "released with its holder";
}

TEST(ShapeBounds, GivenShapesPastTheDocumentedMaxima_ThenValidateNamesKeyAndValue) {
    auto messageOfSets = [](std::vector<std::string> sets) -> std::string {
        Config c;
        try {
            for (const auto& s : sets) applySet(c, s);
            validate(c);
        } catch (const InputError& e) {
            return e.what();
        }
        return "(accepted)";
    };
    EXPECT_NE(messageOfSets({"hidden=1073741792"}).find("hidden = 1073741792: must be at most 65536"),
              std::string::npos);
    EXPECT_NE(messageOfSets({"experts=400000000", "cards=1"}).find("experts = 400000000: must be at most 65536"),
              std::string::npos);
    EXPECT_NE(messageOfSets({"hidden=65536", "intermediate=65536", "experts=4096", "cards=1", "card=0"})
                  .find("one card's 4096 experts need"),
              std::string::npos);
    EXPECT_NE(messageOfSets({"hidden=!!str 128"}).find("hidden: \"128\" is tagged !!str, a string"), std::string::npos);
    EXPECT_EQ(messageOfSets({"hidden=!!int 128"}), "(accepted)");
    Config c;
    EXPECT_THROW(checkFitsMemory(c.shape, 1000, "a 1000-byte device"), InputError);
    EXPECT_NO_THROW(checkFitsMemory(c.shape, 0, "unknown"));
}

}  // namespace
