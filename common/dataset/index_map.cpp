#include "common/dataset/index_map.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "common/cli/error.h"
#include "common/dataset/indexed_dataset.h"
#include "common/dataset/random_state.h"

namespace suite::dataset {

namespace {

// Past this many doc_idx entries (16 GiB of int32) we refuse rather than exhaust memory.
constexpr uint64_t kMaxDocIdxEntries = uint64_t{1} << 32;

std::string describe(const IndexMapConfig& c) {
  return "split '" + c.split + "' (" + std::to_string(c.num_samples) + " samples of " +
         std::to_string(c.seq_length) + " tokens)";
}

// numpy.arange-style fill followed by shuffle; T is uint32_t or int64_t.
template <typename T>
void fill_and_shuffle(std::span<T> out, uint64_t start, RandomState& rng) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(start + i);
  rng.shuffle(out);
}

template <typename Idx>
void walk_samples(std::span<const int32_t> sizes, std::span<const int32_t> doc_idx, uint32_t seq_length,
                  uint64_t num_samples, std::span<Idx> out) {
  // helpers.cpp build_sample_idx, same integer widths: remaining/doc length int32.
  uint64_t i = 0;
  int32_t off = 0;
  out[0] = 0;
  out[1] = 0;
  for (uint64_t k = 1; k <= num_samples; ++k) {
    int32_t remaining = static_cast<int32_t>(seq_length) + 1;
    while (remaining != 0) {
      const int32_t dl = sizes[static_cast<size_t>(doc_idx[i])] - off;
      remaining -= dl;
      if (remaining <= 0) {
        off += remaining + dl - 1;
        remaining = 0;
      } else {
        ++i;
        off = 0;
        if (i >= doc_idx.size())  // impossible when num_samples comes from plan_index_map
          throw ToolError("sample_idx: ran past the end of doc_idx at sample " + std::to_string(k));
      }
    }
    out[2 * k] = static_cast<Idx>(i);
    out[2 * k + 1] = static_cast<Idx>(off);
  }
}

}  // namespace

IndexMapPlan plan_index_map(std::span<const int32_t> sizes, SequenceRange documents, const IndexMapConfig& config) {
  if (config.seq_length == 0) throw ToolError("--seq-length: must be at least 1");
  if (documents.end > sizes.size() || documents.begin > documents.end)
    throw ToolError(describe(config) + ": sequence range [" + std::to_string(documents.begin) + ", " +
                    std::to_string(documents.end) + ") lies outside the dataset's " + std::to_string(sizes.size()) +
                    " sequences");
  if (documents.empty())
    throw ToolError(describe(config) + ": the split holds no sequences; give it a share with --split or request no " +
                    config.split + " samples");
  IndexMapPlan p;
  p.documents = documents.size();
  for (uint64_t d = documents.begin; d < documents.end; ++d) p.tokens_per_epoch += static_cast<uint64_t>(sizes[d]);
  const uint64_t t = p.tokens_per_epoch;
  const uint64_t l = config.seq_length;
  if (t == 0)
    throw ToolError(describe(config) + ": its " + std::to_string(p.documents) +
                    " sequences hold no tokens; change --split or the data");
  // Smallest E >= 1 with (E*T - 1) // L >= N, i.e. E*T >= N*L + 1.
  const unsigned __int128 need = static_cast<unsigned __int128>(config.num_samples) * l + 1;
  const unsigned __int128 e = (need + t - 1) / t;
  const unsigned __int128 entries = e * p.documents;
  if (entries > kMaxDocIdxEntries)
    throw ToolError(describe(config) + ": the split has " + std::to_string(t) + " tokens per epoch, so " +
                    "the index map would need " + std::to_string(static_cast<uint64_t>(e)) +
                    " epochs; lower --train-iters/--train-samples (or --eval-iters), --seq-length, or give the "
                    "split more data with --split");
  p.epochs = e < 1 ? 1 : static_cast<uint64_t>(e);
  p.total_samples = (p.epochs * t - 1) / l;
  p.separate_last_epoch = false;
  p.first_shuffle_block = p.total_samples;
  if (config.separate_last_epoch && p.epochs > 1) {
    const uint64_t n_prev = ((p.epochs - 1) * t - 1) / l;
    const uint64_t n_epoch = (t - 1) / l;
    if (n_prev > config.num_samples || config.num_samples - n_prev > n_epoch + 1)
      throw ToolError(describe(config) + ": inconsistent epoch arithmetic (internal error)");
    const uint64_t n_last = config.num_samples - n_prev;
    // Python: int(0.80 * num_samples_per_epoch) truncates the double product.
    const auto threshold = static_cast<uint64_t>(0.80 * static_cast<double>(n_epoch));
    p.separate_last_epoch = n_last < threshold;
    if (p.separate_last_epoch) p.first_shuffle_block = n_prev;
  }
  return p;
}

NpyArray build_doc_idx(SequenceRange documents, uint64_t epochs, bool separate_last_epoch, RandomState& rng) {
  const uint64_t n = documents.size();
  NpyArray a;
  a.dtype = DType::Int32;
  a.shape = {n * epochs};
  a.data.resize(n * epochs * sizeof(int32_t));
  std::span<int32_t> all = a.as<int32_t>();
  for (uint64_t e = 0; e < epochs; ++e)
    for (uint64_t d = 0; d < n; ++d) all[e * n + d] = static_cast<int32_t>(documents.begin + d);
  if (!separate_last_epoch || epochs == 1) {
    rng.shuffle(all);
  } else {
    rng.shuffle(all.first((epochs - 1) * n));
    rng.shuffle(all.subspan((epochs - 1) * n));
  }
  return a;
}

NpyArray build_sample_idx(std::span<const int32_t> sizes, std::span<const int32_t> doc_idx, uint32_t seq_length,
                          uint64_t epochs, uint64_t tokens_per_epoch) {
  const uint64_t num_samples = (epochs * tokens_per_epoch - 1) / seq_length;
  NpyArray a;
  a.shape = {num_samples + 1, 2};
  const bool wide = doc_idx.size() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
  a.dtype = wide ? DType::Int64 : DType::Int32;
  a.data.resize((num_samples + 1) * 2 * itemsize(a.dtype));
  if (wide)
    walk_samples<int64_t>(sizes, doc_idx, seq_length, num_samples, a.as<int64_t>());
  else
    walk_samples<int32_t>(sizes, doc_idx, seq_length, num_samples, a.as<int32_t>());
  return a;
}

NpyArray build_shuffle_idx(uint64_t first_block, uint64_t total, RandomState& rng) {
  NpyArray a;
  a.shape = {total};
  const bool wide = total >= uint64_t{0xfffffffe};  // numpy.iinfo(uint32).max - 1
  a.dtype = wide ? DType::Int64 : DType::UInt32;
  a.data.resize(total * itemsize(a.dtype));
  auto fill = [&](auto span) {
    fill_and_shuffle(span.first(first_block), 0, rng);
    if (first_block != total) fill_and_shuffle(span.subspan(first_block), first_block, rng);
  };
  if (wide)
    fill(a.as<int64_t>());
  else
    fill(a.as<uint32_t>());
  return a;
}

IndexMap build_index_map(std::span<const int32_t> sizes, SequenceRange documents, const IndexMapConfig& config) {
  IndexMap m;
  m.plan = plan_index_map(sizes, documents, config);
  RandomState rng(config.seed);
  m.doc_idx = build_doc_idx(documents, m.plan.epochs, m.plan.separate_last_epoch, rng);
  m.sample_idx = build_sample_idx(sizes, std::as_const(m.doc_idx).as<int32_t>(), config.seq_length, m.plan.epochs,
                                  m.plan.tokens_per_epoch);
  m.shuffle_idx = build_shuffle_idx(m.plan.first_shuffle_block, m.plan.total_samples, rng);
  return m;
}

std::pair<int64_t, int64_t> IndexMap::sample_start(uint64_t k) const {
  if (sample_idx.dtype == DType::Int64) {
    auto s = sample_idx.as<int64_t>();
    return {s[2 * k], s[2 * k + 1]};
  }
  auto s = sample_idx.as<int32_t>();
  return {s[2 * k], s[2 * k + 1]};
}

uint64_t IndexMap::shuffled(uint64_t j) const {
  if (shuffle_idx.dtype == DType::Int64) return static_cast<uint64_t>(shuffle_idx.as<int64_t>()[j]);
  return shuffle_idx.as<uint32_t>()[j];
}

std::string index_map_mismatch(const IndexMap& map, std::span<const int32_t> sizes, SequenceRange documents,
                               uint64_t min_samples) {
  const auto n = [](uint64_t v) { return std::to_string(v); };
  if (map.size() < min_samples) return n(map.size()) + " samples where " + n(min_samples) + " were requested";
  if (documents.end > sizes.size())
    return "the split's sequences [" + n(documents.begin) + ", " + n(documents.end) + ") exceed the dataset's " +
           n(sizes.size());
  auto doc = map.doc_idx.as<int32_t>();
  uint64_t lowest = std::numeric_limits<uint64_t>::max(), highest = 0;
  for (size_t i = 0; i < doc.size(); ++i) {
    if (doc[i] < 0 || static_cast<uint64_t>(doc[i]) < documents.begin || static_cast<uint64_t>(doc[i]) >= documents.end)
      return "doc_idx[" + n(i) + "] = " + std::to_string(doc[i]) + " is not one of the split's sequences [" +
             n(documents.begin) + ", " + n(documents.end) + ")";
    lowest = std::min<uint64_t>(lowest, static_cast<uint64_t>(doc[i]));
    highest = std::max<uint64_t>(highest, static_cast<uint64_t>(doc[i]));
  }
  // A doc_idx is whole epochs of one range of sequences, so a map made for a narrower range (another
  // --split or --split-rounding under the same classic name) shows in its length or its ends.
  if (!documents.empty() &&
      (doc.size() % documents.size() != 0 || lowest != documents.begin || highest + 1 != documents.end))
    return "doc_idx holds " + n(doc.size()) + " entries of sequences [" + n(doc.empty() ? 0 : lowest) + ", " +
           n(doc.empty() ? 0 : highest + 1) + "), not whole epochs of the split's sequences [" + n(documents.begin) +
           ", " + n(documents.end) + ")";
  // Row k starts sample k and ends sample k-1 (inclusive), so rows after the first point at a token.
  int64_t prev_i = 0, prev_off = 0;
  for (uint64_t k = 0; k <= map.size(); ++k) {
    const auto [i, off] = map.sample_start(k);  // load_index_map checked 0 <= i < doc_idx size
    const int64_t len = sizes[static_cast<size_t>(doc[static_cast<size_t>(i)])];
    const bool inside = k == 0 ? off >= 0 && off <= len : off >= 0 && off < len;
    if (!inside)
      return "sample_idx[" + n(k) + "] = (" + std::to_string(i) + ", " + std::to_string(off) +
             ") is outside sequence " + std::to_string(doc[static_cast<size_t>(i)]) + " (" + std::to_string(len) +
             " tokens)";
    if (k > 0 && (i < prev_i || (i == prev_i && off < prev_off)))
      return "sample_idx[" + n(k) + "] starts before sample_idx[" + n(k - 1) + "]";
    prev_i = i;
    prev_off = off;
  }
  return {};
}

std::vector<int64_t> read_sample(const IndexMap& map, const IndexedDataset& data, uint64_t j) {
  if (j >= map.size())
    throw ToolError("sample " + std::to_string(j) + " out of range (index map has " + std::to_string(map.size()) + ")");
  const uint64_t s = map.shuffled(j);
  const auto [i0, o0] = map.sample_start(s);
  const auto [i1, o1] = map.sample_start(s + 1);
  auto doc = map.doc_idx.as<int32_t>();
  std::vector<int64_t> out;
  std::vector<int64_t> seq;
  for (int64_t i = i0; i <= i1; ++i) {
    seq.clear();
    data.append_tokens(static_cast<uint64_t>(doc[static_cast<size_t>(i)]), seq);
    const int64_t from = i == i0 ? o0 : 0;
    const int64_t to = i == i1 ? o1 + 1 : static_cast<int64_t>(seq.size());
    out.insert(out.end(), seq.begin() + from, seq.begin() + to);
  }
  return out;
}

}  // namespace suite::dataset
