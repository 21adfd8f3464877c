// `replica plot RUN [RUN ...]`: charts of metrics.jsonl a person would rather look at than read.
//
// Draws, with gnuplot (Debian: gnuplot-nox), one image per panel — loss.png, lr.png,
// grad_norm.png (log scale), throughput.png (tokens/s), mfu.png, and eval_<metric>.png for every eval metric (one line per run and eval set) — plus
// overview.png with the train panels together. Several runs are overlaid, each labelled by its
// directory name. Panels without data are skipped. The gnuplot script (plot.gp, data inline) is
// kept next to the images so a figure can be restyled by hand; gnuplot's own messages go to
// gnuplot.log there and are printed only when gnuplot fails. A run given as "." or "dir/" is
// labelled by its directory's name. Panels whose points share one step or one value get an
// explicit range (no gnuplot range warnings).
//
// Errors: gnuplot missing from PATH (with how to install it), no metrics, a run without
// metrics.jsonl, gnuplot failing (its exit status and the end of its output).
#pragma once
#include <string>
#include <vector>

namespace replica {

struct PlotOptions {
  std::vector<std::string> runs;  // run directories or metrics.jsonl files
  std::string out_dir;            // created if needed
  std::string format = "png";     // "png" or "svg"
  std::string gnuplot = "gnuplot";  // program name or path
};

// Returns the image files written.
std::vector<std::string> PlotRuns(const PlotOptions& options);

}  // namespace replica
