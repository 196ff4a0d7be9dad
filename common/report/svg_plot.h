// Plots as SVG text: line plots (axes with round-number ticks, one polyline per series) and
// grouped bar plots. Each series' elements carry the class "r<run>" so that the page's script
// can hide a run everywhere; line plots also return their data as JSON for hover values.
#pragma once

#include <string>
#include <vector>

#include "common/report/downsample.h"

namespace suite::report {

struct LineSeries {
  std::string name;
  int run = 0;                // colour and toggle group
  bool dashed = false;        // validation curves
  std::vector<Point> points;  // finite, sorted by x (already downsampled)
};

enum class XUnit { kPlain, kTokens, kSeconds };

struct LinePlot {
  std::string id, title, x_label, y_label;
  XUnit x_unit = XUnit::kPlain;
  bool log2_y = false;
  std::vector<LineSeries> series;
};

struct Bar {
  std::string label;  // legend/tooltip name, e.g. "max allocated"
  double value = 0;
  double stack_on = 0;  // drawn from this value up (stacked bars); 0: from the axis
  bool light = false;   // the lighter shade of the run's colour
};

struct BarGroup {
  std::string label;  // under the group, e.g. "run-a r0"
  int run = 0;
  std::vector<Bar> bars;  // side by side unless stacked (stack_on > 0 or same slot)
  bool stacked = false;
};

struct BarPlot {
  std::string id, title, y_label;
  std::vector<BarGroup> groups;
};

const char* run_colour(int run);

// SVG markup; `json` gets {"id":..,"frame":[left,top,width,height],"x":[min,max],"y":[min,max],
// "log2":bool,"series":[{"name":..,"run":..,"x":[..],"y":[..]}]} for the page's script.
std::string render_line_plot(const LinePlot& p, std::string* json);
std::string render_bar_plot(const BarPlot& p);

std::string html_escape(const std::string& s);
std::string format_number(double v);  // 3 significant digits, k/M/G/T above 10^4

}  // namespace suite::report
