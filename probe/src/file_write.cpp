#include "zp/probe/file_write.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "zp/probe/input_error.hpp"

namespace zp::sched {

void writeFileAtomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
    namespace fs = std::filesystem;
    auto fail = [&](const std::string& what) { throw InputError(path.string() + ": " + what); };
    std::error_code ec;
    if (const fs::path parent = path.parent_path(); !parent.empty()) {
        fs::create_directories(parent, ec);
        if (ec) fail("cannot create the directory " + parent.string() + ": " + ec.message());
    }
    // A name of its own per process and call: two writers of one path never share a temporary.
    static std::atomic<unsigned> counter{0};
    fs::path tmp = path;
    tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    auto removeTmp = [&] {
        std::error_code ignored;
        fs::remove(tmp, ignored);
    };
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) fail("cannot create " + tmp.string() + ": " + std::strerror(errno));
        write(out);
        out.close();
        if (!out) {
            const int err = errno;
            removeTmp();
            fail("writing " + tmp.string() + " failed: " + std::strerror(err));
        }
    }
    fs::rename(tmp, path, ec);
    if (ec) {
        removeTmp();
        fail("cannot rename " + tmp.string() + " into place: " + ec.message());
    }
}

void writeFileAtomically(const std::filesystem::path& path, std::string_view bytes) {
    writeFileAtomically(path, [&](std::ostream& out) { out.write(bytes.data(), std::streamsize(bytes.size())); });
}

}  // namespace zp::sched
