// Rank discovery: flags over torchrun over Slurm (only in an srun step), and Slurm's host lists.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>

#include "common/cli/error.h"
#include "train/dist/launch_env.h"

using gpt::dist::discover_launch;
using gpt::dist::expand_slurm_nodelist;
using gpt::dist::LaunchFlags;
using gpt::dist::LaunchInfo;

namespace {
gpt::dist::EnvLookup env_of(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}
using Hosts = std::vector<std::string>;
}  // namespace

TEST_CASE("Slurm node lists expand with zero padding kept") {
  CHECK(expand_slurm_nodelist("n060") == Hosts{"n060"});
  CHECK(expand_slurm_nodelist("n[060-062]") == Hosts{"n060", "n061", "n062"});
  CHECK(expand_slurm_nodelist("n[060-062,070],gpu[1-2]") ==
        Hosts{"n060", "n061", "n062", "n070", "gpu1", "gpu2"});
  CHECK(expand_slurm_nodelist("a,b[9-11]") == Hosts{"a", "b9", "b10", "b11"});
  CHECK(expand_slurm_nodelist("rack[1-2]-gpu") == Hosts{"rack1-gpu", "rack2-gpu"});
  CHECK(expand_slurm_nodelist("node-1.cluster") == Hosts{"node-1.cluster"});
  for (const char* bad : {"", "n[1-", "n[]", "n[3-1]", "n[a]", "a,,b", "a,", "n[1][2]"})
    CHECK_THROWS_AS(expand_slurm_nodelist(bad), suite::UsageError);
}

TEST_CASE("no launcher: one process") {
  auto info = discover_launch({}, env_of({}));
  CHECK(info.source == LaunchInfo::Source::kSingle);
  CHECK(info.world_size == 1);
  CHECK(info.rank == 0);
  CHECK_FALSE(info.distributed());
  CHECK(info.note.empty());
}

TEST_CASE("torchrun's variables") {
  auto info = discover_launch({}, env_of({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                          {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "head"},
                                          {"MASTER_PORT", "29400"},
                                          {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                          {"TORCHELASTIC_RESTART_COUNT", "2"}}));
  CHECK(info.source == LaunchInfo::Source::kTorchrun);
  CHECK(info.rank == 3);
  CHECK(info.world_size == 8);
  CHECK(info.local_rank == 1);
  CHECK(info.local_world_size == 2);
  CHECK(info.master_addr == "head");
  CHECK(info.master_port == 29400);
  CHECK(info.agent_store);
  CHECK(info.restart_count == 2);
  auto plain = discover_launch({}, env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"},
                                           {"TORCHELASTIC_USE_AGENT_STORE", "False"}}));
  CHECK_FALSE(plain.agent_store);
  CHECK(plain.master_port == 29500);
  CHECK_THROWS_AS(discover_launch({}, env_of({{"RANK", "0"}})), suite::UsageError);
  CHECK_THROWS_AS(discover_launch({}, env_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}})),
                  suite::UsageError);
  CHECK_THROWS_AS(discover_launch({}, env_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}})),
                  suite::UsageError);
}

TEST_CASE("Slurm's variables only inside an srun step") {
  std::map<std::string, std::string> step = {
      {"SLURM_STEP_ID", "0"},          {"SLURM_PROCID", "5"},
      {"SLURM_STEP_NUM_TASKS", "8"},   {"SLURM_LOCALID", "1"},
      {"SLURM_STEP_NODELIST", "n[060-063]"}, {"SLURM_JOB_ID", "123456"},
      {"SLURM_STEP_TASKS_PER_NODE", "2(x4)"}, {"SLURM_NODEID", "2"},
      {"SLURM_NTASKS", "8"}};
  auto info = discover_launch({}, env_of(step));
  CHECK(info.source == LaunchInfo::Source::kSlurm);
  CHECK(info.rank == 5);
  CHECK(info.world_size == 8);
  CHECK(info.local_rank == 1);
  CHECK(info.local_world_size == 2);
  CHECK(info.master_addr == "n060");
  CHECK(info.master_port == 61000 + 123456 % 4536);
  CHECK_FALSE(info.agent_store);

  auto second = step;
  second["SLURM_STEP_ID"] = "3";
  CHECK(discover_launch({}, env_of(second)).master_port == 61000 + 123456 % 4536 + 3);
  auto with_port = step;
  with_port["MASTER_PORT"] = "12345";
  with_port["MASTER_ADDR"] = "elsewhere";
  auto kept = discover_launch({}, env_of(with_port));
  CHECK(kept.master_port == 12345);
  CHECK(kept.master_addr == "elsewhere");

  // A batch script (no step id, or the batch step's special id): one process and a note.
  auto batch = step;
  batch.erase("SLURM_STEP_ID");
  auto one = discover_launch({}, env_of(batch));
  CHECK(one.world_size == 1);
  CHECK(one.source == LaunchInfo::Source::kSingle);
  CHECK(one.note.find("SLURM_NTASKS=8") != std::string::npos);
  CHECK(one.note.find("srun") != std::string::npos);
  batch["SLURM_STEP_ID"] = "4294967294";
  CHECK(discover_launch({}, env_of(batch)).world_size == 1);
  // MASTER_ADDR / MASTER_PORT alone do not make a multi-process job.
  batch["MASTER_PORT"] = "1234";
  CHECK(discover_launch({}, env_of(batch)).master_port == 0);
}

TEST_CASE("torchrun's variables win over Slurm's; flags win over both") {
  auto env = env_of({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "2"},
                     {"SLURM_STEP_NODELIST", "gpu[1-2]"}, {"SLURM_JOB_ID", "7"},
                     {"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "3"},
                     {"MASTER_ADDR", "tr-head"}, {"MASTER_PORT", "29401"}});
  auto tr = discover_launch({}, env);
  CHECK(tr.source == LaunchInfo::Source::kTorchrun);
  CHECK(tr.rank == 3);
  CHECK(tr.world_size == 4);
  CHECK(tr.master_addr == "tr-head");
  LaunchFlags f;
  f.rank = 0;
  f.world_size = 2;
  f.local_rank = 0;
  f.master_addr = "10.0.0.1";
  f.master_port = 4000;
  auto fl = discover_launch(f, env);
  CHECK(fl.source == LaunchInfo::Source::kFlags);
  CHECK(fl.rank == 0);
  CHECK(fl.world_size == 2);
  CHECK(fl.local_rank == 0);
  CHECK(fl.master_addr == "10.0.0.1");
  CHECK(fl.master_port == 4000);

  LaunchFlags only;
  only.rank = 1;
  only.world_size = 3;
  auto o = discover_launch(only, env_of({}));
  CHECK(o.local_rank == 1);
  CHECK(o.master_addr == "127.0.0.1");
  CHECK(o.master_port == 29500);
  LaunchFlags no_rank;
  no_rank.world_size = 2;
  CHECK_THROWS_AS(discover_launch(no_rank, env_of({})), suite::UsageError);
}
