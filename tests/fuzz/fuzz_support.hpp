// Shared by the fuzz harnesses: a property check that fails loudly (libFuzzer then saves the
// input as a crash artifact) and an in-memory file for the readers that only take a path.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

// A harness property (two readers agree, a written file reads back equal) that does not hold.
#define ZP_FUZZ_CHECK(cond, what)                                                                                  \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            std::fprintf(stderr, "fuzz property failed: %s\n  check: %s\n  at %s:%d\n", std::string(what).c_str(), \
                         #cond, __FILE__, __LINE__);                                                               \
            std::abort();                                                                                          \
        }                                                                                                          \
    } while (0)

namespace zp::fuzz {

// One memfd per process, rewritten for each input: readSafetensors and loadInputs take a
// path, and a file on disk would cost a write to the file system on every execution.
class MemFile {
public:
    MemFile() : fd_(::memfd_create("zp-fuzz", 0)) {
        if (fd_ < 0) {
            std::perror("memfd_create");
            std::abort();
        }
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    MemFile(const MemFile&) = delete;
    MemFile& operator=(const MemFile&) = delete;
    ~MemFile() { ::close(fd_); }

    const std::string& write(std::span<const std::uint8_t> bytes) {
        if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, bytes.data(), bytes.size(), 0) != ssize_t(bytes.size())) {
            std::perror("memfd write");
            std::abort();
        }
        return path_;
    }

private:
    int fd_;
    std::string path_;
};

}  // namespace zp::fuzz
