#include "common/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

#include "common/cli/error.h"

namespace suite {
namespace {

// Temporary paths still open, so that a fatal signal can remove them. A fixed table keeps the
// signal handler free of allocation; slots are claimed and released with atomics.
constexpr int kSlots = 64;
constexpr int kPathMax = 4096;
char g_paths[kSlots][kPathMax];
std::atomic<bool> g_used[kSlots];

extern "C" void remove_temps_and_reraise(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_used[i].load()) ::unlink(g_paths[i]);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_handlers_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      sigaction(sig, nullptr, &old);
      // Leave handlers that the program installed itself (gpt-train's checkpoint-on-signal) alone.
      if (old.sa_handler == SIG_DFL) std::signal(sig, remove_temps_and_reraise);
    }
  });
}

std::mutex g_slots_mutex;

int register_temp(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  for (int i = 0; i < kSlots; ++i) {
    if (!g_used[i].load()) {
      // The path is in place before the slot is marked used, so the handler never reads half a path.
      std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
      g_used[i].store(true);
      return i;
    }
  }
  return -1;
}

void unregister_temp(int slot) {
  if (slot < 0) return;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  g_used[slot].store(false);
}

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

AtomicFile::AtomicFile(std::string target) : target_(std::move(target)) {
  install_handlers_once();
  temp_ = dir_of(target_) + "/." + base_of(target_) + ".tmp.XXXXXX";
  fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);
  if (fd_ < 0) throw ToolError(target_, std::string("cannot create output: ") + std::strerror(errno));
  ::fchmod(fd_, 0644);
  slot_ = register_temp(temp_);  // -1 (table full) only loses the cleanup on signals
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) discard();
}

void AtomicFile::write(const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw ToolError(target_, std::string("write error: ") + std::strerror(errno));
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) throw ToolError(target_, std::string("fsync failed: ") + std::strerror(errno));
  if (::close(fd_) != 0) throw ToolError(target_, std::string("close failed: ") + std::strerror(errno));
  fd_ = -1;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_.c_str());
    unregister_temp(slot_);
    slot_ = -1;
    throw ToolError(target_, std::string("cannot rename into place: ") + std::strerror(err));
  }
  unregister_temp(slot_);
  slot_ = -1;
  int dfd = ::open(dir_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void AtomicFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  unregister_temp(slot_);
  slot_ = -1;
}

void commit_together(std::initializer_list<AtomicFile*> files) {
  bool first = true;
  for (AtomicFile* f : files) {
    if (!first && ::unlink(f->target().c_str()) != 0 && errno != ENOENT)
      throw ToolError(f->target(), std::string("cannot remove the previous file: ") + std::strerror(errno));
    first = false;
  }
  for (AtomicFile* f : files) f->commit();
}

}  // namespace suite
