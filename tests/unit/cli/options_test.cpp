// common/cli: the shared option set, shards from Slurm, usage errors.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
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

namespace {
void set_array(const char* id, const char* count, const char* min) {
  setenv("SLURM_ARRAY_TASK_ID", id, 1);
  setenv("SLURM_ARRAY_TASK_COUNT", count, 1);
  setenv("SLURM_ARRAY_TASK_MIN", min, 1);
  setenv("SLURM_ARRAY_TASK_MAX", "8", 1);
}
void unset_array() {
  for (const char* v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX"})
    unsetenv(v);
}
}  // namespace

TEST_CASE("without --shard the Slurm array variables change nothing") {
  set_array("7", "8", "1");
  CHECK(!parse({}).shard.active());
  CHECK(parse({"--shard", "0/2"}).shard.count == 2);
  unset_array();
}

TEST_CASE("--shard slurm takes I/N from the array variables") {
  set_array("7", "8", "1");  // arrays numbered 1..8
  CommonOptions o = parse({"--shard", "slurm"});
  CHECK(o.shard.index == 6);
  CHECK(o.shard.count == 8);
  set_array("3", "4", "0");
  CHECK(parse({"--shard", "slurm"}).shard.index == 3);
  auto message = [](std::vector<const char*> args) {
    try {
      parse(args);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  set_array("x1", "4", "0");
  CHECK(message({"--shard", "slurm"}).find("SLURM_ARRAY_TASK_ID is not a number") != std::string::npos);
  set_array("1", "4", "");
  CHECK(message({"--shard", "slurm"}).find("SLURM_ARRAY_TASK_MIN is not set") != std::string::npos);
  unsetenv("SLURM_ARRAY_TASK_COUNT");
  CHECK(message({"--shard", "slurm"}).find("SLURM_ARRAY_TASK_COUNT is not set") != std::string::npos);
  unset_array();
  CHECK(message({"--shard", "slurm"}).find("SLURM_ARRAY_TASK_ID is not set") != std::string::npos);
}

TEST_CASE("usage mistakes are UsageErrors") {
  CHECK_THROWS_AS(parse({"--threads", "0x"}), UsageError);
  CHECK_THROWS_AS(parse({"--on-error", "maybe"}), UsageError);
  CHECK_THROWS_AS(parse({"--shard", "5/5"}), UsageError);
  CHECK_THROWS_AS(parse({"--shard", "1"}), UsageError);
  CHECK_THROWS_AS(parse({"--shard", "-1/4"}), UsageError);
  CHECK_THROWS_AS(parse({"--shard", "1/4x"}), UsageError);
  CHECK_THROWS_AS(parse({"--shard", " 1/4"}), UsageError);
  CHECK_THROWS_AS(parse({"--threads", " 4"}), UsageError);
  CHECK_THROWS_AS(parse({"--no-such-flag"}), UsageError);
  CHECK_THROWS_AS(parse({"--shard", "0/2"}, false), UsageError);  // tools that do not shard
}

TEST_CASE("--shard I/N: by file with at least N inputs, else by document") {
  ShardPlan p = plan_shard(Shard{1, 3}, 8);
  CHECK(!p.by_document);
  CHECK(p.inputs == std::vector<uint32_t>{1, 4, 7});
  CHECK(p.keeps(5));
  p = plan_shard(Shard{2, 3}, 2);
  CHECK(p.by_document);
  CHECK(p.inputs == std::vector<uint32_t>{0, 1});
  CHECK(p.keeps(5));
  CHECK(!p.keeps(4));
  p = plan_shard(Shard{0, 2}, 0);  // stdin: one input
  CHECK(p.by_document);
  CHECK(p.inputs == std::vector<uint32_t>{0});
  p = plan_shard(Shard{}, 0);
  CHECK(!p.by_document);
  CHECK(p.keeps(7));
  CHECK(p.inputs == std::vector<uint32_t>{0});
}

TEST_CASE("numeric options are read within their range, never wrapped") {
  auto parse_with = [](const char* value) {
    uint64_t count = 0;
    long level = 0;
    double ratio = 0;
    Cli cli({.name = "tool", .summary = "s", .example = "e"});
    cli.options().add_options()("count", ranged<uint64_t>(&count, 1, 1000), "c")("level", ranged<long>(&level, -5),
                                                                                   "l")("ratio", real(&ratio), "r");
    std::vector<const char*> args{"tool", "--count", value, "--level", value, "--ratio", value};
    std::string error;
    try {
      cli.parse(static_cast<int>(args.size()), const_cast<char**>(args.data()));
    } catch (const UsageError& e) {
      error = e.what();
    }
    return error;
  };
  CHECK(parse_with("7") == "");
  CHECK(parse_with("-1") == "--count must be an integer in 1..1000, got '-1'");
  CHECK(parse_with("0") == "--count must be an integer in 1..1000, got '0'");
  CHECK(parse_with("18446744073709551617") == "--count must be an integer in 1..1000, got '18446744073709551617'");
  CHECK(parse_with("1.5") == "--count must be an integer in 1..1000, got '1.5'");
  CHECK(parse_with("abc") == "--count must be an integer in 1..1000, got 'abc'");
  uint64_t n = 0;
  Cli cli({.name = "tool", .summary = "s", .example = "e"});
  cli.options().add_options()("n", ranged<uint64_t>(&n, 0), "n");
  std::vector<const char*> args{"tool", "--n", "-1"};
  CHECK_THROWS_WITH_AS(cli.parse(3, const_cast<char**>(args.data())), "--n must be an integer >= 0, got '-1'",
                       UsageError);
}
