// A problem with one document (missing field, wrong type, ...). The JSONL runner turns it into
// `file:line: message` and exit 1, or, with --on-error=skip, into a count under `reason`.
#pragma once

#include <stdexcept>
#include <string>

namespace suite {

class DocumentError : public std::runtime_error {
 public:
  DocumentError(std::string reason, const std::string& message)
      : std::runtime_error(message), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

}  // namespace suite
