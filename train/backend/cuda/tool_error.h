// The CUDA backend's failures (CUDA runtime errors, its own checks) surface as suite::ToolError:
// one line, exit 1, for the tools.
#pragma once

#include <exception>
#include <string>

#include "common/cli/error.h"

namespace gpt {

template <class F>
auto cuda_tool_error(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const suite::ToolError&) {
    throw;
  } catch (const std::exception& e) {
    throw suite::ToolError(std::string("cuda backend: ") + e.what());
  }
}

}  // namespace gpt
