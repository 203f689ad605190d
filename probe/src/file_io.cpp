#include "zp/probe/file_io.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

namespace zp::probe {
namespace fs = std::filesystem;

namespace {

std::string kindOfMode(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISREG(m)) return "a regular file";
    return "not a regular file";
}

// Closes the descriptor on every path out of a function.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

std::string errnoText(int err) { return std::strerror(err); }

// The nearest existing ancestor of `dir` (itself included): where create_directories starts.
fs::path nearestExisting(fs::path dir) {
    std::error_code ec;
    if (dir.empty()) dir = ".";
    while (!fs::exists(fs::symlink_status(dir, ec)) && dir.has_relative_path() && dir != dir.parent_path())
        dir = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
    return dir;
}

// One try of checkDirectoryUsable: "" when `dir` can hold new files, else what failed and, in
// *vanished, whether a directory the try relied on disappeared meanwhile (ENOENT: another
// process's check removing a directory it had made as this one found it there).
std::string tryDirectoryUsable(const fs::path& dir, const std::string& head, bool* vanished) {
    *vanished = false;
    const fs::path at = nearestExisting(dir);
    std::error_code ec;
    const fs::file_status st = fs::status(at, ec);
    if (ec || !fs::exists(st)) {
        const std::string failed =
            head + at.string() + ": cannot be read: " + (ec ? ec.message() : std::string("does not exist"));
        if (ec && ec != std::errc::no_such_file_or_directory) throw InputError(failed);
        *vanished = true;  // it existed a moment ago
        return failed;
    }
    if (!fs::is_directory(st)) throw InputError(head + at.string() + " is " + fileKindName(at) + ", not a directory");
    std::vector<fs::path> missing;  // outermost last
    for (fs::path d = dir.empty() ? fs::path(".") : dir; d != at && !d.empty(); d = d.parent_path()) {
        if (d.filename() == "." || d.filename().empty()) continue;
        missing.push_back(d);
    }
    std::vector<fs::path> made;
    // Removes what this try made; a directory another check is using meanwhile stays (rmdir
    // refuses a directory with its probe file in it), for that run to use.
    auto undo = [&] {
        for (auto it = made.rbegin(); it != made.rend(); ++it) ::rmdir(it->c_str());
    };
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (::mkdir(it->c_str(), 0755) != 0) {
            const int err = errno;
            // One look at what is there now: a directory ("x/.." once x is made, or another
            // check's), or nothing (it went after mkdir saw it).
            const fs::file_status now = err == EEXIST ? fs::status(*it, ec) : fs::file_status{};
            if (err == EEXIST && fs::is_directory(now)) continue;
            undo();
            *vanished = err == ENOENT || (err == EEXIST && !fs::exists(now));  // ENOENT: a parent went
            return head + "cannot create directory " + it->string() + ": " + errnoText(err);
        }
        made.push_back(*it);
    }
    const fs::path where = missing.empty() ? at : missing.front();
    static std::atomic<unsigned> counter{0};
    const fs::path probe = where / (".zp-write-check." + std::to_string(::getpid()) + "." + std::to_string(counter++));
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int err = errno;
        undo();
        *vanished = err == ENOENT;
        return head + "directory " + where.string() + " is not writable: " + errnoText(err);
    }
    ::close(fd);
    ::unlink(probe.c_str());
    undo();
    return "";
}

// Whether `dir` can hold new files, found by doing it: the missing directories are made, a
// file is created in the last one and every trace is removed again. access(2) alone says yes
// to root under /proc or on a read-only mount, where mkdir and open then fail. Two runs checking
// the same missing directory at once each make and remove it: a try that loses its directory
// to the other's removal is tried again (a bounded number of times), so neither fails for it
// (and the directory may then stay, empty, for the runs that are about to write into it).
void checkDirectoryUsable(const fs::path& dir, const fs::path& named, std::string_view option) {
    const std::string head = std::string(option) + " " + named.string() + ": ";
    constexpr int kTries = 64;
    std::string failed;
    for (int t = 0; t < kTries; ++t) {
        bool vanished = false;
        failed = tryDirectoryUsable(dir, head, &vanished);
        if (failed.empty()) return;
        if (!vanished) break;
    }
    throw InputError(failed);
}

}  // namespace

std::string fileKindName(const fs::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return "missing";
    return kindOfMode(st.st_mode);
}

std::string readTextFile(const fs::path& path, std::string_view what, std::size_t maxBytes) {
    const std::string name = path.string();
    auto fail = [&](const std::string& why) -> std::string {
        throw InputError(name + ": cannot read " + std::string(what) + ": " + why);
    };
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
    if (f.fd < 0) return fail(errnoText(errno));
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) return fail(errnoText(errno));
    if (!S_ISREG(st.st_mode)) return fail(kindOfMode(st.st_mode) + ", not a regular file");
    if (std::uint64_t(st.st_size) > maxBytes)
        return fail(std::to_string(st.st_size) + " bytes, more than the " + std::to_string(maxBytes) +
                    "-byte limit for a " + std::string(what) + " file");
    std::string text;
    text.resize(std::size_t(st.st_size));
    std::size_t got = 0;
    // Read one byte past the size seen, so a file growing while read is still capped.
    while (true) {
        if (got == text.size()) {
            if (text.size() > maxBytes) return fail("grew past the " + std::to_string(maxBytes) + "-byte limit");
            text.resize(text.size() + 1);
        }
        const ssize_t n = ::read(f.fd, text.data() + got, text.size() - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(errnoText(errno));
        }
        if (n == 0) break;
        got += std::size_t(n);
    }
    text.resize(got);
    return text;
}

bool sameFile(const fs::path& a, const fs::path& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) {
        const bool same = fs::equivalent(a, b, ec);
        if (!ec) return same;
    }
    const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
    const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
    return ca.lexically_normal() == cb.lexically_normal();
}

void checkOutputsApart(const std::vector<NamedFile>& inputs, const std::vector<NamedFile>& outputs) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const NamedFile& out = outputs[i];
        if (out.path.empty()) continue;
        for (const NamedFile& in : inputs)
            if (!in.path.empty() && sameFile(in.path, out.path))
                throw InputError(out.option + " " + out.path.string() + " is the file " + in.option + " reads (" +
                                 in.path.string() + "): the run would overwrite its own input; give another path");
        for (std::size_t j = 0; j < i; ++j)
            if (!outputs[j].path.empty() && sameFile(outputs[j].path, out.path))
                throw InputError(out.option + " " + out.path.string() + " is also where " + outputs[j].option +
                                 " writes (" + outputs[j].path.string() +
                                 "): one would overwrite the other; give each output its own path");
    }
}

nlohmann::json::parser_callback_t jsonDepthLimit(std::string where, std::string what) {
    return [where = std::move(where), what = std::move(what)](int depth, nlohmann::json::parse_event_t event,
                                                              const nlohmann::json&) {
        using E = nlohmann::json::parse_event_t;
        if ((event == E::object_start || event == E::array_start) && depth >= kMaxJsonDepth)
            throw InputError(where + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels: not a " +
                             what + " ze-probe wrote");
        return true;
    };
}

nlohmann::json readJsonFile(const fs::path& path, std::string_view what, std::size_t maxBytes) {
    const std::string text = readTextFile(path, what, maxBytes);
    try {
        return nlohmann::json::parse(text, jsonDepthLimit(path.string(), std::string(what)));
    } catch (const nlohmann::json::exception& e) {
        throw InputError(path.string() + ": not JSON: " + e.what());
    }
}

void refuseRepeatedPaths(const std::vector<fs::path>& paths, std::string_view what) {
    std::error_code ec;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        if (!fs::exists(paths[i], ec)) continue;
        for (std::size_t j = 0; j < i; ++j)
            if (fs::exists(paths[j], ec) && sameFile(paths[j], paths[i]))
                throw InputError(std::string(what) + ": " + paths[j].string() + " and " + paths[i].string() +
                                 " are the same " + (fs::is_directory(paths[i], ec) ? "directory" : "file") +
                                 ": give each once");
    }
}

void checkOutputFile(const fs::path& path, std::string_view option) {
    if (path.empty()) throw InputError(std::string(option) + ": empty path");
    const std::string name = path.filename().string();
    const long nameMax =
        ::pathconf(path.parent_path().empty() ? "." : nearestExisting(path.parent_path()).c_str(), _PC_NAME_MAX);
    if (name.size() > std::size_t(nameMax > 0 ? nameMax : NAME_MAX))
        throw InputError(std::string(option) + " " + path.string() + ": the file name is " +
                         std::to_string(name.size()) + " bytes, more than the " +
                         std::to_string(nameMax > 0 ? nameMax : NAME_MAX) + " the file system allows");
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (fs::is_directory(st))
        throw InputError(std::string(option) + " " + path.string() + ": is a directory; give a file name");
    // The file is replaced by a rename: never over a device, FIFO or socket (/dev/null, /dev/full).
    if (fs::exists(st) && !fs::is_regular_file(st))
        throw InputError(std::string(option) + " " + path.string() + ": is " + fileKindName(path) +
                         "; give a regular file name");
    if (fs::exists(st) && ::access(path.c_str(), W_OK) != 0)
        throw InputError(std::string(option) + " " + path.string() + ": not writable: " + errnoText(errno));
    checkDirectoryUsable(path.parent_path(), path, option);
}

void checkOutputDir(const fs::path& path, std::string_view option) {
    if (path.empty()) throw InputError(std::string(option) + ": empty path");
    checkDirectoryUsable(path, path, option);
}

void writeFileAtomically(const fs::path& path, std::string_view bytes, std::string_view option) {
    const std::string named = std::string(option) + " " + path.string();
    checkOutputFile(path, option);
    std::error_code ec;
    if (!path.parent_path().empty()) fs::create_directories(path.parent_path(), ec);
    if (ec) throw InputError(named + ": cannot create directory " + path.parent_path().string() + ": " + ec.message());
    static std::atomic<unsigned> counter{0};
    // ".<name>.tmp.<pid>.<n>" with <name> cut so that the whole fits NAME_MAX (255) whatever the
    // file's own name, which checkOutputFile held to that limit.
    const std::string suffix = ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const std::string name = path.filename().string();
    const fs::path tmp =
        path.parent_path() /
        ("." + name.substr(0, std::min(name.size(), std::size_t(NAME_MAX) - 1 - suffix.size())) + suffix);
    auto failRemoving = [&](const std::string& why) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        throw InputError(named + ": " + why);
    };
    {
        Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
        if (f.fd < 0) throw InputError(named + ": cannot create " + tmp.string() + ": " + errnoText(errno));
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) failRemoving("write failed: " + errnoText(errno));
            done += std::size_t(n);
        }
        const int closed = ::close(f.fd);
        f.fd = -1;
        if (closed != 0) failRemoving("write failed: " + errnoText(errno));
    }
    fs::rename(tmp, path, ec);
    if (ec) failRemoving("cannot rename " + tmp.string() + " into place: " + ec.message());
}

OutputLock::OutputLock(const fs::path& lockFile, std::string_view what) {
    const std::string name = lockFile.string();
    std::error_code ec;
    if (!lockFile.parent_path().empty()) fs::create_directories(lockFile.parent_path(), ec);
    fd_ = ::open(lockFile.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) throw InputError(std::string(what) + ": cannot open lock file " + name + ": " + errnoText(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        std::string holder(256, '\0');
        const ssize_t n = ::pread(fd_, holder.data(), holder.size(), 0);
        holder.resize(n > 0 ? std::size_t(n) : 0);
        while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
        ::close(fd_);
        fd_ = -1;
        if (err != EWOULDBLOCK) throw InputError(std::string(what) + ": cannot lock " + name + ": " + errnoText(err));
        throw InputError(std::string(what) + ": another process is writing it (" +
                         (holder.empty() ? std::string("holder unknown") : holder) + ", lock " + name +
                         "): wait for it to finish or write to another --out");
    }
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    const std::string me = "pid " + std::to_string(::getpid()) + " on host " + host + "\n";
    // Only the holder writes the file: a refused process reads who holds it.
    if (::ftruncate(fd_, 0) == 0) (void)::pwrite(fd_, me.data(), me.size(), 0);
}

OutputLock::~OutputLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace zp::probe
