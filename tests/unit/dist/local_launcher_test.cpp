// The launcher's argument handling and its refusal inside a launched rank.
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "common/cli/error.h"
#include "train/dist/launch_env.h"
#include "train/dist/local_launcher.h"

using gpt::dist::child_arguments;
using gpt::dist::find_nproc_per_node;
using Args = std::vector<std::string>;

namespace {
struct Argv {
  std::vector<std::string> held;
  std::vector<char*> ptrs;
  explicit Argv(std::vector<std::string> a) : held(std::move(a)) {
    for (auto& s : held) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(held.size()); }
  char** argv() { return ptrs.data(); }
};
}  // namespace

TEST_CASE("launcher: --nproc-per-node is found and removed; cpu children share the cores") {
  Argv a({"gpt-train", "--nproc-per-node", "3", "--num-layers", "2"});
  CHECK(find_nproc_per_node(a.argc(), a.argv()) == 3);
  CHECK(child_arguments(a.argc(), a.argv(), 3, 8) ==
        Args{"--num-layers", "2", "--cpu-threads", "2"});
  Argv b({"gpt-train", "--nproc-per-node=4", "--device", "cuda", "--lr", "1e-4"});
  CHECK(find_nproc_per_node(b.argc(), b.argv()) == 4);
  CHECK(child_arguments(b.argc(), b.argv(), 4, 64) == Args{"--device", "cuda", "--lr", "1e-4"});
  Argv c({"gpt-train", "--device=cpu", "--cpu-threads", "5", "--nproc-per-node", "2"});
  CHECK(child_arguments(c.argc(), c.argv(), 2, 2) == Args{"--device=cpu", "--cpu-threads", "5"});
  Argv d({"gpt-train", "--nproc-per-node", "4"});
  CHECK(child_arguments(d.argc(), d.argv(), 4, 2) == Args{"--cpu-threads", "1"});
  Argv none({"gpt-train", "--num-layers", "2"});
  CHECK(find_nproc_per_node(none.argc(), none.argv()) == 0);
  for (const char* bad : {"0", "x", "-1", "2x"}) {
    Argv e({"gpt-train", "--nproc-per-node", bad});
    CHECK_THROWS_AS(find_nproc_per_node(e.argc(), e.argv()), suite::UsageError);
  }
  Argv missing({"gpt-train", "--nproc-per-node"});
  CHECK_THROWS_AS(find_nproc_per_node(missing.argc(), missing.argv()), suite::UsageError);
}

TEST_CASE("launcher: refused inside a launched rank") {
  auto env = [](std::map<std::string, std::string> m) {
    auto held = std::make_shared<std::map<std::string, std::string>>(std::move(m));
    return gpt::dist::EnvLookup([held](const char* n) -> const char* {
      auto it = held->find(n);
      return it == held->end() ? nullptr : it->second.c_str();
    });
  };
  CHECK(gpt::dist::launched_rank_reason(env({})) == "");
  CHECK(gpt::dist::launched_rank_reason(env({{"RANK", "1"}})) ==
        "RANK=1 is set: this process is already a rank");
  CHECK(gpt::dist::launched_rank_reason(
            env({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "4"}})) ==
        "this process is one of the 4 tasks of an srun step");
  CHECK(gpt::dist::launched_rank_reason(
            env({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}})) == "");
}
