#include "zp/kernels/package.hpp"

#include "package_data.hpp"
#include "zp/kernels/native_info.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <stdexcept>

namespace zp::kernels {

std::string_view formatName(Format format) noexcept {
    switch (format) {
        case Format::Native: return "native";
        case Format::Spirv: return "spirv";
        case Format::Bundle: return "bundle";
    }
    return "?";
}

std::optional<Format> parseFormat(std::string_view name) noexcept {
    for (Format f : {Format::Native, Format::Spirv, Format::Bundle})
        if (formatName(f) == name) return f;
    return std::nullopt;
}

Package Package::embedded() {
    Package p;
    p.origin_ = "embedded";
    for (std::size_t i = 0; i < detail::kEmbeddedCount; ++i) {
        const auto& e = detail::kEmbedded[i];
        Artifact a;
        a.file = e.file;
        a.format = parseFormat(e.format).value_or(Format::Spirv);
        a.target = e.target;
        a.ipVersions.assign(e.ipVersions, e.ipVersions + e.ipCount);
        a.deviceIds.assign(e.deviceIds, e.deviceIds + e.deviceIdCount);
        a.bytes = std::span<const std::byte>(reinterpret_cast<const std::byte*>(e.bytes), e.size);
        p.artifacts_.push_back(std::move(a));
    }
    return p;
}

Package Package::fromDirectory(const std::filesystem::path& dir) {
    const auto manifestPath = dir / "manifest.txt";
    std::ifstream manifest(manifestPath);
    if (!manifest)
        throw std::runtime_error("ZP_KERNEL_DIR=" + dir.string() +
                                 ": no manifest.txt there (point it at a build's spirv/artifacts directory)");
    Package p;
    p.origin_ = dir.string();
    std::string line;
    while (std::getline(manifest, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> f;
        std::istringstream ls(line);
        for (std::string field; std::getline(ls, field, '\t');) f.push_back(field);
        const auto format = f.size() == 6 ? parseFormat(f[1]) : std::nullopt;
        if (!format) throw std::runtime_error(manifestPath.string() + ": malformed line: " + line);
        std::ifstream in(dir / f[5], std::ios::binary);
        if (!in) throw std::runtime_error(manifestPath.string() + ": cannot read " + (dir / f[5]).string());
        auto bytes = std::make_shared<std::vector<std::byte>>();
        const std::string raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        bytes->resize(raw.size());
        std::transform(raw.begin(), raw.end(), bytes->begin(),
                       [](char c) { return std::byte(static_cast<unsigned char>(c)); });
        Artifact a;
        a.file = f[0];
        a.format = *format;
        a.target = f[2];
        if (f[3] != "-") {
            std::istringstream ips(f[3]);
            for (std::string ip; std::getline(ips, ip, ',');)
                a.ipVersions.push_back(static_cast<std::uint32_t>(std::stoul(ip)));
        }
        if (f[4] != "-") {
            std::istringstream ids(f[4]);
            for (std::string id; std::getline(ids, id, ',');)
                a.deviceIds.push_back(static_cast<std::uint32_t>(std::stoul(id, nullptr, 16)));
        }
        a.bytes = std::span<const std::byte>(*bytes);
        p.storage_.push_back(std::move(bytes));
        p.artifacts_.push_back(std::move(a));
    }
    return p;
}

const Package& Package::instance() {
    static const Package package = [] {
        const char* dir = std::getenv("ZP_KERNEL_DIR");
        return dir && *dir ? fromDirectory(dir) : embedded();
    }();
    return package;
}

std::vector<std::string> Package::kernelFiles() const {
    std::set<std::string> s;
    for (const auto& a : artifacts_) s.insert(a.file);
    return {s.begin(), s.end()};
}

std::vector<std::string> Package::nativeTargets() const {
    std::set<std::string> s;
    for (const auto& a : artifacts_)
        if (a.format == Format::Native) s.insert(a.target);
    return {s.begin(), s.end()};
}

const Artifact* Package::find(std::string_view file, Format format, std::string_view target) const {
    for (const auto& a : artifacts_)
        if (a.file == file && a.format == format && (target.empty() || a.target == target)) return &a;
    return nullptr;
}

const Artifact* Package::findNative(std::string_view file, std::uint32_t ip) const {
    const Artifact* family = nullptr;
    for (const auto& a : artifacts_) {
        if (a.file != file || a.format != Format::Native) continue;
        for (std::uint32_t v : a.ipVersions) {
            if (v == ip) return &a;
            if (!family && (v >> 14) == (ip >> 14)) family = &a;
        }
    }
    return family;
}

const Artifact* Package::findNativeByDeviceId(std::string_view file, std::uint32_t deviceId) const {
    for (const auto& a : artifacts_)
        if (a.file == file && a.format == Format::Native &&
            std::find(a.deviceIds.begin(), a.deviceIds.end(), deviceId) != a.deviceIds.end())
            return &a;
    return nullptr;
}

std::string describeNativeBinaries(const Package& package) {
    std::ostringstream out;
    out << "kernel package (" << package.origin() << "): native binaries, figures from each binary's own metadata\n";
    if (package.nativeTargets().empty()) out << "  none (built without ocloc): Intel devices get SPIR-V\n";
    char line[256];
    for (const auto& target : package.nativeTargets()) {
        std::snprintf(line, sizeof line, "  %-8s %-30s %-30s %5s %8s %12s %10s %10s\n", target.c_str(), "kernel file",
                      "kernel", "SIMD", "GRF", "instructions", "spill B", "private B");
        out << line;
        for (const auto& a : package.artifacts()) {
            if (a.format != Format::Native || a.target != target) continue;
            try {
                const auto info = inspectNativeBinary(a.bytes);
                for (const auto& k : info.kernels) {
                    std::snprintf(line, sizeof line, "  %-8s %-30s %-30s %5u %8u %12u %10u %10u\n", "", a.file.c_str(),
                                  k.name.c_str(), k.simdSize, k.grfCount, k.instructions, k.spillBytes, k.privateBytes);
                    out << line;
                }
            } catch (const std::exception& e) {
                out << "           " << a.file << ": " << e.what() << "\n";
            }
        }
    }
    return out.str();
}

}  // namespace zp::kernels
