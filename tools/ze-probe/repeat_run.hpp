// --gate-repeat N: the same ze-probe run N times, each in a fresh process (a new context,
// new allocations, kernels loaded again: what a user rerunning the tool gets), then the
// cards' gates side by side (zp/probe/gate_repeat.hpp): per candidate the verdicts of every
// run, per candidate and pattern the spread of the medians and how often one run's median
// lies in another's CI. Run i writes under <out>/repeat-<i>/ (its cards and ze-probe.log).
#pragma once

#include <string>
#include <vector>

namespace zp::app {

// `args`: the command line after argv[0]; --gate-repeat, --out, --report and --trace are
// taken out and set per run. Returns the worst exit code of the runs (0, 1 = a case failed,
// 2, 3), and prints the table; `reportFile` (may be empty) gets it as HTML or SVG.
int runGateRepeat(const std::vector<std::string>& args, int runs, const std::string& outDir,
                  const std::string& reportFile);

// `ze-probe gate-repeat-merge DIR...`: the same table from run directories already made
// (e.g. the repeat-<i>/ of several --gate-repeat calls that each fitted a time limit), each
// holding the card<N>.json of one run. Writes <outDir>/gate_repeat.json; returns 0.
int mergeGateRepeats(const std::vector<std::string>& runDirs, const std::string& outDir, const std::string& reportFile);

}  // namespace zp::app
