#include "common/io/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/cli/error.h"

namespace suite {

OutputLock::OutputLock(std::string lock_path, std::string what) : path_(std::move(lock_path)) {
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
        held.st_dev == now.st_dev)
      return;
    ::close(fd_);
    fd_ = -1;
  }
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still holding the lock, so no one else holds this file
  ::close(fd_);
}

}  // namespace suite
