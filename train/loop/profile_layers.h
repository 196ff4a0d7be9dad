// `gpt-train --profile-layers OUT.json`: instead of training, measures what gpt-plan needs to plan
// this model on this GPU type (data/README.md, "Layer profiles"): per micro-batch and
// tensor-parallel size the forward and backward milliseconds of the embedding, one transformer
// layer and the output layer, and the saved activations per layer, each timed on small pipeline
// stages of the run's backend (an embedding-only stage, middle stages of one and of two layers
// whose difference is "one layer", a head-only stage). Tensor-parallel sizes T > 1 run on the
// first T ranks over their own group, so the layer times include the tensor-parallel collectives.
// With several ranks it also measures the node's bandwidths as `gpt-plan bandwidth` does and
// writes them beside OUT (OUT.json -> OUT.bandwidth.json) for a cluster file's bandwidth-files.
#pragma once

#include <boost/program_options.hpp>
#include <iosfwd>
#include <string>

#include "train/loop/args.h"

namespace gpt {

// The --profile-* flags, for gpt-train's --help.
void add_profile_layers_options(boost::program_options::options_description& o, TrainArgs& a);
// The worked example printed at the end of --help.
const char* profile_layers_example();
// Usage errors (exit 2) before anything starts: the sizes, --vocab-size, and T <= world_size.
void check_profile_layers(const TrainArgs& a, int world_size);
// Runs on every rank of the job (or alone); rank 0 writes the files. Progress on `log`.
void run_profile_layers(const TrainArgs& a, std::ostream& log);
// "profile.json" -> "profile.bandwidth.json".
std::string bandwidth_path(const std::string& profile_path);

}  // namespace gpt
