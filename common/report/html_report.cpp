#include "common/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "common/jsonl/json_writer.h"
#include "common/report/svg_plot.h"

namespace suite::report {
namespace {

template <typename P>
std::vector<Point> collect(const std::vector<P>& pts, double P::*x, double P::*y, size_t buckets) {
  std::vector<Point> out;
  out.reserve(pts.size());
  // beyond 1e150 a plot's range (max - min) could overflow: such values are not drawn
  auto drawable = [](double v) { return std::isfinite(v) && std::abs(v) < 1e150; };
  for (const P& p : pts)
    if (drawable(p.*x) && drawable(p.*y)) out.push_back({p.*x, p.*y});
  std::stable_sort(out.begin(), out.end(),
                   [](const Point& a, const Point& b) { return a.x < b.x; });
  return downsample_min_max(out, buckets);
}

LinePlot line_plot(const std::vector<RunData>& runs, const std::string& id,
                   const std::string& title, XUnit unit, double TrainPoint::*y,
                   const std::string& y_label, bool with_valid, size_t buckets) {
  LinePlot p;
  p.id = id;
  p.title = title;
  p.x_unit = unit;
  p.y_label = y_label;
  p.x_label = unit == XUnit::kSeconds ? "training time (sum of iteration times)" : "tokens";
  double TrainPoint::*x = unit == XUnit::kSeconds ? &TrainPoint::seconds : &TrainPoint::tokens;
  double ValidPoint::*vx = unit == XUnit::kSeconds ? &ValidPoint::seconds : &ValidPoint::tokens;
  for (size_t r = 0; r < runs.size(); ++r) {
    auto pts = collect(runs[r].train, x, y, buckets);
    if (!pts.empty())
      p.series.push_back(
          {runs[r].name + (with_valid ? " train" : ""), int(r), false, std::move(pts)});
    if (with_valid) {
      auto v = collect(runs[r].valid, vx, &ValidPoint::lm_loss, buckets);
      if (!v.empty())
        p.series.push_back({runs[r].name + " validation", int(r), true, std::move(v)});
    }
  }
  return p;
}

std::string summary_number(double v, const char* f = "%.4g") {
  if (!std::isfinite(v)) return "";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

double median_of_last_half(const RunData& r, double TrainPoint::*y) {
  std::vector<double> v;
  for (size_t i = r.train.size() / 2; i < r.train.size(); ++i)
    if (std::isfinite(r.train[i].*y)) v.push_back(r.train[i].*y);
  if (v.empty()) return NAN;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

std::string config_table(const std::vector<RunData>& runs) {
  std::vector<std::string> keys;
  for (const auto& r : runs)
    for (const auto& kv : r.config)
      if (std::find(keys.begin(), keys.end(), kv.first) == keys.end()) keys.push_back(kv.first);
  std::string t = "<table class=\"config\"><thead><tr><th></th>";
  for (size_t i = 0; i < runs.size(); ++i)
    t += "<th class=\"legend\"><span class=\"toggle\" data-run=\"" + std::to_string(i) +
         "\" title=\"show or hide this run in every plot\"><i style=\"background:" +
         run_colour(int(i)) + "\"></i>" + html_escape(runs[i].name) + "</span></th>";
  t += "</tr></thead><tbody>";
  auto row = [&](const std::string& key, auto value) {
    t += "<tr><th>" + html_escape(key) + "</th>";
    for (const auto& r : runs) {
      const std::string v = value(r);
      if (key == "command line" && !v.empty())
        t += "<td class=\"cmd\"><div>" + html_escape(v) + "</div></td>";
      else
        t += "<td>" + html_escape(v) + "</td>";
    }
    t += "</tr>";
  };
  row("source", [](const RunData& r) { return r.source; });
  row("read as", [](const RunData& r) { return r.kind; });
  for (const auto& k : keys) row(k, [&](const RunData& r) { return r.get(k); });
  row("iterations logged", [](const RunData& r) {
    return r.train.empty() ? std::string("none")
                           : std::to_string(r.train.front().iteration) + " .. " +
                                 std::to_string(r.train.back().iteration) + " (" +
                                 std::to_string(r.train.size()) + " lines)";
  });
  row("last lm loss", [](const RunData& r) {
    for (auto it = r.train.rbegin(); it != r.train.rend(); ++it)
      if (std::isfinite(it->lm_loss)) return summary_number(it->lm_loss);
    return std::string();
  });
  row("best validation loss", [](const RunData& r) {
    double best = NAN;
    for (const auto& v : r.valid)
      if (std::isfinite(v.lm_loss) && !(best <= v.lm_loss)) best = v.lm_loss;
    return summary_number(best);
  });
  row("tokens/s (median, 2nd half)", [](const RunData& r) {
    return summary_number(median_of_last_half(r, &TrainPoint::tokens_per_second), "%.0f");
  });
  row("MFU % (median, 2nd half)", [](const RunData& r) {
    return summary_number(median_of_last_half(r, &TrainPoint::mfu_percent), "%.1f");
  });
  row("training time", [](const RunData& r) {
    return r.train.empty() ? std::string()
                           : summary_number(r.train.back().seconds / 3600.0, "%.3g") + " h";
  });
  return t + "</tbody></table>";
}

const char* kStyle = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 20px 0 6px; }
table.config { border-collapse: collapse; font-size: 12px; }
table.config th, table.config td {
  border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top;
}
table.config tbody th { background: #f6f6f6; font-weight: 600; white-space: nowrap; }
td.cmd div {
  font-family: monospace; font-size: 11px; max-width: 360px; max-height: 5.5em; overflow: auto;
  word-break: break-all;
}
.toggle { cursor: pointer; user-select: none; white-space: nowrap; }
.toggle i {
  display: inline-block; width: 12px; height: 12px; margin-right: 6px; vertical-align: -1px;
  border-radius: 2px;
}
.toggle.off { opacity: .35; text-decoration: line-through; }
.grid-plots { display: flex; flex-wrap: wrap; gap: 8px; }
svg.plot { width: 560px; max-width: 100%; height: auto; border: 1px solid #eee; background: #fff; }
svg .title { font-size: 13px; font-weight: 600; } svg .tick { font-size: 10px; fill: #555; }
svg .axis { font-size: 11px; fill: #333; } svg .empty { font-size: 12px; fill: #999; }
svg .frame { fill: none; stroke: #bbb; } svg .grid { stroke: #eee; }
svg .series { fill: none; stroke-width: 1.4; stroke-linejoin: round; }
svg .dashed { stroke-dasharray: 5 3; stroke-width: 1.8; }
svg .cross { stroke: #888; stroke-width: .8; } svg .bar.light { fill-opacity: .4; }
svg .off { display: none; }
#tip {
  position: absolute; display: none; background: rgba(255,255,255,.95); border: 1px solid #aaa;
  padding: 4px 8px; font-size: 12px; pointer-events: none; white-space: nowrap;
}
#tip i { display: inline-block; width: 9px; height: 9px; margin-right: 5px; }
ul.warnings { font-family: monospace; font-size: 12px; color: #a40; }
footer { margin-top: 20px; font-size: 11px; color: #777; }
)CSS";

// Hover values, toggles, and a self-check that writes what the page drew into #self-check (read
// by the browser test).
const char* kScript = R"JS(
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var data = JSON.parse(document.getElementById('plot-data').textContent);
  var hidden = {};
  var tip = document.getElementById('tip');
  function toggle(run) {
    hidden[run] = !hidden[run];
    var set = function (el) { el.classList.toggle('off', hidden[run]); };
    document.querySelectorAll('svg .r' + run).forEach(set);
    document.querySelectorAll('.toggle[data-run="' + run + '"]').forEach(set);
  }
  document.querySelectorAll('.toggle[data-run]').forEach(function (el) {
    el.addEventListener('click', function () { toggle(el.getAttribute('data-run')); });
  });
  function nearest(xs, x) {
    var lo = 0, hi = xs.length - 1;
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (xs[mid] < x) lo = mid; else hi = mid; }
    return Math.abs(xs[lo] - x) <= Math.abs(xs[hi] - x) ? lo : hi;
  }
  function num(v) {
    var a = Math.abs(v);
    if (a >= 1e12) return (v / 1e12).toPrecision(4) + 'T';
    if (a >= 1e9) return (v / 1e9).toPrecision(4) + 'G';
    if (a >= 1e6) return (v / 1e6).toPrecision(4) + 'M';
    if (a >= 1e4) return (v / 1e3).toPrecision(4) + 'k';
    return Number(v.toPrecision(5)).toString();
  }
  function xtext(p, x) {
    if (p.xunit === 's')
      return x >= 7200 ? num(x / 3600) + ' h' : x >= 120 ? num(x / 60) + ' min' : num(x) + ' s';
    return num(x) + (p.xunit === 'tokens' ? ' tokens' : '');
  }
  function hide(p) {
    tip.style.display = 'none';
    var c = document.querySelector('#' + p.id + ' .cross');
    if (c) c.setAttribute('visibility', 'hidden');
  }
  function hover(p, svg, clientX, pageX, pageY) {
    var r = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
    var sx = (clientX - r.left) * vb.width / r.width, f = p.frame;
    if (sx < f[0] || sx > f[0] + f[2]) { hide(p); return 0; }
    var x = p.x[0] + (sx - f[0]) / f[2] * (p.x[1] - p.x[0]);
    while (tip.firstChild) tip.removeChild(tip.firstChild);
    var head = document.createElement('b'); head.textContent = xtext(p, x); tip.appendChild(head);
    var rows = 0;
    p.series.forEach(function (s) {
      if (hidden[s.run] || !s.x.length) return;
      var i = nearest(s.x, x), line = document.createElement('div');
      var sw = document.createElement('i');
      sw.style.background = COLOURS[s.run % COLOURS.length];
      line.appendChild(sw);
      var text = s.name + ': ' + num(s.y[i]) + ' at ' + xtext(p, s.x[i]);
      line.appendChild(document.createTextNode(text));
      tip.appendChild(line); rows++;
    });
    var c = svg.querySelector('.cross');
    c.setAttribute('x1', sx);
    c.setAttribute('x2', sx);
    c.setAttribute('visibility', 'visible');
    tip.style.left = (pageX + 14) + 'px';
    tip.style.top = (pageY + 14) + 'px';
    tip.style.display = rows ? 'block' : 'none';
    return rows;
  }
  data.plots.forEach(function (p) {
    var svg = document.getElementById(p.id);
    svg.addEventListener('mousemove', function (ev) {
      hover(p, svg, ev.clientX, ev.pageX, ev.pageY);
    });
    svg.addEventListener('mouseleave', function () { hide(p); });
  });
  // Self-check: what each plot drew, from the DOM, beside what the data says it should draw.
  var check = { plots: [], errors: errors };
  data.plots.forEach(function (p) {
    var svg = document.getElementById(p.id), lines = svg.querySelectorAll('polyline.series');
    var out = { id: p.id, title: p.title, kind: 'line', series: [] };
    p.series.forEach(function (s, k) {
      var pts = lines[k] ? lines[k].getAttribute('points').trim() : '';
      out.series.push({ name: s.name, run: s.run, data: s.x.length,
                        drawn: pts ? pts.split(/\s+/).length : 0,
                        dom_name: lines[k] ? lines[k].getAttribute('data-series') : null,
                        ymin: Math.min.apply(null, s.y), ymax: Math.max.apply(null, s.y) });
    });
    var r = svg.getBoundingClientRect();
    out.rendered = r.width > 0 && r.height > 0;
    if (p.series.length) {
      var middle = r.left + r.width * (p.frame[0] + p.frame[2] / 2) / svg.viewBox.baseVal.width;
      out.hover_rows = hover(p, svg, middle, 0, 0);
      hide(p);
    }
    check.plots.push(out);
  });
  document.querySelectorAll('svg.bars').forEach(function (svg) {
    var bars = [];
    svg.querySelectorAll('rect.bar').forEach(function (b) {
      bars.push({ title: b.querySelector('title').textContent,
                  value: Number(b.getAttribute('data-value')) });
    });
    check.plots.push({ id: svg.id, kind: 'bars', bars: bars,
                       rendered: svg.getBoundingClientRect().width > 0 });
  });
  var first = document.querySelector('.toggle[data-run]');
  if (first) {
    var run = first.getAttribute('data-run'), els = document.querySelectorAll('svg .r' + run);
    first.click();
    var isOff = function (el) { return el.classList.contains('off'); };
    var off = Array.prototype.every.call(els, isOff);
    first.click();
    var on = !Array.prototype.some.call(els, isOff);
    check.toggle = els.length > 0 && off && on;
  }
  document.getElementById('self-check').textContent = JSON.stringify(check);
})();
)JS";

}  // namespace

std::string render_report(const std::vector<RunData>& runs, const std::vector<Warning>& warnings,
                          const ReportOptions& o) {
  const size_t b = o.buckets;
  std::vector<LinePlot> lines = {
      line_plot(runs, "loss-tokens", "lm loss vs tokens", XUnit::kTokens, &TrainPoint::lm_loss,
                "lm loss", true, b),
      line_plot(runs, "loss-time", "lm loss vs training time", XUnit::kSeconds,
                &TrainPoint::lm_loss, "lm loss", true, b),
      line_plot(runs, "learning-rate", "learning rate", XUnit::kTokens, &TrainPoint::learning_rate,
                "learning rate", false, b),
      line_plot(runs, "grad-norm", "gradient norm", XUnit::kTokens, &TrainPoint::grad_norm,
                "grad norm", false, b),
      line_plot(runs, "loss-scale", "loss scale", XUnit::kTokens, &TrainPoint::loss_scale,
                "loss scale (log2)", false, b),
      line_plot(runs, "tokens-per-second", "throughput", XUnit::kTokens,
                &TrainPoint::tokens_per_second, "tokens/s", false, b),
      line_plot(runs, "mfu", "model FLOPs utilization", XUnit::kTokens, &TrainPoint::mfu_percent,
                "MFU %", false, b)};
  lines[4].log2_y = true;

  BarPlot memory{
      "memory", "peak memory per rank (solid: max allocated, light: max reserved)", "MB", {}};
  BarPlot stages{"stages", "pipeline stages per iteration (solid: compute, light: wait)", "ms", {}};
  for (size_t r = 0; r < runs.size(); ++r)
    for (const auto& [rank, s] : runs[r].ranks) {
      const std::string label =
          (runs.size() > 1 ? runs[r].name + " " : "") + "r" + std::to_string(rank);
      BarGroup g{label, int(r), {}, false};
      if (std::isfinite(s.max_allocated_mb))
        g.bars.push_back({"max allocated", s.max_allocated_mb, 0, false});
      if (std::isfinite(s.max_reserved_mb))
        g.bars.push_back({"max reserved", s.max_reserved_mb, 0, true});
      if (!g.bars.empty()) memory.groups.push_back(g);
      if (std::isfinite(s.compute_ms) || std::isfinite(s.wait_ms)) {
        const double c = std::isfinite(s.compute_ms) ? s.compute_ms : 0;
        BarGroup st{label, int(r), {{"compute", c, 0, false}}, true};
        if (std::isfinite(s.wait_ms)) st.bars.push_back({"wait", s.wait_ms, c, true});
        stages.groups.push_back(st);
      }
    }

  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>" +
      html_escape(o.title) + "</title><style>" + kStyle + "</style></head><body>\n";
  h += "<h1>" + html_escape(o.title) + "</h1>\n";
  h += "<p>Click a run's name to show or hide it in every plot; hover over a plot for its "
       "values.</p>\n";
  h += config_table(runs) + "\n";
  if (!warnings.empty()) {
    h += "<h2>Warnings</h2><ul class=\"warnings\">";
    for (const auto& w : warnings) h += "<li>" + html_escape(w.where + ": " + w.what) + "</li>";
    h += "</ul>\n";
  }
  h += "<h2>Plots</h2><div class=\"grid-plots\">\n";
  std::string json = "{\"plots\":[";
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string j;
    h += render_line_plot(lines[i], &j) + "\n";
    json += (i ? "," : "") + j;
  }
  json += "]}";
  if (!memory.groups.empty()) h += render_bar_plot(memory) + "\n";
  if (!stages.groups.empty()) h += render_bar_plot(stages) + "\n";
  h += "</div>\n<div id=\"tip\"></div><pre id=\"self-check\" hidden></pre>\n";
  h += "<footer>Written by " + html_escape(o.generator) + ". Curves with more than " +
       std::to_string(4 * b) +
       " points are thinned for display, keeping each bucket's first, lowest, highest and last "
       "value. Plots are SVG drawn by gpt-report with a small inline script (hover, toggles); the "
       "page loads nothing from the network.</footer>\n";
  // "</script>" or "<!--" inside a script would end or confuse it; '<' occurs only inside JSON
  // strings, where \u003c means the same
  std::string safe;
  for (char c : json) safe += c == '<' ? std::string("\\u003c") : std::string(1, c);
  h += "<script type=\"application/json\" id=\"plot-data\">" + safe + "</script>\n";
  std::string colours = "[";
  for (int i = 0; i < 10; ++i) colours += std::string(i ? "," : "") + "\"" + run_colour(i) + "\"";
  h += "<script>var COLOURS = " + colours + "];" + kScript + "</script>\n</body></html>\n";
  return h;
}

}  // namespace suite::report
