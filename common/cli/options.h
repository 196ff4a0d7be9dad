// The option set every tool shares, on Boost.Program_options.
//
//   -i/--input FILE (repeatable; default stdin)   -o/--output FILE (default stdout)
//   --threads N (default: all cores)  --quiet  --on-error fail|skip|replace  --max-line-bytes N
//   --json-keys K... (tools that read text)  --shard I/N|slurm (tools that shard; default: no
//   sharding, whatever the environment holds)  --help (with a worked example)  --version
//
// A tool describes itself with a ToolSpec, adds its own options to `options()`, then calls parse().
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace suite {

namespace po = boost::program_options;

enum class OnError { kFail, kSkip, kReplace };

struct Shard {
  uint32_t index = 0;  // 0-based
  uint32_t count = 1;
  bool active() const { return count > 1; }
};

// What `--shard I/N` means, the same in every tool: with at least N inputs, shard I reads the input
// files f with f % N == I; with fewer, it reads every input and keeps the documents (pages, for
// wiki-extract) d with d % N == I, d counted from 0 over all inputs in order. The N shards' outputs
// together are the one-process output.
struct ShardPlan {
  Shard shard;
  std::vector<uint32_t> inputs;  // indices into the input list, ascending
  bool by_document = false;
  bool keeps(uint64_t document) const { return !by_document || document % shard.count == shard.index; }
};
// `input_count` 0 (stdin) counts as one input.
ShardPlan plan_shard(const Shard& shard, size_t input_count);

struct ToolSpec {
  const char* name;
  const char* summary;   // one line: what the tool does
  const char* example;   // a worked example, shown by --help
  bool reads_text = true;     // offers --json-keys
  bool shards = false;        // offers --shard
  bool multi_input = true;    // -i may be repeated
  bool has_output = true;     // offers -o
  const char* details = "";   // optional extra help text (formats, exit codes)
};

struct CommonOptions {
  std::vector<std::string> inputs;  // empty: stdin
  std::string output = "-";
  int threads = 1;
  bool quiet = false;
  OnError on_error = OnError::kFail;
  std::vector<std::string> json_keys{"text"};
  Shard shard;
  uint64_t max_line_bytes = 1ull << 30;
};

class Cli {
 public:
  explicit Cli(ToolSpec spec);
  // The tool's own options; add them before parse().
  po::options_description& options() { return tool_options_; }
  // Positional arguments map to these option names (e.g. input files).
  po::positional_options_description& positional() { return positional_; }
  // Parses argv: prints --help / --version and exits 0; throws UsageError on mistakes.
  CommonOptions parse(int argc, char** argv);
  const po::variables_map& vm() const { return vm_; }
  bool has(const char* name) const { return vm_.count(name) > 0 && !vm_[name].defaulted(); }

 private:
  std::string help_text() const;
  ToolSpec spec_;
  po::options_description tool_options_;
  po::options_description common_;
  po::positional_options_description positional_;
  po::variables_map vm_;
  std::string threads_arg_;
  std::string on_error_arg_;
  std::string shard_arg_;
};

// A numeric option read strictly within [min, max]: a negative number for an unsigned option, a
// fraction for an integer one, a non-number, an infinite or out-of-range value are usage errors
// naming the option and its range (never wrapped or clamped). --help shows the range after the
// argument name: N[1..1000] for integers, X[0..1] for reals (an open end is left empty).
template <class T>
class RangedValue final : public po::typed_value<T> {
 public:
  RangedValue(T* store, T min, T max) : po::typed_value<T>(store), min_(min), max_(max) {
    this->value_name(range_text());
  }
  void xparse(boost::any& value_store, const std::vector<std::string>& tokens) const override;
  std::string range_text() const;

 private:
  T min_, max_;
};

template <class T>
RangedValue<T>* ranged(T* store, T min, T max = std::numeric_limits<T>::max()) {
  return new RangedValue<T>(store, min, max);
}
template <class T>
RangedValue<T>* ranged(T min, T max = std::numeric_limits<T>::max()) {
  return new RangedValue<T>(nullptr, min, max);
}
// Options with no bound but their type's (rule thresholds, where a negative value turns a check off).
inline RangedValue<double>* real(double* store) { return ranged(store, std::numeric_limits<double>::lowest()); }
inline RangedValue<long>* integer(long* store) { return ranged(store, std::numeric_limits<long>::lowest()); }

// "I/N" with 0 <= I < N; throws UsageError naming `what` otherwise.
Shard parse_shard(const std::string& text, const char* what = "--shard");
// `--shard slurm`: I = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN, N = SLURM_ARRAY_TASK_COUNT;
// throws UsageError naming a variable that is missing or not a number.
Shard shard_from_slurm();
OnError parse_on_error(const std::string& text);
const char* on_error_name(OnError e);
// Number of usable cores (affinity-aware).
int available_cores();

}  // namespace suite
