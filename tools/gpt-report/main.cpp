// gpt-report: one self-contained HTML page of plots comparing training runs (gpt-train metrics
// files or folders of them, Megatron-LM or gpt-train text logs).
#include <iostream>

#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/io/atomic_file.h"
#include "common/report/html_report.h"
#include "common/report/readers.h"

#ifndef SUITE_VERSION
#define SUITE_VERSION "0.0.0"
#endif

namespace suite {
namespace {

constexpr const char* kDetails =
    "RUN: a gpt-train metrics file (--metrics-file; PATH.rank<r> files beside it add per-rank\n"
    "  memory and pipeline-stage times), a folder of such files, or a text log of Megatron-LM\n"
    "  (lines with or without the [timestamp]) or of gpt-train. Plots: lm loss and validation "
    "loss\n"
    "  against tokens and against training time, learning rate, gradient norm, loss scale, "
    "tokens/s,\n"
    "  MFU, peak memory per rank, and per-stage compute/wait bars when the metrics hold them.\n"
    "  Long runs are thinned for display (each bucket keeps its first, lowest, highest and last\n"
    "  point). Unreadable lines become warnings (stderr and the page); the report is still "
    "written.\n"
    "  The page is one HTML file with inline SVG and script; it loads nothing from the network.\n";

int body(int argc, char** argv) {
  Cli cli(
      {.name = "gpt-report",
       .summary = "Write one HTML page of plots comparing training runs (metrics files, Megatron "
                  "and gpt-train logs).",
       .example =
           "  gpt-report build/demo/metrics.jsonl -o report.html\n"
           "  gpt-report runs/tp2dp2/ megatron-pp4.log ours.log --title 'layouts' -o layouts.html",
       .reads_text = false,
       .details = kDetails});
  cli.options().add_options()("title", po::value<std::string>()->default_value("Training runs"),
                              "page title")(
      "peak-tflops", ranged<double>(0)->default_value(0.0, "none"),
      "peak TFLOP/s of one GPU, to compute MFU from Megatron's TFLOP/s/GPU")(
      "max-points", ranged<size_t>(1)->default_value(3200),
      "at most this many points drawn per curve (thinned beyond)");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);
  const auto& vm = cli.vm();
  if (options.inputs.empty())
    throw UsageError("give at least one RUN (metrics file, folder or log)");
  if (options.output == "-" && !cli.has("output")) throw UsageError("-o report.html is required");
  report::ReportOptions ro;
  ro.title = vm["title"].as<std::string>();
  ro.buckets = std::max<size_t>(1, vm["max-points"].as<size_t>() / 4);
  ro.generator = std::string("gpt-report ") + SUITE_VERSION;
  const double peak = vm["peak-tflops"].as<double>();

  std::vector<report::RunData> runs;
  std::vector<report::Warning> warnings;
  for (const std::string& path : options.inputs) {
    const size_t first = warnings.size();
    auto got = report::load_runs(path, peak, warnings);
    for (auto& r : got) runs.push_back(std::move(r));
    // a garbled file would bury the page in warnings: the first ones say enough
    constexpr size_t kShown = 20;
    if (warnings.size() - first > kShown + 1) {
      const size_t more = warnings.size() - first - kShown;
      warnings.resize(first + kShown);
      warnings.push_back({path, std::to_string(more) + " more warnings not shown"});
    }
  }
  // the same name twice (two runs' metrics.jsonl): the parent folder tells them apart
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t j = i + 1; j < runs.size(); ++j)
      if (runs[j].name == runs[i].name) runs[j].name += " (" + std::to_string(j + 1) + ")";
  for (const auto& w : warnings)
    std::cerr << tool_name() << ": warning: " << w.where << ": " << w.what << "\n";
  const std::string html = report::render_report(runs, warnings, ro);
  if (options.output == "-") {
    std::cout << html;
  } else {
    AtomicFile out(options.output);
    out.write(html.data(), html.size());
    out.commit();
  }
  if (!options.quiet) {
    size_t points = 0;
    for (const auto& r : runs) points += r.train.size();
    std::cerr << tool_name() << ": " << runs.size() << " run(s), " << points
              << " logged intervals, " << warnings.size() << " warning(s) -> " << options.output
              << "\n";
  }
  return kExitOk;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("gpt-report", argc, argv, suite::body); }
