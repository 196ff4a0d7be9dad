#include "train/dist/local_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "common/cli/error.h"
#include "common/cli/numbers.h"
#include "common/cli/options.h"
#include "train/dist/launch_env.h"
#include "train/dist/socket_io.h"

extern char** environ;

namespace gpt::dist {
namespace {

constexpr double kGraceSeconds = 10;  // SIGTERM to SIGKILL for the other children after a failure

// The value of `--name V` or `--name=V` at argv[i] (advancing i over V); nullptr if not that flag.
const char* flag_value(int argc, char** argv, int& i, const char* name) {
  size_t len = std::strlen(name);
  if (std::strncmp(argv[i], name, len) != 0) return nullptr;
  if (argv[i][len] == '=') return argv[i] + len + 1;
  if (argv[i][len] != '\0') return nullptr;
  if (i + 1 >= argc) throw suite::UsageError(std::string(name) + " needs a value");
  return argv[++i];
}

// One child's pipe: bytes not yet forwarded (an incomplete line).
struct Stream {
  int fd = -1;
  int out = 1;  // where its lines go
  std::string pending;
};

void write_whole(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // our own stdout is gone; keep draining the children
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Forwards every complete line (or a very long partial one) in one write each.
void forward(Stream& s, bool at_eof) {
  size_t start = 0;
  while (true) {
    size_t nl = s.pending.find('\n', start);
    if (nl == std::string::npos) break;
    write_whole(s.out, s.pending.data() + start, nl + 1 - start);
    start = nl + 1;
  }
  s.pending.erase(0, start);
  if (!s.pending.empty() && (at_eof || s.pending.size() > (1 << 20))) {
    if (at_eof) s.pending += '\n';
    write_whole(s.out, s.pending.data(), s.pending.size());
    s.pending.clear();
  }
}

int status_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int find_nproc_per_node(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (const char* v = flag_value(argc, argv, i, "--nproc-per-node")) {
      const std::optional<int> n = suite::parse_number<int>(v);
      if (!n || *n < 1 || *n > 4096)
        throw suite::UsageError(std::string("--nproc-per-node ") + v +
                                ": expected a positive number of processes");
      return *n;
    }
  }
  return 0;
}

std::vector<std::string> child_arguments(int argc, char** argv, int nproc_per_node, int cores) {
  std::vector<std::string> out;
  bool cpu = true, threads_given = false;
  for (int i = 1; i < argc; ++i) {
    int at = i;
    if (flag_value(argc, argv, i, "--nproc-per-node")) continue;
    i = at;
    if (const char* v = flag_value(argc, argv, i, "--device")) {
      cpu = std::strcmp(v, "cpu") == 0;
      for (int k = at; k <= i; ++k) out.push_back(argv[k]);
      continue;
    }
    i = at;
    if (flag_value(argc, argv, i, "--cpu-threads")) threads_given = true;
    i = at;
    out.push_back(argv[i]);
  }
  if (cpu && !threads_given) {
    out.push_back("--cpu-threads");
    out.push_back(std::to_string(std::max(1, cores / nproc_per_node)));
  }
  return out;
}

int run_local_launcher(int argc, char** argv, int nproc_per_node) {
  const std::string tool = suite::tool_name().empty() ? "gpt-train" : suite::tool_name();
  std::string why = launched_rank_reason();
  if (!why.empty()) {
    std::cerr << tool << ": --nproc-per-node is refused here: " << why << "\n";
    return suite::kExitUsage;
  }
  int port = environment_master_port();
  if (port == 0) {
    // A port free now; the child of rank 0 binds it again a moment later (as torchrun does).
    int bound = 0;
    int fd = listen_tcp(0, &bound);
    if (fd < 0) throw suite::ToolError("cannot find a free local port");
    close_fd(fd);
    port = bound;
  }
  std::vector<std::string> args = child_arguments(argc, argv, nproc_per_node,
                                                  suite::available_cores());
  const std::string self = "/proc/self/exe";
  const std::string arg0 = argv[0];

  // Signals arrive through a signalfd so that the loop below sees them between reads.
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int s : {SIGINT, SIGTERM, SIGUSR1, SIGCHLD}) sigaddset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, &old_mask);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) throw suite::ToolError(std::string("signalfd: ") + std::strerror(errno));

  // The children's environment: ours without the variables we set (and without torchrun's agent
  // store flag: their rendezvous is ours).
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    if (name == "RANK" || name == "WORLD_SIZE" || name == "LOCAL_RANK" ||
        name == "LOCAL_WORLD_SIZE" || name == "MASTER_ADDR" || name == "MASTER_PORT" ||
        name == "TORCHELASTIC_USE_AGENT_STORE" || name == "GROUP_RANK")
      continue;
    env.push_back(kv);
  }
  if (std::none_of(env.begin(), env.end(),
                   [](const std::string& kv) { return kv.rfind("NCCL_NVLS_ENABLE=", 0) == 0; }))
    env.push_back("NCCL_NVLS_ENABLE=0");

  std::fflush(stdout);
  std::cout.flush();
  // A closed stdout must not kill the launcher while children still run: it keeps draining them.
  struct sigaction ignore_pipe {}, old_pipe {};
  ignore_pipe.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore_pipe, &old_pipe);
  const pid_t launcher = getpid();
  std::vector<pid_t> pids(nproc_per_node, -1);
  std::vector<Stream> streams;
  for (int r = 0; r < nproc_per_node; ++r) {
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
      throw suite::ToolError(std::string("pipe: ") + std::strerror(errno));
    std::vector<std::string> child_env = env;
    child_env.push_back("RANK=" + std::to_string(r));
    child_env.push_back("LOCAL_RANK=" + std::to_string(r));
    child_env.push_back("WORLD_SIZE=" + std::to_string(nproc_per_node));
    child_env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(nproc_per_node));
    child_env.push_back("GROUP_RANK=0");
    child_env.push_back("MASTER_ADDR=127.0.0.1");
    child_env.push_back("MASTER_PORT=" + std::to_string(port));
    std::vector<char*> cargv{const_cast<char*>(arg0.c_str())}, cenv;
    for (auto& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    for (auto& e : child_env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) throw suite::ToolError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      // Its own process group: a terminal's Ctrl-C reaches the children once, through the
      // launcher; and a launcher that is killed takes its children with it.
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != launcher) _exit(1);
      dup2(out_pipe[1], 1);
      dup2(err_pipe[1], 2);
      sigaction(SIGPIPE, &old_pipe, nullptr);
      sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      execve(self.c_str(), cargv.data(), cenv.data());
      std::fprintf(stderr, "%s: cannot start rank %d: %s\n", tool.c_str(), r, std::strerror(errno));
      _exit(127);
    }
    pids[r] = pid;
    close(out_pipe[1]);
    close(err_pipe[1]);
    streams.push_back({out_pipe[0], 1, {}});
    streams.push_back({err_pipe[0], 2, {}});
  }

  int first_failure = 0, running = nproc_per_node;
  bool stopping = false;
  auto kill_deadline = Clock::time_point::max();
  auto signal_all = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0) kill(p, sig);
  };
  std::vector<char> buf(1 << 16);
  while (running > 0 || std::any_of(streams.begin(), streams.end(),
                                    [](const Stream& s) { return s.fd >= 0; })) {
    std::vector<pollfd> fds{{sfd, POLLIN, 0}};
    for (auto& s : streams)
      if (s.fd >= 0) fds.push_back({s.fd, POLLIN, 0});
    int timeout = 200;
    int r = poll(fds.data(), fds.size(), timeout);
    if (r < 0 && errno != EINTR) break;
    if (stopping && Clock::now() > kill_deadline) {
      signal_all(SIGKILL);
      kill_deadline = Clock::time_point::max();
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si;
      while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo != SIGCHLD) signal_all(static_cast<int>(si.ssi_signo));
      }
    }
    // Reap children whatever woke us (SIGCHLD may coalesce).
    int status = 0;
    pid_t done;
    while ((done = waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = std::find(pids.begin(), pids.end(), done);
      if (it == pids.end()) continue;
      *it = -1;
      --running;
      int code = status_code(status);
      if (code != 0 && first_failure == 0) {
        first_failure = code;
        if (!stopping) {
          stopping = true;
          signal_all(SIGTERM);
          kill_deadline = deadline_after(kGraceSeconds);
        }
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      Stream* s = nullptr;
      for (auto& st : streams)
        if (st.fd == fds[i].fd) s = &st;
      ssize_t n = read(s->fd, buf.data(), buf.size());
      if (n > 0) {
        s->pending.append(buf.data(), static_cast<size_t>(n));
        forward(*s, false);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        forward(*s, true);
        close(s->fd);
        s->fd = -1;
      }
    }
  }
  close(sfd);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGPIPE, &old_pipe, nullptr);
  return first_failure;
}

}  // namespace gpt::dist
