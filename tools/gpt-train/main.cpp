// gpt-train: GPT pretraining with Megatron-LM's flags and log lines (see --help).
#include <iostream>

#include "common/cli/error.h"
#include "train/loop/args.h"
#include "train/loop/dist_setup.h"
#include "train/loop/profile_layers.h"
#include "train/dist/local_launcher.h"
#include "train/dist/watchdog.h"
#include "train/loop/trainer.h"

namespace {
int body(int argc, char** argv) {
  gpt::TrainArgs args;
  if (!gpt::parse_train_args(argc, argv, args)) return suite::kExitOk;  // --help / --version
  // --nproc-per-node N: this process launches N ranks here (after the flags were checked once).
  if (args.nproc_per_node > 0) {
    if (!args.profile_layers.empty()) gpt::check_profile_layers(args, args.nproc_per_node);
    else gpt::apply_world_size(args, args.nproc_per_node);  // a bad layout before any rank starts
    return gpt::dist::run_local_launcher(argc, argv, args.nproc_per_node);
  }
  // One process, or one rank of a data-parallel job (torchrun, srun, --rank/--world-size).
  try {
    if (!args.profile_layers.empty()) {  // measure for gpt-plan instead of training
      gpt::run_profile_layers(args, std::cerr);
      return suite::kExitOk;
    }
    auto job = gpt::join_data_parallel(args, std::cout);
    gpt::run_training(args, std::cout, job->env());
  } catch (...) {
    // A failed collective after the watchdog's abort: its line (naming the rank) is the last.
    if (gpt::dist::watchdog_ending()) gpt::dist::wait_for_watchdog_exit();
    throw;
  }
  return suite::kExitOk;
}
}  // namespace

int main(int argc, char** argv) { return suite::run_tool("gpt-train", argc, argv, body); }
