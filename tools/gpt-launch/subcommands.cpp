#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "common/cli/error.h"
#include "tools/gpt-launch/subcommands.h"

#ifndef SUITE_VERSION
#define SUITE_VERSION "0.0.0"
#endif
#ifndef SUITE_GIT_REV
#define SUITE_GIT_REV "unknown"
#endif

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace gpt_launch {

std::string self_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string default_presets_dir() {
  for (const char* rel : {"/../../presets", "/../share/webtext-to-gpt/presets", "/../presets"}) {
    fs::path p = fs::path(self_dir() + rel).lexically_normal();
    if (fs::is_directory(p)) return p.string();
  }
  return "presets";
}

int run_capture(const std::vector<std::string>& argv, std::string& out) {
  int pipefd[2];
  if (pipe(pipefd) != 0) throw suite::ToolError("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  char buf[4096];
  for (ssize_t n; (n = read(pipefd[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string revision() { return std::string(SUITE_VERSION) + " (" + SUITE_GIT_REV + ")"; }

po::variables_map parse_options(int argc, char** argv, const po::options_description& opts,
                                const po::positional_options_description& positional) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw suite::UsageError(e.what());
  }
  return vm;
}

}  // namespace gpt_launch
