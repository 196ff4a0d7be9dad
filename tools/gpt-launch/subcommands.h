// Helpers the gpt-launch subcommands share (launch.cpp, status.cpp, estimate.cpp). Relative file
// arguments are taken from the directory gpt-launch runs in; the job runs in the results folder.
#pragma once

#include <boost/program_options.hpp>
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
// A subcommand's options from argv (and its positional ones, when given); a malformed command line
// is a usage error.
boost::program_options::variables_map parse_options(
    int argc, char** argv, const boost::program_options::options_description& opts,
    const boost::program_options::positional_options_description& positional = {});

int launch_main(int argc, char** argv);
int status_main(int argc, char** argv);
int estimate_main(int argc, char** argv);

}  // namespace gpt_launch
