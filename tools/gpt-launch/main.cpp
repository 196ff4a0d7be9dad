// gpt-launch: Slurm runs of gpt-train from model presets, with a results folder per run; the status
// of a run; training-time and memory estimates (see --help).
#include <string>

#include "common/cli/error.h"
#include "tools/gpt-launch/subcommands.h"

namespace {

int body(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "status") return gpt_launch::status_main(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "estimate") return gpt_launch::estimate_main(argc - 1, argv + 1);
  return gpt_launch::launch_main(argc, argv);
}

}  // namespace

int main(int argc, char** argv) { return suite::run_tool("gpt-launch", argc, argv, body); }
