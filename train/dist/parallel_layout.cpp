#include "train/dist/parallel_layout.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "common/cli/error.h"

namespace gpt::dist {
namespace {

std::string str(int v) { return std::to_string(v); }

void usage(bool ok, const std::string& msg) {
  if (!ok) throw suite::UsageError(msg);
}

std::string joined(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "-" : "") + str(v[i]);
  return s;
}

// Expands Megatron's repetitions: "(ab|)*2" -> "ab|ab|", then "t*3" -> "ttt".
std::string unroll(std::string s) {
  auto count_at = [&](size_t at, size_t* end) {
    size_t e = at;
    while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
    usage(e > at && e - at <= 6,
          "--pipeline-model-parallel-layout: '*' must be followed by a count");
    *end = e;
    return std::stoi(s.substr(at, e - at));
  };
  for (size_t open; (open = s.find('(')) != std::string::npos;) {
    size_t close = s.find(')', open);
    usage(close != std::string::npos && close + 1 < s.size() && s[close + 1] == '*' &&
              close > open + 1,
          "--pipeline-model-parallel-layout: '(' needs a matching ')*N'");
    size_t end;
    int n = count_at(close + 2, &end);
    std::string body = s.substr(open + 1, close - open - 1), rep;
    for (int i = 0; i < n; ++i) rep += body;
    s = s.substr(0, open) + rep + s.substr(end);
  }
  usage(s.find(')') == std::string::npos, "--pipeline-model-parallel-layout: ')' without '('");
  for (size_t star; (star = s.find('*')) != std::string::npos;) {
    usage(star > 0, "--pipeline-model-parallel-layout: '*' must follow a layer letter");
    size_t end;
    int n = count_at(star + 1, &end);
    s = s.substr(0, star - 1) + std::string(n, s[star - 1]) + s.substr(end);
  }
  return s;
}

}  // namespace

std::vector<int> parse_layer_counts(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::string cur;
  bool any = false;
  auto flush = [&] {
    usage(!cur.empty() && cur.size() <= 6, flag + " '" + text +
                                               "': give the layers of each stage as numbers "
                                               "separated by '-' (0-11-8-8-8-8-5-0)");
    out.push_back(std::stoi(cur));
    cur.clear();
  };
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      cur += c;
      any = true;
    } else if (c == '-' || c == ',') {
      flush();
    } else if (!(c == '[' || c == ']' || c == ' ')) {
      usage(false, flag + " '" + text + "': unexpected '" + std::string(1, c) +
                       "' (layers per stage separated by '-', e.g. 0-11-8-8-8-8-5-0)");
    }
  }
  usage(any, flag + " is empty");
  flush();
  return out;
}

std::vector<int> parse_megatron_layout(const std::string& text) {
  std::string s;
  for (char c : text)
    if (c != ',' && c != ' ' && c != '"' && c != '\'') s += c;
  s = unroll(s);
  std::vector<int> layers{0};
  int embeddings = 0, losses = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '|') {
      layers.push_back(0);
    } else if (c == 't') {
      ++layers.back();
    } else if (c == 'E') {
      usage(layers.size() == 1 && layers[0] == 0 && embeddings == 0,
            "--pipeline-model-parallel-layout: E (the embedding) must open the first stage");
      ++embeddings;
    } else if (c == 'L') {
      usage(i + 1 == s.size() && losses == 0,
            "--pipeline-model-parallel-layout: L (the output layer and loss) must close the last "
            "stage");
      ++losses;
    } else {
      usage(false, "--pipeline-model-parallel-layout: unknown layer '" + std::string(1, c) +
                       "' (E embedding, t transformer layer, L loss; '|' between stages)");
    }
  }
  usage(embeddings == 1, "--pipeline-model-parallel-layout must begin with E (the embedding)");
  usage(losses == 1, "--pipeline-model-parallel-layout must end with L (the output layer and loss)");
  return layers;
}

RankCoord ParallelLayout::coord(int rank) const {
  RankCoord c;
  c.tp = rank % tensor;
  c.dp = rank / tensor % data;
  c.pp = rank / (tensor * data);
  return c;
}

int ParallelLayout::rank_of(const RankCoord& c) const { return c.tp + tensor * (c.dp + data * c.pp); }

std::vector<int> ParallelLayout::tensor_group(int rank) const {
  RankCoord c = coord(rank);
  std::vector<int> g;
  for (c.tp = 0; c.tp < tensor; ++c.tp) g.push_back(rank_of(c));
  return g;
}

std::vector<int> ParallelLayout::data_group(int rank) const {
  RankCoord c = coord(rank);
  std::vector<int> g;
  for (c.dp = 0; c.dp < data; ++c.dp) g.push_back(rank_of(c));
  return g;
}

std::vector<int> ParallelLayout::pipeline_group(int rank) const {
  RankCoord c = coord(rank);
  std::vector<int> g;
  for (c.pp = 0; c.pp < pipeline; ++c.pp) g.push_back(rank_of(c));
  return g;
}

std::vector<int> ParallelLayout::embedding_group(int rank) const {
  std::vector<int> p = pipeline_group(rank);
  if (p.size() == 1 || (rank != p.front() && rank != p.back())) return {rank};
  return {p.front(), p.back()};
}

int ParallelLayout::first_layer(int pp, int chunk) const {
  const int s = chunk * pipeline + pp;
  return std::accumulate(stage_layers.begin(), stage_layers.begin() + s, 0);
}

int ParallelLayout::num_layers(int pp, int chunk) const {
  return stage_layers.at(size_t(chunk * pipeline + pp));
}

std::string ParallelLayout::partition_text() const {
  std::vector<int> per(pipeline, 0);
  for (size_t s = 0; s < stage_layers.size(); ++s) per[s % pipeline] += stage_layers[s];
  return joined(per);
}

std::string ParallelLayout::coord_text(int rank) const {
  RankCoord c = coord(rank);
  return "(tp " + str(c.tp) + ", dp " + str(c.dp) + ", pp " + str(c.pp) + ")";
}

std::vector<std::string> ParallelLayout::describe() const {
  std::vector<std::string> out{
      "> initializing tensor model parallel with size " + str(tensor),
      "> initializing pipeline model parallel with size " + str(pipeline),
      "> initializing data parallel with size " + str(data)};
  if (sequence_parallel) out.push_back("> sequence parallelism over the tensor-parallel ranks");
  if (pipeline > 1 || virtual_stages > 1) {
    out.push_back("> transformer layers per pipeline stage: " + partition_text());
    if (virtual_stages > 1)
      out.push_back("> interleaved schedule: " + str(virtual_stages) +
                    " model chunks per stage, layers per chunk in model order: " +
                    joined(stage_layers));
  }
  return out;
}

ParallelLayout resolve_layout(const LayoutFlags& f, int L, int heads, int ffn, int seq,
                              int world_size) {
  const int T = f.tensor, P = f.pipeline;
  usage(T >= 1, "--tensor-model-parallel-size must be positive");
  usage(P >= 1, "--pipeline-model-parallel-size must be positive");
  usage(heads % T == 0, "--tensor-model-parallel-size " + str(T) +
                            " does not divide --num-attention-heads " + str(heads));
  usage(ffn % T == 0, "--tensor-model-parallel-size " + str(T) +
                          " does not divide --ffn-hidden-size " + str(ffn));
  usage(!f.sequence_parallel || T == 1 || seq % T == 0,
        "--sequence-parallel: --tensor-model-parallel-size " + str(T) +
            " does not divide --seq-length " + str(seq));
  usage(f.layers_per_virtual_stage >= 0,
        "--num-layers-per-virtual-pipeline-stage must be positive");

  const bool first_last = f.first_stage_layers >= 0 || f.last_stage_layers >= 0;
  std::vector<std::string> given;
  if (first_last) given.push_back("--decoder-first/last-pipeline-num-layers");
  if (!f.partition.empty()) given.push_back("--pipeline-partition");
  if (!f.balance.empty()) given.push_back("--balance");
  if (!f.layout.empty()) given.push_back("--pipeline-model-parallel-layout");
  usage(given.size() <= 1, given.size() > 1 ? given[0] + " and " + given[1] +
                                                  " both give the stages' layers: give one"
                                            : "");
  usage(P <= L + 2, "--pipeline-model-parallel-size " + str(P) + " is more than --num-layers " +
                        str(L) + " + 2 (every stage needs a layer, but for an empty first and "
                        "last stage)");
  const bool interleaved = f.layers_per_virtual_stage > 0;
  // As Megatron without overlapped transfers: with two stages both neighbours are one rank, and a
  // batch of transfers would hold two sends to it.
  const std::string needs_three =
      " needs --pipeline-model-parallel-size > 2 (the interleaved schedule)";
  usage(!interleaved || P > 2, "--num-layers-per-virtual-pipeline-stage" + needs_three);

  ParallelLayout out;
  out.tensor = T;
  out.pipeline = P;
  out.sequence_parallel = f.sequence_parallel && T > 1;
  std::vector<int> counts;  // per stage (or per model chunk, from a layout string)
  std::string source;       // the flag that gave them, for messages
  if (first_last) {
    source = "--decoder-first/last-pipeline-num-layers";
    usage(P > 1, source + " need --pipeline-model-parallel-size > 1");
    const int A = std::max(f.first_stage_layers, 0), B = std::max(f.last_stage_layers, 0);
    const int middle = P - (f.first_stage_layers >= 0) - (f.last_stage_layers >= 0);
    const int rest = L - A - B;
    usage(rest >= 0, source + " give " + str(A + B) + " layers, --num-layers is " + str(L));
    usage(middle > 0 || rest == 0, source + " give " + str(A + B) +
                                       " layers, --num-layers is " + str(L));
    usage(middle == 0 || (rest > 0 && rest % middle == 0),
          source + " leave " + str(rest) + " layers, which do not split evenly over the " +
              str(middle) + " other stages of --pipeline-model-parallel-size " + str(P));
    counts.assign(P, middle ? rest / middle : 0);
    if (f.first_stage_layers >= 0) counts.front() = A;
    if (f.last_stage_layers >= 0) counts.back() = B;
  } else if (!f.partition.empty() || !f.balance.empty()) {
    source = f.partition.empty() ? "--balance" : "--pipeline-partition";
    counts = parse_layer_counts(f.partition.empty() ? f.balance : f.partition, source);
    int sum = std::accumulate(counts.begin(), counts.end(), 0);
    // FASOP's planner counts the embedding and the head as a unit each (L + 2 in all).
    if (!f.balance.empty() && sum == L + 2 && counts.front() >= 1 && counts.back() >= 1) {
      --counts.front();
      --counts.back();
      sum = L;
    }
    usage(int(counts.size()) == P, source + " has " + str(int(counts.size())) +
                                       " stages, --pipeline-model-parallel-size is " + str(P));
    usage(sum == L, source + " sums to " + str(sum) + ", --num-layers is " + str(L));
  } else if (!f.layout.empty()) {
    source = "--pipeline-model-parallel-layout";
    counts = parse_megatron_layout(f.layout);
    const int n = int(counts.size()), sum = std::accumulate(counts.begin(), counts.end(), 0);
    usage(n % P == 0, source + " has " + str(n) + " stages, not a multiple of "
                      "--pipeline-model-parallel-size " + str(P));
    usage(sum == L, source + " has " + str(sum) + " transformer layers, --num-layers is " +
                        str(L));
  } else {
    usage(L % P == 0, "--num-layers " + str(L) + " is not a multiple of "
                      "--pipeline-model-parallel-size " + str(P) +
                      " (uneven stages: --pipeline-partition or "
                      "--decoder-first/last-pipeline-num-layers)");
    counts.assign(P, L / P);
  }
  for (size_t s = 1; s + 1 < counts.size(); ++s)
    usage(counts[s] > 0, source + " " + joined(counts) + ": stage " + str(int(s)) +
                             " has no layers (only the first and the last stage may be empty)");
  usage(counts.size() > 1 || counts[0] > 0, "--num-layers must be positive");

  const bool even = std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts[0]; });
  if (interleaved) {
    usage(even, "--num-layers-per-virtual-pipeline-stage needs equal stages, and " + source + " " +
                    joined(counts) + " is uneven (the interleaved schedule splits each stage "
                    "into equal chunks)");
    const int per_stage = L / P;
    usage(int(counts.size()) == P || int(counts.size()) * f.layers_per_virtual_stage == L,
          source + " has " + str(int(counts.size())) + " chunks of " + str(counts[0]) +
              " layers, --num-layers-per-virtual-pipeline-stage is " +
              str(f.layers_per_virtual_stage));
    usage(per_stage % f.layers_per_virtual_stage == 0,
          "--num-layers-per-virtual-pipeline-stage " + str(f.layers_per_virtual_stage) +
              " does not divide the " + str(per_stage) + " layers of each of the " + str(P) +
              " pipeline stages");
    out.virtual_stages = per_stage / f.layers_per_virtual_stage;
    out.stage_layers.assign(size_t(P * out.virtual_stages), f.layers_per_virtual_stage);
  } else {
    usage(int(counts.size()) == P || even,
          source + " " + joined(counts) + " gives " + str(int(counts.size()) / P) +
              " model chunks per stage, which is the interleaved schedule: it needs equal "
              "chunks");
    out.virtual_stages = int(counts.size()) / P;
    usage(out.virtual_stages == 1 || P > 2, source + " " + joined(counts) + needs_three);
    out.stage_layers = counts;
  }

  if (world_size > 0) {
    usage(world_size % (T * P) == 0,
          "world size " + str(world_size) + " is not a multiple of --tensor-model-parallel-size " +
              str(T) + " x --pipeline-model-parallel-size " + str(P) + " (= " + str(T * P) + ")");
    out.data = world_size / (T * P);
  }
  return out;
}

}  // namespace gpt::dist
