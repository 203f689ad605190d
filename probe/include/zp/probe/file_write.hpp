// The one writer of result files (cards, dumps, traces, reports, port files): written to a
// temporary name beside the target and renamed into place, so a reader, or a run that fails
// part-way, never sees a partial file.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

namespace zp::sched {

// Creates the parent directory, writes through `write` to "<path>.tmp.<pid>.<n>" and renames it
// to `path`; the temporary file is removed on any failure. Throws InputError naming `path`, the
// step that failed and the OS error (a --out that cannot be written is the user's to fix).
void writeFileAtomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);
void writeFileAtomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace zp::sched
