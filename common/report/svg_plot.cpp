#include "common/report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/jsonl/json_writer.h"

namespace suite::report {
namespace {

constexpr double kWidth = 560, kHeight = 300;
constexpr double kLeft = 64, kRight = 14, kTop = 30, kBottom = 44;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// Round-number ticks (1, 2, 5 x 10^k) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target = 6) {
  const double span = hi - lo;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

std::string seconds_label(double s, double max_s) {
  if (max_s >= 7200) return format_number(s / 3600.0) + " h";
  if (max_s >= 120) return format_number(s / 60.0) + " min";
  return format_number(s) + " s";
}

// Scale for the time axis, so that its ticks fall on round numbers of the unit shown.
double seconds_unit(double max_s) { return max_s >= 7200 ? 3600.0 : max_s >= 120 ? 60.0 : 1.0; }

void expand(double& lo, double& hi) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
}

}  // namespace

const char* run_colour(int run) {
  static const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  return kColours[run % 10];
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string format_number(double v) {
  const double a = std::abs(v);
  if (a >= 1e12) return fmt("%.4g", v / 1e12) + "T";
  if (a >= 1e9) return fmt("%.4g", v / 1e9) + "G";
  if (a >= 1e6) return fmt("%.4g", v / 1e6) + "M";
  if (a >= 1e4) return fmt("%.4g", v / 1e3) + "k";
  return fmt("%.4g", v);
}

std::string render_line_plot(const LinePlot& p, std::string* json) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  auto ty = [&](double y) { return p.log2_y ? std::log2(y) : y; };
  for (const auto& s : p.series)
    for (const Point& q : s.points) {
      if (p.log2_y && !(q.y > 0)) continue;
      x0 = std::min(x0, q.x), x1 = std::max(x1, q.x);
      y0 = std::min(y0, ty(q.y)), y1 = std::max(y1, ty(q.y));
    }
  const bool empty = !(x1 >= x0);
  if (empty) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  const double unit = p.x_unit == XUnit::kSeconds ? seconds_unit(x1) : 1.0;
  expand(x0, x1);
  expand(y0, y1);
  if (!p.log2_y) {  // a little air above and below the curves
    const double pad = (y1 - y0) * 0.04;
    y0 -= pad, y1 += pad;
  }
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * kPlotW; };
  auto py = [&](double y) { return kTop + kPlotH - (ty(y) - y0) / (y1 - y0) * kPlotH; };

  std::string s = "<svg class=\"plot\" id=\"" + p.id + "\" viewBox=\"0 0 " + fmt("%.0f", kWidth) +
                  " " + fmt("%.0f", kHeight) + "\" role=\"img\">";
  s += "<text class=\"title\" x=\"" + fmt("%.0f", kLeft) + "\" y=\"18\">" + html_escape(p.title) +
       "</text>";
  s += "<rect class=\"frame\" x=\"" + fmt("%.1f", kLeft) + "\" y=\"" + fmt("%.1f", kTop) +
       "\" width=\"" + fmt("%.1f", kPlotW) + "\" height=\"" + fmt("%.1f", kPlotH) + "\"/>";
  // x ticks
  for (double t : nice_ticks(x0 / unit, x1 / unit)) {
    const double v = t * unit, X = px(v);
    if (X < kLeft - 0.5 || X > kLeft + kPlotW + 0.5) continue;
    const std::string label = p.x_unit == XUnit::kSeconds ? seconds_label(v, x1) : format_number(v);
    s += "<line class=\"grid\" x1=\"" + fmt("%.1f", X) + "\" x2=\"" + fmt("%.1f", X) + "\" y1=\"" +
         fmt("%.1f", kTop) + "\" y2=\"" + fmt("%.1f", kTop + kPlotH) + "\"/>";
    s += "<text class=\"tick\" x=\"" + fmt("%.1f", X) + "\" y=\"" +
         fmt("%.1f", kTop + kPlotH + 14) + "\" text-anchor=\"middle\">" + label + "</text>";
  }
  // y ticks
  std::vector<double> yt;
  if (p.log2_y) {
    const int lo = int(std::ceil(y0)), hi = int(std::floor(y1));
    const int step = std::max(1, (hi - lo + 5) / 6);
    for (int e = lo; e <= hi; e += step) yt.push_back(e);
  } else {
    yt = nice_ticks(y0, y1, 5);
  }
  for (double t : yt) {
    const double Y = kTop + kPlotH - (t - y0) / (y1 - y0) * kPlotH;
    const std::string label = p.log2_y ? "2^" + fmt("%.0f", t) : format_number(t);
    s += "<line class=\"grid\" x1=\"" + fmt("%.1f", kLeft) + "\" x2=\"" +
         fmt("%.1f", kLeft + kPlotW) + "\" y1=\"" + fmt("%.1f", Y) + "\" y2=\"" + fmt("%.1f", Y) +
         "\"/>";
    s += "<text class=\"tick\" x=\"" + fmt("%.1f", kLeft - 5) + "\" y=\"" + fmt("%.1f", Y + 4) +
         "\" text-anchor=\"end\">" + label + "</text>";
  }
  s += "<text class=\"axis\" x=\"" + fmt("%.1f", kLeft + kPlotW / 2) + "\" y=\"" +
       fmt("%.1f", kHeight - 8) + "\" text-anchor=\"middle\">" + html_escape(p.x_label) + "</text>";
  s += "<text class=\"axis\" transform=\"translate(14," + fmt("%.1f", kTop + kPlotH / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(p.y_label) + "</text>";
  if (empty)
    s += "<text class=\"empty\" x=\"" + fmt("%.1f", kLeft + kPlotW / 2) + "\" y=\"" +
         fmt("%.1f", kTop + kPlotH / 2) + "\" text-anchor=\"middle\">no data</text>";

  std::string j = "{\"id\":\"" + p.id + "\",\"title\":";
  append_json_string(j, p.title);
  j += ",\"frame\":[" + fmt("%.1f", kLeft) + "," + fmt("%.1f", kTop) + "," + fmt("%.1f", kPlotW) +
       "," + fmt("%.1f", kPlotH) + "],\"x\":[" + fmt("%.9g", x0) + "," + fmt("%.9g", x1) +
       "],\"y\":[" + fmt("%.9g", y0) + "," + fmt("%.9g", y1) +
       "],\"log2\":" + (p.log2_y ? "true" : "false") + ",\"xunit\":\"" +
       (p.x_unit == XUnit::kSeconds  ? "s"
        : p.x_unit == XUnit::kTokens ? "tokens"
                                     : "") +
       "\",\"series\":[";
  s += "<clipPath id=\"clip-" + p.id + "\"><rect x=\"" + fmt("%.1f", kLeft) + "\" y=\"" +
       fmt("%.1f", kTop - 4) + "\" width=\"" + fmt("%.1f", kPlotW) + "\" height=\"" +
       fmt("%.1f", kPlotH + 8) + "\"/></clipPath><g clip-path=\"url(#clip-" + p.id + ")\">";
  for (size_t k = 0; k < p.series.size(); ++k) {
    const LineSeries& ser = p.series[k];
    std::string pts, xs, ys;
    size_t drawn = 0;
    for (const Point& q : ser.points) {
      if (p.log2_y && !(q.y > 0)) continue;
      pts += fmt("%.1f", px(q.x)) + "," + fmt("%.1f", py(q.y)) + " ";
      xs += (drawn ? "," : "") + fmt("%.9g", q.x);
      ys += (drawn ? "," : "") + fmt("%.9g", q.y);
      ++drawn;
    }
    if (!pts.empty()) pts.pop_back();
    const std::string cls = "r" + std::to_string(ser.run);
    s += "<polyline class=\"series " + cls + (ser.dashed ? " dashed" : "") + "\" data-series=\"" +
         html_escape(ser.name) + "\" stroke=\"" + run_colour(ser.run) + "\" points=\"" + pts +
         "\"/>";
    // markers where the points are few (validation, short runs): a lone point shows at all
    if (drawn <= 60) {
      for (const Point& q : ser.points) {
        if (p.log2_y && !(q.y > 0)) continue;
        s += "<circle class=\"marker " + cls + "\" cx=\"" + fmt("%.1f", px(q.x)) + "\" cy=\"" +
             fmt("%.1f", py(q.y)) + "\" r=\"" + (ser.dashed ? "3" : "1.8") + "\" fill=\"" +
             run_colour(ser.run) + "\"/>";
      }
    }
    j += std::string(k ? "," : "") + "{\"name\":";
    append_json_string(j, ser.name);
    j += ",\"run\":" + std::to_string(ser.run) + ",\"x\":[" + xs + "],\"y\":[" + ys + "]}";
  }
  s += "</g>";
  s += "<line class=\"cross\" x1=\"0\" x2=\"0\" y1=\"" + fmt("%.1f", kTop) + "\" y2=\"" +
       fmt("%.1f", kTop + kPlotH) + "\" visibility=\"hidden\"/>";
  s += "</svg>";
  j += "]}";
  if (json) *json = j;
  return s;
}

std::string render_bar_plot(const BarPlot& p) {
  double top = 0;
  size_t slots = 0;
  for (const auto& g : p.groups) {
    for (const auto& b : g.bars) top = std::max(top, b.stack_on + b.value);
    slots += g.stacked ? 1 : g.bars.size();
  }
  if (top <= 0) top = 1;
  top *= 1.05;
  const double gap = 10;
  const double slot_w =
      slots ? std::min(40.0, (kPlotW - gap * double(p.groups.size() + 1)) / double(slots)) : 10;
  std::string s = "<svg class=\"plot bars\" id=\"" + p.id + "\" viewBox=\"0 0 " +
                  fmt("%.0f", kWidth) + " " + fmt("%.0f", kHeight) + "\" role=\"img\">";
  s += "<text class=\"title\" x=\"" + fmt("%.0f", kLeft) + "\" y=\"18\">" + html_escape(p.title) +
       "</text>";
  s += "<rect class=\"frame\" x=\"" + fmt("%.1f", kLeft) + "\" y=\"" + fmt("%.1f", kTop) +
       "\" width=\"" + fmt("%.1f", kPlotW) + "\" height=\"" + fmt("%.1f", kPlotH) + "\"/>";
  for (double t : nice_ticks(0, top, 5)) {
    const double Y = kTop + kPlotH - t / top * kPlotH;
    s += "<line class=\"grid\" x1=\"" + fmt("%.1f", kLeft) + "\" x2=\"" +
         fmt("%.1f", kLeft + kPlotW) + "\" y1=\"" + fmt("%.1f", Y) + "\" y2=\"" + fmt("%.1f", Y) +
         "\"/>";
    s += "<text class=\"tick\" x=\"" + fmt("%.1f", kLeft - 5) + "\" y=\"" + fmt("%.1f", Y + 4) +
         "\" text-anchor=\"end\">" + format_number(t) + "</text>";
  }
  s += "<text class=\"axis\" transform=\"translate(14," + fmt("%.1f", kTop + kPlotH / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(p.y_label) + "</text>";
  double x = kLeft + gap;
  for (const auto& g : p.groups) {
    const std::string cls = "r" + std::to_string(g.run);
    const double gx = x;
    for (size_t k = 0; k < g.bars.size(); ++k) {
      const Bar& b = g.bars[k];
      const double y_top = kTop + kPlotH - (b.stack_on + b.value) / top * kPlotH;
      const double h = b.value / top * kPlotH;
      s += "<rect class=\"bar " + cls + (b.light ? " light" : "") + "\" x=\"" + fmt("%.1f", x) +
           "\" y=\"" + fmt("%.1f", y_top) + "\" width=\"" + fmt("%.1f", slot_w - 2) +
           "\" height=\"" + fmt("%.1f", h) + "\" fill=\"" + run_colour(g.run) + "\" data-value=\"" +
           fmt("%.6g", b.value) + "\"><title>" +
           html_escape(g.label + " " + b.label + ": " + format_number(b.value) + " " + p.y_label) +
           "</title></rect>";
      if (!g.stacked) x += slot_w;
    }
    if (g.stacked) x += slot_w;
    // labels slanted, so that many groups stay legible
    const double lx = (gx + x) / 2, ly = kTop + kPlotH + 10;
    std::string label = g.label.size() > 22
                            ? g.label.substr(0, 10) + ".." + g.label.substr(g.label.size() - 10)
                            : g.label;
    s += "<text class=\"tick " + cls + "\" transform=\"translate(" + fmt("%.1f", lx) + "," +
         fmt("%.1f", ly) + ") rotate(-20)\" text-anchor=\"end\">" + html_escape(label) + "</text>";
    x += gap;
  }
  s += "</svg>";
  return s;
}

}  // namespace suite::report
