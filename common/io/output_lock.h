// One writer per output: an exclusive flock on a lock file beside the output (PREFIX.lock for a
// dataset, DIR/.lock for an output folder), so that a second run writing the same output fails at
// start with a clear message instead of interleaving its renames with the first run's. The kernel
// releases the lock when the process ends, however it ends; the file itself is removed on release
// (a killed run leaves it behind, unlocked and harmless). Within one process the lock nests: a
// second OutputLock on the same path shares the first one's.
#pragma once

#include <string>

namespace suite {

class OutputLock {
 public:
  // Throws ToolError naming `what` (the output being protected) when another process holds the lock.
  OutputLock(std::string lock_path, std::string what);
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace suite
