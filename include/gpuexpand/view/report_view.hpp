#pragma once
// `gpuexpand report`: one run from the state store as a self-contained HTML
// page (inline CSS and SVG, no script, nothing fetched) or as Markdown for
// CI: the summary, a node × phase grid coloured by result, a timeline of
// phases per node, the failures with their reasons, and the acceptance
// checks with their figures as small bar charts. Every text from the store
// is escaped. Tested by text (tests/unit/report_view_test.cpp) and rendered
// by headless Chromium (tests/cli).

#include <string>
#include <vector>

#include "gpuexpand/state/state_store.hpp"

namespace gpuexpand {

struct RunReportData {
  RunRecord run;
  std::vector<PhaseResult> phases;
  std::vector<CheckResult> checks;
  std::vector<NodeOutcome> nodes;
  size_t commands = 0;
  std::vector<std::string> phase_order;
};

std::string run_report_html(const RunReportData& data);
std::string run_report_markdown(const RunReportData& data);

// "2026-12-03T07:00:05Z" -> seconds since the epoch; -1 when it is not that form.
long long rfc3339_seconds(const std::string& text);

}  // namespace gpuexpand
