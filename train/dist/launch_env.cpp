// Rank discovery: explicit flags, then torchrun's variables, then (only inside an srun step) Slurm's.
#include "train/dist/launch_env.h"

#include <charconv>
#include <cstdlib>

#include "common/cli/error.h"

namespace gpt::dist {
namespace {

// torchrun's default when a port is needed and nothing names one.
constexpr int kDefaultPort = 29500;

int parse_int(const std::string& text, const std::string& what, long lo, long hi) {
  long v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  auto r = std::from_chars(b, e, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != e || v < lo || v > hi)
    throw suite::UsageError(what + "=" + text + " is not an integer in [" + std::to_string(lo) +
                            ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

struct Env {
  const EnvLookup& get;
  bool has(const char* name) const {
    const char* v = get(name);
    return v != nullptr;
  }
  std::string str(const char* name) const {
    const char* v = get(name);
    return v ? std::string(v) : std::string();
  }
  int integer(const char* name, long lo, long hi) const { return parse_int(str(name), name, lo, hi); }
};

// "4(x2),3" (tasks per node, Slurm's compressed form) -> {4, 4, 3}.
std::vector<int> expand_tasks_per_node(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find(',', i);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(i, end - i);
    int repeat = 1;
    size_t paren = item.find("(x");
    if (paren != std::string::npos && item.back() == ')') {
      repeat = parse_int(item.substr(paren + 2, item.size() - paren - 3),
                         "SLURM_STEP_TASKS_PER_NODE", 1, 1 << 20);
      item.resize(paren);
    }
    int n = parse_int(item, "SLURM_STEP_TASKS_PER_NODE", 1, 1 << 20);
    out.insert(out.end(), repeat, n);
    i = end + 1;
  }
  return out;
}

bool truthy(const std::string& v) { return v == "True" || v == "true" || v == "1"; }

}  // namespace

std::vector<std::string> expand_slurm_nodelist(const std::string& list) {
  auto bad = [&](const std::string& why) {
    return suite::UsageError("node list '" + list + "': " + why);
  };
  std::vector<std::string> hosts;
  size_t i = 0;
  while (i < list.size()) {
    // One item: a prefix, then optionally a bracketed range list, then optionally a suffix.
    std::string prefix;
    while (i < list.size() && list[i] != ',' && list[i] != '[') prefix += list[i++];
    if (i < list.size() && list[i] == '[') {
      size_t close = list.find(']', i);
      if (close == std::string::npos) throw bad("unclosed '['");
      std::string ranges = list.substr(i + 1, close - i - 1);
      i = close + 1;
      std::string suffix;
      while (i < list.size() && list[i] != ',') {
        if (list[i] == '[') throw bad("more than one bracket in a host name");
        suffix += list[i++];
      }
      if (ranges.empty()) throw bad("empty '[]'");
      size_t j = 0;
      while (j <= ranges.size()) {
        size_t end = ranges.find(',', j);
        if (end == std::string::npos) end = ranges.size();
        std::string r = ranges.substr(j, end - j);
        size_t dash = r.find('-');
        std::string lo = r.substr(0, dash);
        std::string hi = dash == std::string::npos ? lo : r.substr(dash + 1);
        auto digits = [](const std::string& s) {
          return !s.empty() && s.size() <= 9 &&
                 s.find_first_not_of("0123456789") == std::string::npos;
        };
        if (!digits(lo) || !digits(hi)) throw bad("'" + r + "' is not a number or a range");
        long a = std::stol(lo), b = std::stol(hi);
        if (b < a) throw bad("range '" + r + "' runs backwards");
        if (b - a > 1000000) throw bad("range '" + r + "' is too long");
        size_t width = lo.size();  // zero padding kept: n[060-067] -> n060 ... n067
        for (long v = a; v <= b; ++v) {
          std::string num = std::to_string(v);
          if (num.size() < width) num.insert(0, width - num.size(), '0');
          hosts.push_back(prefix + num + suffix);
        }
        j = end + 1;
      }
    } else {
      if (prefix.empty()) throw bad("empty host name");
      hosts.push_back(prefix);
    }
    if (i < list.size()) {
      if (list[i] != ',') throw bad("unexpected '" + std::string(1, list[i]) + "'");
      ++i;
      if (i == list.size()) throw bad("trailing ','");
    }
  }
  if (hosts.empty()) throw bad("no host");
  return hosts;
}

LaunchInfo discover_launch(const LaunchFlags& flags, const EnvLookup& getenv) {
  Env env{getenv};
  LaunchInfo info;
  const bool torchrun = env.has("RANK") || env.has("WORLD_SIZE");
  // Slurm gives its batch, extern and interactive steps ids near 2^32; only a real srun step counts.
  const std::string step_id = env.str("SLURM_STEP_ID");
  const bool in_srun_step = env.has("SLURM_STEP_ID") && env.has("SLURM_PROCID") &&
                            !step_id.empty() && step_id.size() < 10 &&
                            step_id.find_first_not_of("0123456789") == std::string::npos;
  const bool any_flag = flags.rank >= 0 || flags.world_size >= 0;

  // Defaults from the lowest-precedence source that applies, then overridden field by field.
  if (in_srun_step) {
    info.source = LaunchInfo::Source::kSlurm;
    info.rank = env.integer("SLURM_PROCID", 0, 1 << 24);
    const char* ntasks = env.has("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
    info.world_size = env.has(ntasks) ? env.integer(ntasks, 1, 1 << 24) : 1;
    info.local_rank = env.has("SLURM_LOCALID") ? env.integer("SLURM_LOCALID", 0, 1 << 20) : 0;
    info.local_world_size = info.world_size;
    if (env.has("SLURM_STEP_TASKS_PER_NODE")) {
      auto per_node = expand_tasks_per_node(env.str("SLURM_STEP_TASKS_PER_NODE"));
      int node = env.has("SLURM_NODEID") ? env.integer("SLURM_NODEID", 0, 1 << 20) : 0;
      if (node < static_cast<int>(per_node.size())) info.local_world_size = per_node[node];
    }
    const char* list_var = env.has("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST"
                           : env.has("SLURM_JOB_NODELIST") ? "SLURM_JOB_NODELIST"
                                                           : "SLURM_NODELIST";
    if (env.has(list_var)) info.master_addr = expand_slurm_nodelist(env.str(list_var)).front();
    if (env.has("SLURM_JOB_ID")) {
      // NVIDIA's container hook: 61000 + job id % 4536, plus the step id for steps after the
      // first so that two steps of one job do not collide (kept inside the 61000-65535 band).
      long job = std::strtol(env.str("SLURM_JOB_ID").c_str(), nullptr, 10);
      long step = std::stol(step_id);
      info.master_port = 61000 + static_cast<int>((job % 4536 + step) % 4536);
    } else {
      info.master_port = kDefaultPort;
    }
  }
  if (torchrun) {
    if (!env.has("RANK") || !env.has("WORLD_SIZE"))
      throw suite::UsageError(std::string(env.has("RANK") ? "WORLD_SIZE" : "RANK") +
                              " is not set although " + (env.has("RANK") ? "RANK" : "WORLD_SIZE") +
                              " is (torchrun sets both)");
    info.source = LaunchInfo::Source::kTorchrun;
    info.world_size = env.integer("WORLD_SIZE", 1, 1 << 24);
    info.rank = env.integer("RANK", 0, 1 << 24);
    info.local_world_size = env.has("LOCAL_WORLD_SIZE")
                                ? env.integer("LOCAL_WORLD_SIZE", 1, 1 << 20)
                                : info.world_size;
    info.local_rank = env.has("LOCAL_RANK") ? env.integer("LOCAL_RANK", 0, 1 << 20)
                                            : info.rank % info.local_world_size;
    info.agent_store = truthy(env.str("TORCHELASTIC_USE_AGENT_STORE"));
    if (env.has("TORCHELASTIC_RESTART_COUNT"))
      info.restart_count = env.integer("TORCHELASTIC_RESTART_COUNT", 0, 1 << 20);
  }
  if (env.has("MASTER_ADDR") && (torchrun || in_srun_step || any_flag))
    info.master_addr = env.str("MASTER_ADDR");
  if (env.has("MASTER_PORT") && (torchrun || in_srun_step || any_flag))
    info.master_port = env.integer("MASTER_PORT", 1, 65535);

  if (any_flag) {
    info.source = LaunchInfo::Source::kFlags;
    info.agent_store = false;  // flags name our own rendezvous, never torchrun's store
    if (flags.world_size >= 0) info.world_size = flags.world_size;
    if (flags.rank >= 0) info.rank = flags.rank;
    if (flags.world_size >= 0 && !torchrun && !in_srun_step) info.local_world_size = info.world_size;
    if (flags.local_rank >= 0) {
      info.local_rank = flags.local_rank;
    } else if (!torchrun && !in_srun_step) {
      info.local_rank = info.rank;
    }
    if (flags.world_size > 1 && flags.rank < 0 && !torchrun && !in_srun_step)
      throw suite::UsageError("--world-size " + std::to_string(flags.world_size) +
                              " needs --rank");
  }
  if (!flags.master_addr.empty()) info.master_addr = flags.master_addr;
  if (flags.master_port > 0) info.master_port = flags.master_port;

  if (info.world_size < 1) throw suite::UsageError("--world-size must be at least 1");
  if (info.rank < 0 || info.rank >= info.world_size)
    throw suite::UsageError("rank " + std::to_string(info.rank) + " is outside world size " +
                            std::to_string(info.world_size));
  if (info.local_rank < 0) throw suite::UsageError("--local-rank must not be negative");
  if (info.distributed() && info.master_port == 0) info.master_port = kDefaultPort;
  if (info.local_world_size < 1) info.local_world_size = 1;

  if (!info.distributed() && !in_srun_step && !torchrun && !any_flag &&
      env.has("SLURM_NTASKS")) {
    const std::string n = env.str("SLURM_NTASKS");
    if (n != "1" && !n.empty())
      info.note = "SLURM_NTASKS=" + n +
                  " but this is not an srun step (SLURM_STEP_ID is unset): running one process; "
                  "start gpt-train with srun to run " + n + " ranks";
  }
  return info;
}

std::string launched_rank_reason(const EnvLookup& getenv) {
  Env env{getenv};
  for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK"})
    if (env.has(v)) return std::string(v) + "=" + env.str(v) + " is set: this process is already a rank";
  if (env.has("SLURM_STEP_ID") && env.has("SLURM_STEP_NUM_TASKS") &&
      env.str("SLURM_STEP_NUM_TASKS") != "1")
    return "this process is one of the " + env.str("SLURM_STEP_NUM_TASKS") +
           " tasks of an srun step";
  return "";
}

std::string launched_rank_reason() {
  return launched_rank_reason([](const char* name) -> const char* { return std::getenv(name); });
}

int environment_master_port() {
  const char* v = std::getenv("MASTER_PORT");
  return v ? parse_int(v, "MASTER_PORT", 1, 65535) : 0;
}

void default_nccl_environment() { setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); }

LaunchInfo discover_launch(const LaunchFlags& flags) {
  return discover_launch(flags, [](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace gpt::dist
