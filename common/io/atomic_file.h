// Files that appear whole or not at all: written under a temporary name in the target's directory,
// then fsync'ed and renamed over the target. An interrupted run leaves only a temporary file whose
// name (".NAME.tmp.XXXXXX") no reader takes for the real output; SIGINT/SIGTERM/SIGHUP remove it.
#pragma once

#include <initializer_list>
#include <string>

namespace suite {

class AtomicFile {
 public:
  explicit AtomicFile(std::string target);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // discards the temporary file unless commit() ran

  int fd() const { return fd_; }
  const std::string& target() const { return target_; }
  const std::string& temp_path() const { return temp_; }
  void write(const char* data, size_t n);
  // fsync, close, rename over the target, fsync the directory.
  void commit();
  // Close and delete the temporary file.
  void discard();

 private:
  std::string target_;
  std::string temp_;
  int fd_ = -1;
  int slot_ = -1;  // entry in the signal-cleanup table
};

// Commits files that readers use together (a .bin and its .idx, vocab.json and merges.txt): the old
// targets of all but the first are removed first, then the files are renamed in order, so that a run
// killed between two renames leaves a set with a file missing, never a new file beside an old partner.
void commit_together(std::initializer_list<AtomicFile*> files);

}  // namespace suite
