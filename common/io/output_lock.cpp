#include "common/io/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "common/cli/error.h"

namespace suite {
namespace {

// Locks this process already holds, by path, with their holder counts: a nested lock on the same
// output (a job's lock, then its writer's) must not conflict with itself.
std::mutex g_mutex;
std::map<std::string, std::pair<int, int>>& held_locks() {  // path -> (fd, count)
  static std::map<std::string, std::pair<int, int>> held;
  return held;
}

}  // namespace

OutputLock::OutputLock(std::string lock_path, std::string what) : path_(std::move(lock_path)) {
  std::lock_guard<std::mutex> guard(g_mutex);
  auto it = held_locks().find(path_);
  if (it != held_locks().end()) {
    ++it->second.second;
    return;
  }
  for (;;) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw ToolError(path_, std::string("cannot create the lock file: ") + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        throw ToolError(what, "another process is writing this output (it holds " + path_ +
                                  "); wait for it to finish or choose another output");
      throw ToolError(path_, std::string("cannot lock: ") + std::strerror(err));
    }
    // The previous holder may have removed the file between our open and our lock: then the lock
    // is on a file nobody else will find, so start again on the file at the path now.
    struct stat held {}, now {};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      held_locks()[path_] = {fd_, 1};
      return;
    }
    ::close(fd_);
    fd_ = -1;
  }
}

OutputLock::~OutputLock() {
  std::lock_guard<std::mutex> guard(g_mutex);
  auto it = held_locks().find(path_);
  if (it == held_locks().end() || --it->second.second > 0) return;
  ::unlink(path_.c_str());  // while still holding the lock, so no one else holds this file
  ::close(it->second.first);
  held_locks().erase(it);
}

}  // namespace suite
