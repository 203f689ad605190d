// zp-kernel-pack: build-time packaging of kernels_cl for the kernel package.
//
//   zp-kernel-pack bundle --source F.cl --include-dir DIR --options "OPTS" --out F.zeclsrc
//       A zecl source bundle (driver/include/zecl/source_bundle.h, the one definition of the
//       format, shared with the driver). zecl builds from a single source string, so every
//       #include "..." is inlined (recursively, with #line markers so build logs name the
//       original file and line).
//   zp-kernel-pack embed --manifest DIR/manifest.txt --out package_data.cpp
//       The source of zp_kernel_package's data: the artifacts listed in the manifest, assembled
//       from their files (.incbin), and the table that describes them.
//   zp-kernel-pack inspect --binary F.bin --file STEM --target DEV --out rows.md
//       The kernel report's rows for one native binary: per kernel SIMD width, GRF count,
//       instructions, spill and private bytes per thread, read from the binary's own metadata
//       (zp/kernels/native_info.hpp). Prints "spill=N private=M" (the largest per-thread
//       figures of its kernels) for ocloc_compile.cmake's large-GRF rule.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "zecl/source_bundle.h"
#include "zp/kernels/native_info.hpp"

namespace fs = std::filesystem;

namespace {

// Only a regular file is opened: a directory reads as empty (a silently empty bundle) and a FIFO
// without a writer blocks the open.
std::string readFile(const fs::path& p) {
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (!fs::exists(st)) throw std::runtime_error("cannot open " + p.string() + ": no such file");
    if (!fs::is_regular_file(st))
        throw std::runtime_error("cannot read " + p.string() + ": " +
                                 (fs::is_directory(st) ? "a directory" : "not a regular file"));
    std::ifstream f(p, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + p.string());
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

void writeFile(const fs::path& p, const std::string& bytes) {
    std::error_code ec;
    if (const auto st = fs::status(p, ec); fs::exists(st) && !fs::is_regular_file(st))
        throw std::runtime_error("cannot write " + p.string() + ": " +
                                 (fs::is_directory(st) ? "a directory" : "not a regular file"));
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + p.string());
}

// `display` is the name #line reports: the path relative to the include dir.
std::string inlineIncludes(const fs::path& file, const std::string& display, const fs::path& includeDir, int depth) {
    if (depth > 32) throw std::runtime_error("#include nesting deeper than 32 at " + file.string());
    std::istringstream in(readFile(file));
    std::string out, line;
    int lineNo = 0;
    out += "#line 1 \"" + display + "\"\n";
    while (std::getline(in, line)) {
        ++lineNo;
        std::size_t p = line.find_first_not_of(" \t");
        if (p != std::string::npos && line.compare(p, 1, "#") == 0) {
            std::size_t q = line.find_first_not_of(" \t", p + 1);
            if (q != std::string::npos && line.compare(q, 7, "include") == 0) {
                const std::size_t open = line.find('"', q + 7);
                const std::size_t close = open == std::string::npos ? open : line.find('"', open + 1);
                if (open != std::string::npos && close != std::string::npos) {
                    const std::string name = line.substr(open + 1, close - open - 1);
                    fs::path target = file.parent_path() / name;
                    std::string shown = (fs::path(display).parent_path() / name).lexically_normal().string();
                    if (!fs::exists(target)) {
                        target = includeDir / name;
                        shown = fs::path(name).lexically_normal().string();
                    }
                    if (!fs::exists(target))
                        throw std::runtime_error(file.string() + ":" + std::to_string(lineNo) + ": cannot find \"" +
                                                 name + "\"");
                    out += inlineIncludes(target, shown, includeDir, depth + 1);
                    out += "#line " + std::to_string(lineNo + 1) + " \"" + display + "\"\n";
                    continue;
                }
            }
        }
        out += line;
        out += '\n';
    }
    return out;
}

int bundle(const std::map<std::string, std::string>& args) {
    const fs::path source = args.at("--source");
    const fs::path includeDir = args.count("--include-dir") ? fs::path(args.at("--include-dir")) : source.parent_path();
    const std::string options = args.count("--options") ? args.at("--options") : "";
    const std::string text = inlineIncludes(source, source.filename().string(), includeDir, 0);
    const std::vector<std::uint8_t> out = zecl::makeSourceBundle(options, text);
    writeFile(args.at("--out"), std::string(out.begin(), out.end()));
    return 0;
}

// A C string literal (also an assembler string operand): `"` and `\` escaped, newlines as \n.
std::string cString(const std::string& s) {
    std::string r = "\"";
    for (char c : s) {
        if (c == '\n') {
            r += "\\n";
            continue;
        }
        if (c == '"' || c == '\\') r += '\\';
        r += c;
    }
    return r + "\"";
}

// FNV-1a (64 bit) of an artifact: written beside its .incbin line, so that the generated file
// changes whenever an artifact's bytes do.
std::uint64_t fnv1a(const std::string& bytes) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

// manifest.txt: one artifact a line, tab-separated: file, format, target, ip versions
// (comma-separated decimal, or "-"), PCI device ids (comma-separated, 0x hex, or "-"), path
// relative to the manifest's directory. The bytes are assembled from the artifact files
// themselves (.incbin, by absolute path), not spelled out as C++ initializers: compiling 11 MB
// of array initializers took gcc 20 s and clang with ASan longer, the assembler takes well
// under a second. The tables that describe them are C++.
int embed(const std::map<std::string, std::string>& args) {
    const fs::path manifest = args.at("--manifest");
    std::istringstream in(readFile(manifest));
    std::ostringstream symbols, data, ids, table;
    data << "__asm__(\".pushsection .rodata\\n\"\n";
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> f;
        std::istringstream ls(line);
        for (std::string field; std::getline(ls, field, '\t');) f.push_back(field);
        if (f.size() != 6) throw std::runtime_error(manifest.string() + ": malformed line: " + line);
        const fs::path file = fs::absolute(manifest.parent_path() / f[5]).lexically_normal();
        const std::string bytes = readFile(file);
        const std::string sym = "zp_kernel_artifact_" + std::to_string(n);
        char hash[17];
        std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a(bytes)));
        data << "        // " << f[5] << ": " << bytes.size() << " bytes, FNV-1a " << hash << "\n"
             << "        " << cString(".globl " + sym + "\n.hidden " + sym + "\n.balign 16\n" + sym + ":\n") << "\n"
             << "        " << cString(".incbin " + cString(file.string()) + "\n") << "\n";
        symbols << "extern \"C\" __attribute__((visibility(\"hidden\"))) const unsigned char " << sym << "[];\n";
        // Checked here: a bad number would otherwise surface as a compile error of the generated C++.
        auto numbers = [&](const std::string& list, int base, const char* what) {
            std::vector<std::uint32_t> out;
            if (list == "-") return out;
            std::istringstream items(list + ",");
            for (std::string item; std::getline(items, item, ',');) {
                const std::string digits = base == 16 && item.rfind("0x", 0) == 0 ? item.substr(2) : item;
                const char* valid = base == 16 ? "0123456789abcdefABCDEF" : "0123456789";
                if (digits.empty() || digits.size() > 10 || digits.find_first_not_of(valid) != std::string::npos ||
                    std::stoull(digits, nullptr, base) > 0xffffffffull)
                    throw std::runtime_error(manifest.string() + ": " + what + " '" + item + "' in line: " + line);
                out.push_back(static_cast<std::uint32_t>(std::stoull(digits, nullptr, base)));
            }
            return out;
        };
        ids << "const std::uint32_t ip" << n << "[] = {";
        for (std::uint32_t ip : numbers(f[3], 10, "ip version")) ids << ip << "u,";
        ids << "0u};\n";
        ids << "const std::uint32_t id" << n << "[] = {";
        for (std::uint32_t id : numbers(f[4], 16, "PCI device id")) ids << id << "u,";
        ids << "0u};\n";
        auto count = [](const std::string& list) {
            return list == "-" ? 0 : static_cast<std::size_t>(std::count(list.begin(), list.end(), ',') + 1);
        };
        table << "    {" << cString(f[0]) << ", " << cString(f[1]) << ", " << cString(f[2]) << ", ip" << n << ", "
              << count(f[3]) << ", id" << n << ", " << count(f[4]) << ", " << sym << ", " << bytes.size() << "},\n";
        ++n;
    }
    data << "        \".popsection\\n\");\n";
    std::ostringstream cpp;
    cpp << "// Generated by zp-kernel-pack embed from " << manifest.filename().string() << ". Do not edit.\n"
        << "#include \"package_data.hpp\"\n\n"
        << data.str() << "\n"
        << symbols.str() << "\nnamespace zp::kernels::detail {\nnamespace {\n"
        << ids.str() << "}  // namespace\n\nconst EmbeddedArtifact kEmbedded[] = {\n"
        << table.str()
        << "    {nullptr, nullptr, nullptr, nullptr, 0, nullptr, 0, nullptr, 0}};\nconst std::size_t kEmbeddedCount = "
        << n << ";\n\n}  // namespace zp::kernels::detail\n";
    writeFile(args.at("--out"), cpp.str());
    return 0;
}

int inspect(const std::map<std::string, std::string>& args) {
    const std::string bytes = readFile(args.at("--binary"));
    const auto info = zp::kernels::inspectNativeBinary(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
    if (info.kernels.empty()) throw std::runtime_error(args.at("--binary") + ": no kernels in the binary");
    std::string rows;
    std::uint32_t spill = 0, priv = 0;
    for (const auto& k : info.kernels) {
        spill = std::max(spill, k.spillBytes);
        priv = std::max(priv, k.privateBytes);
        const auto grf =
            k.grfCount == 0 ? std::string("?") : std::to_string(k.grfCount) + (k.grfCount > 128 ? " (large)" : "");
        rows += "| " + args.at("--file") + " | " + args.at("--target") + " | " + k.name + " | " + info.format + " " +
                info.version + " | " + std::to_string(bytes.size()) + " | " + std::to_string(k.simdSize) + " | " + grf +
                " | " + std::to_string(k.instructions) + " | " + std::to_string(k.spillBytes) + " | " +
                std::to_string(k.privateBytes) + " |\n";
    }
    writeFile(args.at("--out"), rows);
    std::printf("spill=%u private=%u\n", spill, priv);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc < 2) throw std::runtime_error("usage: zp-kernel-pack bundle|embed|inspect --key value ...");
        const std::string cmd = argv[1];
        std::map<std::string, std::string> args;
        for (int i = 2; i + 1 < argc; i += 2) args[argv[i]] = argv[i + 1];
        if ((argc - 2) % 2) throw std::runtime_error(std::string("missing value after ") + argv[argc - 1]);
        const std::map<std::string, std::vector<std::string>> known = {
            {"bundle", {"--source", "--include-dir", "--options", "--out"}},
            {"embed", {"--manifest", "--out"}},
            {"inspect", {"--binary", "--file", "--target", "--out"}}};
        if (const auto k = known.find(cmd); k != known.end())
            for (const auto& [key, value] : args)
                if (std::find(k->second.begin(), k->second.end(), key) == k->second.end())
                    throw std::runtime_error("unknown option '" + key + "' for " + cmd);
        if (cmd == "bundle") return bundle(args);
        if (cmd == "embed") return embed(args);
        if (cmd == "inspect") return inspect(args);
        throw std::runtime_error("unknown command '" + cmd + "' (expected bundle, embed or inspect)");
    } catch (const std::out_of_range&) {
        std::fprintf(stderr,
                     "zp-kernel-pack: a required option is missing (bundle: --source --out; embed: --manifest --out; "
                     "inspect: --binary --file --target --out)\n");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "zp-kernel-pack: %s\n", e.what());  // every failure is its input's
        return 2;
    }
}
