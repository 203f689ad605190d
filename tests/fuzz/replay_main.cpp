// Runs a fuzz harness over committed inputs without libFuzzer: each argument is a file or a
// directory of files, each file is one call of LLVMFuzzerTestOneInput. A crash, a sanitizer
// report or a failed harness check ends the process non-zero, as under libFuzzer, so any
// compiler and any build (plain, ASan) rechecks the corpus and past crashers.
#include <algorithm>
#include <signal.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

// A hang (yaml-cpp 0.7 loops forever on some inputs, allocating as it goes) must fail fast,
// before it eats the machine's memory, and name the input: libFuzzer's -timeout, here.
constexpr unsigned kSecondsPerInput = 10;
const char* current = "";

void onAlarm(int) {
    const char msg[] = "replay: TIMEOUT: an input ran longer than 10 s: ";
    (void)!::write(2, msg, sizeof msg - 1);
    (void)!::write(2, current, std::strlen(current));
    (void)!::write(2, "\n", 1);
    ::_exit(3);
}

void runOne(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
        std::exit(2);
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // A copy of exactly `size` bytes, so that ASan sees a read past the input as overflow.
    std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
    current = file.c_str();
    ::alarm(kSecondsPerInput);
    LLVMFuzzerTestOneInput(data.data(), data.size());
    ::alarm(0);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    ::signal(SIGALRM, onAlarm);
    std::size_t runs = 0;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path arg(argv[i]);
        std::vector<std::filesystem::path> files;
        if (std::filesystem::is_directory(arg)) {
            for (const auto& e : std::filesystem::directory_iterator(arg))
                if (e.is_regular_file()) files.push_back(e.path());
        } else {
            files.push_back(arg);
        }
        if (files.empty()) {
            std::fprintf(stderr, "replay: no inputs in %s\n", arg.c_str());
            return 2;
        }
        std::sort(files.begin(), files.end());  // a stable order, so a failure names the same file on every run
        for (const auto& f : files) {
            std::fprintf(stderr, "replay: %s\n", f.c_str());
            runOne(f);
            ++runs;
        }
    }
    std::fprintf(stderr, "replay: %zu inputs, all passed\n", runs);
    return 0;
}
