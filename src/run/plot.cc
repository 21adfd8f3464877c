#include "run/plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "run/compare.h"
#include "run/metrics_reader.h"
#include "run/metrics_writer.h"

extern char** environ;

namespace fs = std::filesystem;

namespace replica {
namespace {

using Series = std::vector<std::pair<int64_t, double>>;

struct Run {
  std::string label;
  MetricsLog log;
};

struct Line {
  std::string block;  // gnuplot datablock name
  std::string title;
  int color = 1;      // gnuplot linetype index: one colour per run across panels
  int dash = 1;
  size_t points = 0;
};

struct Panel {
  std::string file;   // without extension
  std::string title, ylabel;
  bool log_y = false;
  std::vector<Line> lines;
  // The data's extent, so a panel whose points share one x or one y gets an explicit range
  // instead of gnuplot's "empty x range" warning.
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
};

std::string Quote(const std::string& s) {  // gnuplot single-quoted string
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "''";
    else if (c != '\n') out += c;
  }
  return out + "'";
}

Series Extract(const MetricsLog& log, const std::string& name) {
  Series s;
  for (const auto& [step, row] : log.steps) {
    auto it = row.find(name);
    if (it == row.end()) continue;
    auto v = MetricsLog::AsNumber(it->second);
    if (v && std::isfinite(*v)) s.emplace_back(step, *v);
  }
  return s;
}

// The name a run is shown by: its directory's name, also for "." or "../run/"; a metrics file
// other than a run's metrics.jsonl (a reference run's log or export) by its file name.
std::string RunLabel(const std::string& path) {
  fs::path p = fs::path(path);
  if (fs::is_regular_file(p)) {
    if (p.filename() != kMetricsFile) return p.filename().string();
    p = fs::absolute(p).parent_path();
  }
  p = fs::absolute(p).lexically_normal();
  if (p.filename().empty() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  const std::string name = p.filename().string();
  return name.empty() ? p.string() : name;
}

// "set xrange"/"set yrange" lines for a degenerate extent (one distinct value), else autoscale.
std::string RangeCommands(const Panel& p) {
  std::string s;
  if (p.x_min == p.x_max) {
    s += fmt::format("set xrange [{}:{}]\n", p.x_min - 1, p.x_max + 1);
  } else {
    s += "set autoscale x\n";
  }
  if (p.y_min == p.y_max) {
    const double y = p.y_min;
    if (p.log_y) {
      s += fmt::format("set yrange [{}:{}]\n", y / 2, y * 2);
    } else {
      const double d = y == 0 ? 1.0 : std::fabs(y) * 0.05;
      s += fmt::format("set yrange [{}:{}]\n", y - d, y + d);
    }
  } else {
    s += "set autoscale y\n";
  }
  return s;
}

// Runs argv; with `log_path`, its stdout and stderr go to that file, otherwise to /dev/null.
int RunProcess(const std::vector<std::string>& argv_strings, const std::string& log_path) {
  std::vector<char*> argv;
  for (const auto& a : argv_strings) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const char* out = log_path.empty() ? "/dev/null" : log_path.c_str();
  posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -rc;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -errno;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

std::vector<std::string> PlotRuns(const PlotOptions& options) {
  Require(!options.runs.empty(), "plot: no run given");
  Require(options.format == "png" || options.format == "svg",
          "--format: '{}' is not supported (expected png or svg)", options.format);
  Require(!options.out_dir.empty(), "--out: empty output directory");
  {
    const int rc = RunProcess({options.gnuplot, "--version"}, "");
    Require(rc == 0,
            "gnuplot not found or not working ('{} --version' {}): install it to draw plots "
            "(Debian/Ubuntu: apt-get install gnuplot-nox)",
            options.gnuplot,
            rc < 0 ? std::string("failed: ") + std::strerror(-rc) : fmt::format("exited {}", rc));
  }

  std::vector<Run> runs;
  std::map<std::string, int> label_count;
  for (const std::string& path : options.runs) {
    Run r{RunLabel(path), ReadMetrics(path)};
    ++label_count[r.label];
    runs.push_back(std::move(r));
  }
  for (size_t i = 0; i < runs.size(); ++i)
    if (label_count[runs[i].label] > 1) runs[i].label = options.runs[i];

  std::string data;   // datablocks
  int blocks = 0;
  auto add_line = [&](Panel& panel, const Series& s, std::string title, int color, int dash) {
    if (s.empty()) return;
    for (size_t k = 0; k < s.size(); ++k) {
      const double x = static_cast<double>(s[k].first), y = s[k].second;
      const bool first = panel.lines.empty() && k == 0;
      panel.x_min = first ? x : std::min(panel.x_min, x);
      panel.x_max = first ? x : std::max(panel.x_max, x);
      panel.y_min = first ? y : std::min(panel.y_min, y);
      panel.y_max = first ? y : std::max(panel.y_max, y);
    }
    Line line{fmt::format("$d{}", blocks++), std::move(title), color, dash, s.size()};
    data += line.block + " << EOD\n";
    for (const auto& [step, v] : s) data += fmt::format("{} {}\n", step, v);
    data += "EOD\n";
    panel.lines.push_back(std::move(line));
  };

  std::vector<Panel> panels;
  struct TrainPanel {
    const char* metric;
    const char* file;
    const char* title;
    const char* ylabel;
    bool log_y;
  };
  const TrainPanel kTrain[] = {
      {"loss", "loss", "training loss", "loss", false},
      {"lr", "lr", "learning rate", "lr", false},
      {"grad_norm", "grad_norm", "gradient norm (before clipping)", "grad norm", true},
      {"tokens_per_s", "throughput", "throughput", "tokens / s", false},
      {"mfu", "mfu", "model FLOPs utilisation", "MFU", false},
  };
  for (const TrainPanel& t : kTrain) {
    Panel panel{t.file, t.title, t.ylabel, t.log_y, {}};
    for (size_t i = 0; i < runs.size(); ++i)
      add_line(panel, Extract(runs[i].log, t.metric), runs[i].label, static_cast<int>(i) + 1, 1);
    if (!panel.lines.empty()) panels.push_back(std::move(panel));
  }
  const size_t train_panels = panels.size();

  // Eval: one panel per metric name, one line per (run, set). Counts that describe the set rather
  // than the model (documents, tokens, items) stay constant and are not drawn.
  auto is_set_size = [](const std::string& m) {
    return m == "docs" || m == "tokens" || m == "truncated_docs" || m == "items" ||
           m == "skipped_items" || m == "kind";
  };
  std::map<std::string, std::set<std::string>> sets_by_metric;  // metric -> sets
  for (const Run& r : runs)
    for (const auto& [step, row] : r.log.steps)
      for (const auto& [name, v] : row) {
        if (name.rfind("eval.", 0) != 0 || IsTimingMetric(name)) continue;
        const size_t dot = name.rfind('.');
        if (dot <= 4 || is_set_size(name.substr(dot + 1))) continue;
        sets_by_metric[name.substr(dot + 1)].insert(name.substr(5, dot - 5));
      }
  for (const auto& [metric, sets] : sets_by_metric) {
    std::string file = "eval_";
    for (char c : metric) file += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    Panel panel{file, "eval: " + metric, metric, false, {}};
    for (size_t i = 0; i < runs.size(); ++i) {
      int dash = 1;
      for (const std::string& set : sets) {
        std::string title = runs.size() > 1 ? runs[i].label + ": " + set : set;
        add_line(panel, Extract(runs[i].log, "eval." + set + "." + metric), title,
                 static_cast<int>(i) + 1, dash++);
      }
    }
    if (!panel.lines.empty()) panels.push_back(std::move(panel));
  }
  Require(!panels.empty(), "plot: no numeric loss, lr, grad_norm, tokens_per_s, mfu or eval "
                           "values in the given runs");

  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  Require(!ec, "{}: cannot create directory: {}", options.out_dir, ec.message());
  const std::string ext = options.format;
  auto terminal = [&](int w, int h) {
    return options.format == "png"
               ? fmt::format("set terminal pngcairo size {},{} noenhanced font 'Sans,10'\n", w, h)
               : fmt::format("set terminal svg size {},{} noenhanced dynamic font 'Sans,10'\n", w, h);
  };
  auto plot_command = [&](const Panel& p) {
    std::string s = fmt::format("set title {}\nset ylabel {}\n", Quote(p.title), Quote(p.ylabel));
    s += p.log_y ? "set logscale y\n" : "unset logscale y\n";
    s += RangeCommands(p);
    s += "plot ";
    for (size_t i = 0; i < p.lines.size(); ++i) {
      const Line& l = p.lines[i];
      s += fmt::format("{}{} using 1:2 with {} lt {} dt {} lw 2 title {}", i ? ", \\\n     " : "",
                       l.block, l.points < 50 ? "linespoints pt 7 ps 0.6" : "lines", l.color,
                       l.dash, Quote(l.title));
    }
    return s + "\n";
  };

  std::string script = "# written by `replica plot`; run with: gnuplot plot.gp\n" + data;
  script += "set grid\nset xlabel 'step'\nset key top right\nset format y '%g'\n";
  std::vector<std::string> files;
  for (const Panel& p : panels) {
    const std::string out = (fs::path(options.out_dir) / (p.file + "." + ext)).string();
    script += "\n" + terminal(900, 560) + "set output " + Quote(out) + "\n" + plot_command(p) +
              "unset output\n";
    files.push_back(out);
  }
  if (train_panels > 0) {
    const std::string out = (fs::path(options.out_dir) / ("overview." + ext)).string();
    const size_t n = std::min<size_t>(train_panels, 4);
    script += "\n" + terminal(1400, n > 2 ? 900 : 450) + "set output " + Quote(out) + "\n";
    script += fmt::format("set multiplot layout {},{}\n", n > 2 ? 2 : 1, n > 1 ? 2 : 1);
    for (size_t i = 0; i < n; ++i) script += plot_command(panels[i]);
    script += "unset multiplot\nunset output\n";
    files.push_back(out);
  }
  const std::string script_path = (fs::path(options.out_dir) / "plot.gp").string();
  WriteFileAtomic(script_path, script);
  // gnuplot's own output (warnings included) goes to gnuplot.log beside the script; it is shown
  // only when gnuplot fails.
  const std::string log_path = (fs::path(options.out_dir) / "gnuplot.log").string();
  const int rc = RunProcess({options.gnuplot, script_path}, log_path);
  if (rc != 0) {
    std::string log;
    try {
      log = ReadFile(log_path);
    } catch (const Error&) {
    }
    if (log.size() > 2000) log = "..." + log.substr(log.size() - 2000);
    Fail("gnuplot failed on {} ({}){}{}", script_path,
         rc < 0 ? std::string(std::strerror(-rc)) : fmt::format("exit status {}", rc),
         log.empty() ? "" : ":\n", log);
  }
  for (const std::string& f : files)
    Require(fs::exists(f, ec) && fs::file_size(f, ec) > 0, "{}: gnuplot did not write it", f);
  return files;
}

}  // namespace replica
