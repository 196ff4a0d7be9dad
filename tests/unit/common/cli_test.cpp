// common/cli: the shared option set, shards from Slurm, usage errors.
#include <doctest/doctest.h>

#include <cstdlib>
#include <vector>

#include "common/cli/error.h"
#include "common/cli/options.h"

using namespace suite;

namespace {
CommonOptions parse(std::vector<const char*> args, bool shards = true) {
  args.insert(args.begin(), "tool");
  Cli cli({.name = "tool", .summary = "s", .example = "e", .shards = shards});
  return cli.parse(static_cast<int>(args.size()), const_cast<char**>(args.data()));
}
}  // namespace

TEST_CASE("defaults and the common options") {
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("SLURM_ARRAY_TASK_COUNT");
  CommonOptions o = parse({});
  CHECK(o.inputs.empty());
  CHECK(o.output == "-");
  CHECK(o.threads == available_cores());
  CHECK(o.on_error == OnError::kFail);
  CHECK(o.json_keys == std::vector<std::string>{"text"});
  CHECK(!o.shard.active());
  o = parse({"-i", "a", "--input", "b", "-o", "x.zst", "--threads", "3", "--quiet", "--on-error=skip",
             "--json-keys", "text", "title", "--shard", "2/5"});
  CHECK(o.inputs == std::vector<std::string>{"a", "b"});
  CHECK(o.output == "x.zst");
  CHECK(o.threads == 3);
  CHECK(o.quiet);
  CHECK(o.on_error == OnError::kSkip);
  CHECK(o.json_keys == std::vector<std::string>{"text", "title"});
  CHECK(o.shard.index == 2);
  CHECK(o.shard.count == 5);
}

TEST_CASE("--shard defaults to the Slurm array variables") {
  setenv("SLURM_ARRAY_TASK_ID", "7", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "8", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "1", 1);  // arrays numbered 1..8
  CommonOptions o = parse({});
  CHECK(o.shard.index == 6);
  CHECK(o.shard.count == 8);
  CHECK(parse({"--shard", "0/2"}).shard.index == 0);  // the flag wins
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("SLURM_ARRAY_TASK_COUNT");
  unsetenv("SLURM_ARRAY_TASK_MIN");
}

TEST_CASE("usage mistakes are UsageErrors") {
  CHECK_THROWS_AS(parse({"--threads", "0x"}), UsageError);
  CHECK_THROWS_AS(parse({"--on-error", "maybe"}), UsageError);
  CHECK_THROWS_AS(parse({"--shard", "5/5"}), UsageError);
  CHECK_THROWS_AS(parse({"--shard", "1"}), UsageError);
  CHECK_THROWS_AS(parse({"--no-such-flag"}), UsageError);
  CHECK_THROWS_AS(parse({"--shard", "0/2"}, false), UsageError);  // tools that do not shard
}
