#include "common/cli/options.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/cli/error.h"
#include "common/cli/numbers.h"

#ifndef SUITE_VERSION
#define SUITE_VERSION "0.0.0"
#endif
#ifndef SUITE_GIT_REV
#define SUITE_GIT_REV "unknown"
#endif

namespace suite {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

Shard parse_shard(const std::string& text, const char* what) {
  const auto slash = text.find('/');
  if (slash != std::string::npos) {
    const std::optional<unsigned long> i = parse_number<unsigned long>(text.substr(0, slash));
    const std::optional<unsigned long> n = parse_number<unsigned long>(text.substr(slash + 1));
    if (i && n && *i < *n && *n <= 1u << 30) return Shard{static_cast<uint32_t>(*i), static_cast<uint32_t>(*n)};
  }
  throw UsageError(std::string(what) + " must be I/N with 0 <= I < N, got '" + text + "'");
}

namespace {

// One Slurm array variable as a number; a missing or non-numeric one is a usage error naming it.
long slurm_number(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text)
    throw UsageError(std::string("--shard slurm: ") + name + " is not set (not a Slurm array task?)");
  const std::optional<long> v = parse_number<long>(text);
  if (!v || *v < 0)
    throw UsageError(std::string("--shard slurm: ") + name + " is not a number: '" + text + "'");
  return *v;
}

}  // namespace

Shard shard_from_slurm() {
  long id = slurm_number("SLURM_ARRAY_TASK_ID");
  long count = slurm_number("SLURM_ARRAY_TASK_COUNT");
  long min = slurm_number("SLURM_ARRAY_TASK_MIN");
  return parse_shard(std::to_string(id - min) + "/" + std::to_string(count),
                     "--shard slurm (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN / SLURM_ARRAY_TASK_COUNT)");
}

ShardPlan plan_shard(const Shard& shard, size_t input_count) {
  ShardPlan plan{shard, {}, false};
  const uint32_t n = static_cast<uint32_t>(std::max<size_t>(input_count, 1));
  plan.by_document = shard.active() && n < shard.count;
  for (uint32_t f = 0; f < n; ++f)
    if (plan.by_document || f % shard.count == shard.index) plan.inputs.push_back(f);
  return plan;
}

namespace {
const char* const kShardHelp =
    "--shard I/N: with at least N input files, shard I reads the files f with f % N == I (0-based, in\n"
    "-i order); with fewer, it reads every input and keeps the documents d with d % N == I (d counted\n"
    "from 0 over all inputs; pages for wiki-extract). The N shards' outputs together are the output of\n"
    "one process. --shard slurm takes I = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN and\n"
    "N = SLURM_ARRAY_TASK_COUNT. Without --shard all input is processed, whatever the environment holds.";
}  // namespace

OnError parse_on_error(const std::string& text) {
  if (text == "fail") return OnError::kFail;
  if (text == "skip") return OnError::kSkip;
  if (text == "replace") return OnError::kReplace;
  throw UsageError("--on-error must be fail, skip or replace, got '" + text + "'");
}

const char* on_error_name(OnError e) {
  switch (e) {
    case OnError::kFail: return "fail";
    case OnError::kSkip: return "skip";
    case OnError::kReplace: return "replace";
  }
  return "fail";
}

Cli::Cli(ToolSpec spec) : spec_(spec), tool_options_("Options of " + std::string(spec.name)), common_("Common options") {
  common_.add_options()("help,h", "show this help with a worked example and exit")("version", "print the version and exit");
  if (spec_.multi_input)
    common_.add_options()("input,i", po::value<std::vector<std::string>>()->composing(),
                          "input file, plain, zstd, xz, lzma, bzip2 or gzip (detected by content); repeatable; '-' or none: stdin");
  else
    common_.add_options()("input,i", po::value<std::vector<std::string>>(), "input file (plain/zstd/xz/lzma/bzip2/gzip); '-': stdin");
  if (spec_.has_output)
    common_.add_options()("output,o", po::value<std::string>()->default_value("-"),
                          "output file, compressed when it ends in .zst, .xz, .gz or .bz2, written atomically; '-': stdout");
  common_.add_options()("threads", po::value<std::string>(&threads_arg_)->default_value("all"),
                        "worker threads (default: all cores); output order never depends on it")(
      "quiet,q", po::bool_switch(), "no progress lines (skips and repairs are still summarised)")(
      "on-error", po::value<std::string>(&on_error_arg_)->default_value("fail"),
      "bad input (invalid JSON or UTF-8, over-long line, missing field): fail (exit 1 naming file:line), "
      "skip (count it in the final summary), replace (invalid UTF-8 becomes U+FFFD; other errors skip)")(
      "max-line-bytes", ranged<uint64_t>(1)->default_value(1ull << 30), "longest input line accepted (bytes)");
  if (spec_.reads_text)
    common_.add_options()("json-keys", po::value<std::vector<std::string>>()->multitoken(),
                          "JSON keys holding the text (default: text)");
  if (spec_.shards)
    common_.add_options()("shard", po::value<std::string>(&shard_arg_),
                          "I/N: process shard I of N (0-based; by file, or by document with fewer "
                          "than N files: see below); 'slurm': I/N from the Slurm array variables; "
                          "default: all input");
}

std::string Cli::help_text() const {
  std::ostringstream os;
  os << "Usage: " << spec_.name << " [options]\n" << spec_.summary << "\n\n" << tool_options_ << "\n" << common_;
  if (*spec_.details) os << "\n" << spec_.details << "\n";
  if (spec_.shards) os << "\n" << kShardHelp << "\n";
  os << "\nExample:\n" << spec_.example << "\n"
     << "\nExit status: 0 success, 1 bad input or I/O failure (message `" << spec_.name
     << ": file:line: what`), 2 usage error.\n";
  return os.str();
}

CommonOptions Cli::parse(int argc, char** argv) {
  po::options_description all;
  all.add(tool_options_).add(common_);
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional_).run(), vm_);
    if (vm_.count("help")) {
      std::cout << help_text();
      std::exit(0);
    }
    if (vm_.count("version")) {
      std::cout << spec_.name << " " << SUITE_VERSION << " (" << SUITE_GIT_REV << ")\n";
      std::exit(0);
    }
    po::notify(vm_);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  CommonOptions o;
  if (vm_.count("input")) o.inputs = vm_["input"].as<std::vector<std::string>>();
  if (spec_.has_output) o.output = vm_["output"].as<std::string>();
  if (threads_arg_ == "all" || threads_arg_ == "0") {
    o.threads = available_cores();
  } else {
    const std::optional<int> n = parse_number<int>(threads_arg_);
    if (!n || *n < 1 || *n > 4096)
      throw UsageError("--threads must be all or an integer in 1..4096, got '" + threads_arg_ + "'");
    o.threads = *n;
  }
  o.quiet = vm_["quiet"].as<bool>();
  o.on_error = parse_on_error(on_error_arg_);
  o.max_line_bytes = vm_["max-line-bytes"].as<uint64_t>();
  if (spec_.reads_text && vm_.count("json-keys")) {
    o.json_keys = vm_["json-keys"].as<std::vector<std::string>>();
    if (o.json_keys.empty()) throw UsageError("--json-keys needs at least one key");
  }
  // Never from the environment unless asked: a Slurm array that hands each task its own file
  // must not have each task keep 1/N of it.
  if (spec_.shards && !shard_arg_.empty())
    o.shard = shard_arg_ == "slurm" ? shard_from_slurm() : parse_shard(shard_arg_);
  return o;
}

}  // namespace suite

namespace suite {
namespace {

template <class T>
std::string bound_text(T v, bool open) {
  if (open) return "";
  if constexpr (std::is_floating_point_v<T>) {
    std::ostringstream os;
    os << v;
    return os.str();
  } else {
    return std::to_string(v);
  }
}

}  // namespace

template <class T>
std::string RangedValue<T>::range_text() const {
  const bool real = std::is_floating_point_v<T>;
  return std::string(real ? "X[" : "N[") + bound_text(min_, std::is_signed_v<T> && min_ == std::numeric_limits<T>::lowest()) + ".." +
         bound_text(max_, max_ == std::numeric_limits<T>::max()) + "]";
}

template <class T>
void RangedValue<T>::xparse(boost::any& value_store, const std::vector<std::string>& tokens) const {
  const std::string token = tokens.empty() ? std::string() : tokens.back();
  std::optional<T> v = parse_number<T>(token);
  if (!v || *v < min_ || *v > max_) {
    const std::string what = std::is_floating_point_v<T> ? "a number" : "an integer";
    const std::string lo = bound_text(min_, std::is_signed_v<T> && min_ == std::numeric_limits<T>::lowest());
    const std::string hi = bound_text(max_, max_ == std::numeric_limits<T>::max());
    std::string range = lo.empty() && hi.empty() ? "" : lo.empty() ? " <= " + hi : hi.empty() ? " >= " + lo
                                                                                              : " in " + lo + ".." + hi;
    throw po::error_with_option_name("%canonical_option% must be " + what + range + ", got '" + token + "'");
  }
  value_store = *v;
}

template class RangedValue<int>;
template class RangedValue<long>;
template class RangedValue<unsigned>;
template class RangedValue<unsigned long>;
template class RangedValue<unsigned long long>;
template class RangedValue<double>;

}  // namespace suite
