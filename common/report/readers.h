// Reading runs for gpt-report: gpt-train metrics files (JSON lines), folders of them (one file per
// rank), and text logs of Megatron-LM (current lines with a timestamp, legacy lines without) or of
// gpt-train. Bad lines never stop a read: they become warnings naming the file and line.
#pragma once

#include <string>
#include <vector>

#include "common/report/run_data.h"

namespace suite::report {

// A metrics file into `run`: the config record fills the header, "train" and "validation" records
// the series. With `rank` >= 0 the file is that rank's (memory and stage times only).
void read_metrics_file(const std::string& path, RunData& run, int rank,
                       std::vector<Warning>& warnings);

// A Megatron-LM or gpt-train text log into `run`.
void read_text_log(const std::string& path, RunData& run, std::vector<Warning>& warnings);

// One RUN argument: a metrics file (with its PATH.rank<r> siblings), a folder of metrics files
// (one run per main file, or one run of rank files), or a text log. Throws ToolError when the
// path cannot be read or holds nothing to draw.
std::vector<RunData> load_runs(const std::string& path, double peak_tflops,
                               std::vector<Warning>& warnings);

}  // namespace suite::report
