// Helpers the gpt-launch subcommands share (launch.cpp, status.cpp, estimate.cpp).
#pragma once

#include <string>
#include <vector>

namespace gpt_launch {

// The folder of the gpt-launch binary.
std::string self_dir();
// presets/ of the repository (beside build/bin) or of an installation (share/webtext-to-gpt/presets).
std::string default_presets_dir();
// Runs argv (PATH lookup), returning its exit status; its standard output goes to `out`.
int run_capture(const std::vector<std::string>& argv, std::string& out);
// "VERSION (GIT REV)".
std::string revision();

int launch_main(int argc, char** argv);
int status_main(int argc, char** argv);
int estimate_main(int argc, char** argv);

}  // namespace gpt_launch
