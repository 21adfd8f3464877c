// replica plot RUN [RUN ...] [--out DIR] [--format png|svg]: loss, lr, grad norm, throughput and
// eval curves of one or several runs, overlaid (run/plot.h). Prints the files written.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "run/plot.h"

namespace {

struct PlotArgs {
  std::vector<std::string> runs;
  std::string out, format = "png";
};

replica::cli::CommandRegistration reg(
    "plot", "draw loss, lr, grad norm, throughput and eval curves of runs (gnuplot)",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto args = std::make_shared<PlotArgs>();
      app.add_option("RUN", args->runs, "run directories (or metrics.jsonl files)")->required();
      app.add_option("--out", args->out, "output directory (default: FIRST_RUN/plots)");
      app.add_option("--format", args->format, "png or svg")->check(CLI::IsMember({"png", "svg"}));
      return [args] {
        replica::PlotOptions options;
        options.runs = args->runs;
        options.format = args->format;
        options.out_dir = args->out.empty()
                              ? (std::filesystem::path(args->runs[0]) / "plots").string()
                              : args->out;
        if (const char* g = std::getenv("REPLICA_GNUPLOT"); g && *g) options.gnuplot = g;
        for (const std::string& f : replica::PlotRuns(options)) std::printf("%s\n", f.c_str());
        return 0;
      };
    });

}  // namespace
