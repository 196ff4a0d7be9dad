#include "train/loop/signals.h"

#include <csignal>

namespace gpt {
namespace {
volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_exit_signal(int sig) { g_signal = sig; }
}  // namespace

void install_exit_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_exit_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

int exit_signal_received() { return g_signal; }

}  // namespace gpt
