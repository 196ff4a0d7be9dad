#include "common/cli/error.h"

#include <cstdio>
#include <new>

namespace suite {

namespace {
std::string& tool_name_storage() {
  static std::string name = "suite";
  return name;
}
}  // namespace

std::string location(std::string_view file, uint64_t line) {
  std::string out(file.empty() ? std::string_view("<stdin>") : file);
  if (line > 0) out += ":" + std::to_string(line);
  return out;
}

const std::string& tool_name() { return tool_name_storage(); }
void set_tool_name(std::string name) { tool_name_storage() = std::move(name); }

std::string format_error(const ToolError& e) {
  std::string out = tool_name() + ": ";
  if (!e.where().empty()) out += e.where() + ": ";
  out += e.what();
  return out;
}

int run_tool(const char* name, int argc, char** argv, int (*body)(int, char**)) {
  set_tool_name(name);
  try {
    return body(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s\nTry '%s --help' for more information.\n", name, e.what(), name);
    return kExitUsage;
  } catch (const ToolError& e) {
    std::fprintf(stderr, "%s\n", format_error(e).c_str());
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory\n", name);
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return kExitFailure;
  }
}

}  // namespace suite
