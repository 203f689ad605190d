// The gate as a picture: per candidate one panel of route patterns, each with the projected
// saving's 95% CI as a whisker and its median as a dot, green where the pattern passes and
// red where it fails, a dashed line at gate.min_saving_ms, and the verdict in the panel's
// heading. All panels share one y scale (ms over `layers` layers), so candidates compare
// at a glance. Written as standalone SVG, or as HTML with the SVG inline and the text
// tables under it when the path ends in .html.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "zp/probe/gate.hpp"

namespace zp::probe {

struct ReportInput {
    std::string device;  // in the title, e.g. "Intel(R) Arc(TM) B580 Graphics"
    std::string title = "ze-probe gate: projected saving per route pattern";
    std::vector<sched::CandidateGate> candidates;  // layers and min_saving_ms are taken from the first
};

std::string reportSvg(const ReportInput&);
std::string reportHtml(const ReportInput&);
// .html → reportHtml, anything else → reportSvg. Throws std::runtime_error on I/O errors.
void writeReport(const std::filesystem::path&, const ReportInput&);

}  // namespace zp::probe
