// The gpt-report page: one self-contained HTML file (inline CSS, SVG drawn here, a small inline
// script for hover values, series toggles and a self-check), loading nothing from the network.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/report/run_data.h"

namespace suite::report {

struct ReportOptions {
  std::string title = "Training runs";
  size_t buckets = 800;  // per series: at most 4 x buckets points drawn (downsample.h)
  std::string generator = "gpt-report";
};

std::string render_report(const std::vector<RunData>& runs, const std::vector<Warning>& warnings,
                          const ReportOptions& options);

}  // namespace suite::report
