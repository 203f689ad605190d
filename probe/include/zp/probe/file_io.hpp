// Bounded reads of user files and checks of output paths, shared by ze-probe and moe-server.
// Every failure is an InputError naming the path and the option it came from (exit code 2).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zp/probe/input_error.hpp"

namespace zp::probe {

// The largest text file (config, sweep) read: real ones are a few KB; a bigger one is a mistake
// (or /dev/zero behind a symlink) and is refused before it is read.
inline constexpr std::size_t kMaxTextFileBytes = 1u << 20;

// The whole file, refused unless it is a regular file (a FIFO, a device such as /dev/zero, a
// directory or a socket is named as such) of at most maxBytes bytes. A FIFO is opened without
// blocking, so a FIFO with no writer does not hang the caller. `what` says what the file is
// for in the message: "<path>: cannot read <what>: ...".
std::string readTextFile(const std::filesystem::path& path, std::string_view what,
                         std::size_t maxBytes = kMaxTextFileBytes);

// Result files ze-probe reads back (card<N>.json, step.json, a sweep's plan file): a few MB at
// most (a 100,000-point plan is ~6 MB).
inline constexpr std::size_t kMaxJsonFileBytes = std::size_t(64) << 20;
// A sweep's JSONL: 100,000 points of a few KB each.
inline constexpr std::size_t kMaxSweepRowsBytes = std::size_t(1) << 30;

// The deepest nesting of arrays and objects a result file may have: ze-probe's own nest at most
// 8 levels. Deeper is refused while parsing: a copy or dump of nlohmann's JSON recurses once per
// level, and 64 MiB of '[' overflowed the stack.
inline constexpr int kMaxJsonDepth = 64;

// A parser callback for nlohmann::json::parse that throws InputError("<where>: JSON nested
// deeper than kMaxJsonDepth levels: not a <what> ze-probe wrote") at the first array or object
// past that depth; every other event is kept.
nlohmann::json::parser_callback_t jsonDepthLimit(std::string where, std::string what);

// readTextFile, then one JSON document of at most kMaxJsonDepth levels: "<path>: cannot read
// <what>: ...", "<path>: not JSON: ..." or "<path>: JSON nested deeper than ...".
nlohmann::json readJsonFile(const std::filesystem::path& path, std::string_view what,
                            std::size_t maxBytes = kMaxJsonFileBytes);

// Refuses a file or directory named twice among `paths` (sameFile, below: "d", "d/", "./d", a
// link to it): "<what>: <a> and <b> are the same <kind>: give each once". Paths that do not
// exist are left to the caller's own checks.
void refuseRepeatedPaths(const std::vector<std::filesystem::path>& paths, std::string_view what);

// "a FIFO", "a directory", "a character device", ...: what a non-regular file is, for messages.
std::string fileKindName(const std::filesystem::path& path);

// An output file `option` will write later (--trace FILE): fails now, before any device work,
// when the path is a directory, when its parent is not a directory, or when the directory it
// would be created in is not writable.
void checkOutputFile(const std::filesystem::path& path, std::string_view option);
// A file as an option names it, for the checks between files.
struct NamedFile {
    std::filesystem::path path;
    std::string option;  // "--weights", "--out" (a file the run writes there), ...
};

// Whether two names are one file: the same file once both exist (hard and symbolic links
// included), else the same absolute path with its existing part's links resolved.
bool sameFile(const std::filesystem::path& a, const std::filesystem::path& b);

// Refuses an output that would overwrite one of the inputs or that another output also writes
// (--dump over --weights, --trace over the card --out writes): the InputError names both options
// and the path. Empty paths (an option not given) are skipped.
void checkOutputsApart(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs);

// An output directory (--out DIR): must be a writable directory, or creatable in one.
void checkOutputDir(const std::filesystem::path& path, std::string_view option);

// Writes `bytes` to `path` through a temporary file in the same directory (".<name>.tmp.<pid>.<n>",
// <name> cut so that it fits NAME_MAX) that is renamed into place; on any failure the temporary file is removed and an
// InputError names the path and the option. Creates missing parent directories.
void writeFileAtomically(const std::filesystem::path& path, std::string_view bytes, std::string_view option);

// An exclusive lock (flock) on `lockFile`, held while the object lives, so two processes never
// write one output at once (two sweeps into one --out, a --resume while the first still runs).
// The file records the holder ("pid 1234 on host h"); when another process holds it, the
// constructor throws an InputError naming `what`, the lock file and that holder. The lock goes
// with the process, so a killed run never leaves a stale lock (the file stays, unlocked).
class OutputLock {
public:
    OutputLock(const std::filesystem::path& lockFile, std::string_view what);
    ~OutputLock();
    OutputLock(const OutputLock&) = delete;
    OutputLock& operator=(const OutputLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace zp::probe
