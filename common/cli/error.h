// Errors and exit codes shared by every tool.
//
// A ToolError is a failure on the data or the environment: it is printed as one line
// `tool: where: what` (where = "file:line", "file" or empty) and the tool exits 1.
// A UsageError is a mistake on the command line: printed the same way, exit 2.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace suite {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

class ToolError : public std::runtime_error {
 public:
  ToolError(std::string where, const std::string& what)
      : std::runtime_error(what), where_(std::move(where)) {}
  explicit ToolError(const std::string& what) : std::runtime_error(what) {}
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "file:line" for messages; line 0 gives just the file.
std::string location(std::string_view file, uint64_t line = 0);

// The tool name used as the prefix of every message (set once by run_tool).
const std::string& tool_name();
void set_tool_name(std::string name);

// Formats `tool: where: what` (or `tool: what`) for an error.
std::string format_error(const ToolError& e);

// Runs a tool's body, turning ToolError / UsageError / std::exception into one stderr line and
// the documented exit code. Every tools/<name>/main.cpp ends in `return suite::run_tool(...)`.
int run_tool(const char* name, int argc, char** argv, int (*body)(int, char**));

}  // namespace suite
