// SIGTERM / SIGUSR1 ask the loop to save and exit at the end of the current iteration
// (what Slurm sends before a time limit).
#pragma once

namespace gpt {

void install_exit_signal_handlers();
// The signal received since install (0 if none).
int exit_signal_received();

}  // namespace gpt
