// Kernel timelines as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one named track (thread) per chain variant, one complete ("X")
// event per kernel launch with its case and pattern in args.
//
// Times: spans carry device timestamps in ns; the file's "ts" and "dur" are µs (the format's
// unit) as floats, with ts counted from the earliest span's start. Absolute device ticks
// (~1e18 ns) as µs doubles would lose the nanoseconds; "displayTimeUnit": "ns" makes the
// viewer show ns.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zp::app {

struct TraceSpan {
    std::string track;  // variant name: one named track each, in order of first appearance
    std::string name;   // kernel name
    std::uint64_t startNs = 0, endNs = 0;
    nlohmann::json args = nlohmann::json::object();  // e.g. {"case": "six_local/v3", "pattern": "six_local"}
    std::string category = "kernel";
};

// Throws std::invalid_argument when a span ends before it starts (e.g. an unwrapped
// timestamp counter): the trace would be a lie.
nlohmann::json traceJson(const std::vector<TraceSpan>&, const std::string& processName = "ze-probe");

// Writes traceJson to `path` (through a .tmp and a rename). Throws std::runtime_error on I/O errors.
void writeTrace(const std::filesystem::path&, const std::vector<TraceSpan>&,
                const std::string& processName = "ze-probe");

}  // namespace zp::app
