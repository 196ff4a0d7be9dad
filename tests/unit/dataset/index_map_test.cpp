#include <doctest/doctest.h>
#include <simdjson.h>

#include "common/dataset/index_map.h"
#include "common/dataset/index_map_cache.h"
#include "common/dataset/indexed_dataset.h"
#include "common/dataset/md5.h"
#include "common/dataset/random_state.h"
#include "test_support.h"

using namespace suite::dataset;
using namespace dataset_test;

namespace {

const std::vector<int32_t> kSizes = {5, 3, 8, 2, 7, 4, 6, 1, 9, 10};

std::vector<int32_t> ints(const NpyArray& a) {
  std::vector<int32_t> out;
  for (int32_t v : a.as<int32_t>()) out.push_back(v);
  return out;
}
std::vector<uint32_t> uints(const NpyArray& a) {
  std::vector<uint32_t> out;
  for (uint32_t v : a.as<uint32_t>()) out.push_back(v);
  return out;
}

IndexMapConfig config(uint64_t n, uint32_t l, uint32_t seed) {
  IndexMapConfig c;
  c.num_samples = n;
  c.seq_length = l;
  c.seed = seed;
  return c;
}

std::string npy_bytes(const NpyArray& a) { return npy_header(a.dtype, a.shape) + as_string(a.data); }

}  // namespace

TEST_CASE("index map vector 1 of spec 3.12: one epoch") {
  IndexMap m = build_index_map(kSizes, {0, 10}, config(10, 4, 1234));
  CHECK(m.plan.epochs == 1);
  CHECK(m.plan.tokens_per_epoch == 55);
  CHECK(!m.plan.separate_last_epoch);
  CHECK(ints(m.doc_idx) == std::vector<int32_t>{7, 2, 9, 1, 0, 8, 4, 5, 6, 3});
  CHECK(ints(m.sample_idx) == std::vector<int32_t>{0, 0, 1, 3, 1, 7, 2, 3, 2, 7, 3, 1, 4, 2,
                                                   5, 1, 5, 5, 6, 0, 6, 4, 7, 1, 8, 1, 8, 5});
  CHECK(m.sample_idx.shape == std::vector<uint64_t>{14, 2});
  CHECK(uints(m.shuffle_idx) == std::vector<uint32_t>{3, 12, 2, 1, 7, 5, 4, 0, 8, 6, 11, 10, 9});
}

TEST_CASE("index map vector 2 of spec 3.12: separate last epoch") {
  IndexMap m = build_index_map(kSizes, {0, 10}, config(30, 4, 1234));
  CHECK(m.plan.epochs == 3);
  CHECK(m.plan.separate_last_epoch);
  CHECK(m.plan.first_shuffle_block == 27);
  CHECK(ints(m.doc_idx) == std::vector<int32_t>{3, 3, 2, 6, 4, 5, 4, 0, 8, 8, 7, 1, 0, 9, 7, 1, 9, 2, 6, 5,
                                                8, 1, 7, 6, 9, 5, 4, 3, 0, 2});
  const std::vector<int32_t> rows = {0,  0, 2,  0, 2,  4, 3,  0, 3,  4, 4,  2, 4,  6, 5,  3, 6,  3, 7,  0, 7,
                                     4,  8, 3,  8, 7,  9, 2,  9, 6,  11, 0, 12, 1, 13, 0, 13, 4, 13, 8, 15, 1,
                                     16, 2, 16, 6, 17, 0, 17, 4, 18, 0, 18, 4, 19, 2, 20, 2, 20, 6, 21, 1, 23,
                                     1,  23, 5, 24, 3, 24, 7, 25, 1, 26, 1, 26, 5, 28, 0, 28, 4, 29, 3, 29, 7};
  CHECK(ints(m.sample_idx) == rows);
  CHECK(uints(m.shuffle_idx) == std::vector<uint32_t>{8,  19, 14, 23, 6,  24, 4,  5,  13, 18, 26, 15, 17, 10,
                                                      21, 20, 22, 1,  12, 2,  3,  16, 25, 9,  0,  11, 7,  30,
                                                      40, 28, 29, 33, 34, 37, 38, 35, 27, 31, 39, 36, 32});
}

TEST_CASE("index map vector 3 of spec 3.12 and the pre-2020-12 rule") {
  IndexMap m = build_index_map(kSizes, {0, 10}, config(7, 8, 42));
  CHECK(ints(m.doc_idx) == std::vector<int32_t>{8, 1, 5, 0, 7, 2, 9, 4, 3, 6, 0, 1, 8, 5, 3, 4, 7, 9, 6, 2});
  CHECK(ints(m.sample_idx) == std::vector<int32_t>{0, 0, 0,  8, 3,  0, 5,  2, 6,  2, 7,  0, 8,  1,
                                                   10, 1, 12, 1, 13, 0, 15, 2, 17, 2, 18, 0, 19, 2});
  CHECK(uints(m.shuffle_idx) == std::vector<uint32_t>{0, 2, 5, 3, 1, 4, 11, 8, 12, 6, 10, 9, 7});
  // Without the separate-last-epoch rule: one global shuffle of both epochs.
  IndexMapConfig old = config(7, 8, 42);
  old.separate_last_epoch = false;
  IndexMap o = build_index_map(kSizes, {0, 10}, old);
  CHECK(!o.plan.separate_last_epoch);
  RandomState rs(42);
  std::vector<int32_t> expected;
  for (int e = 0; e < 2; ++e)
    for (int32_t d = 0; d < 10; ++d) expected.push_back(d);
  rs.shuffle(expected);
  CHECK(ints(o.doc_idx) == expected);
}

TEST_CASE("read_sample returns seq_length + 1 tokens crossing documents") {
  IndexedDataset ds(kGoldenPrefix);
  const SequenceRange all{0, ds.sequence_count()};
  IndexMap m = build_index_map(ds.sequence_lengths(), all, config(50, 128, 1234));
  for (uint64_t j = 0; j < 50; ++j) CHECK(read_sample(m, ds, j).size() == 129);
  // Consecutive samples (unshuffled order) share one token.
  auto d = m.doc_idx.as<int32_t>();
  auto [i1, o1] = m.sample_start(1);
  CHECK(ds.token(static_cast<uint64_t>(d[static_cast<size_t>(i1)]), static_cast<uint64_t>(o1)) >= 0);
}

TEST_CASE("golden Megatron index maps are reproduced byte for byte") {
  simdjson::dom::parser parser;
  simdjson::dom::element cases = parser.load(kGolden + "/indexmaps/manifest.json");
  IndexedDataset ds(kGoldenPrefix);
  int count = 0;
  for (simdjson::dom::element c : cases.get_array()) {
    const std::string name{std::string_view(c["name"])};
    const std::string split{std::string_view(c["split"])};
    const auto n = static_cast<uint64_t>(int64_t(c["N"]));
    const auto l = static_cast<uint32_t>(int64_t(c["L"]));
    const auto seed = static_cast<uint32_t>(int64_t(c["seed"]));
    CAPTURE(name);
    CAPTURE(split);
    CAPTURE(n);
    const SplitIndex which = name == "train" ? SplitIndex::Train : name == "valid" ? SplitIndex::Valid : SplitIndex::Test;
    const SequenceRange range = split_range_legacy(split, ds.sequence_count(), which);
    simdjson::dom::array expected_range = c["range"];
    CHECK(range.begin == static_cast<uint64_t>(int64_t(expected_range.at(0))));
    CHECK(range.end == static_cast<uint64_t>(int64_t(expected_range.at(1))));

    IndexMapConfig cfg = config(n, l, seed);
    cfg.split = name;
    IndexMap m = build_index_map(ds.sequence_lengths(), range, cfg);
    CHECK(m.plan.epochs == static_cast<uint64_t>(int64_t(c["epochs"])));
    CHECK(m.plan.separate_last_epoch == bool(c["separate_last_epoch"]));

    const IndexMapFiles files = classic_index_map_files(kGolden + "/indexmaps/fortunes-en_text_document", name, n, l, seed);
    const std::string pattern{std::string_view(c["files"])};
    CHECK(files.doc_idx == kGolden + "/indexmaps/" + pattern.substr(0, pattern.find('{')) + "doc_idx.npy");
    CHECK(npy_bytes(m.doc_idx) == read_bytes(files.doc_idx));
    CHECK(npy_bytes(m.sample_idx) == read_bytes(files.sample_idx));
    CHECK(npy_bytes(m.shuffle_idx) == read_bytes(files.shuffle_idx));
    ++count;
  }
  CHECK(count == 8);
}

TEST_CASE("index map errors name the split, the counts and the flag") {
  SUBCASE("empty split") {
    IndexMapConfig c = config(10, 4, 1);
    c.split = "valid";
    const std::string msg = tool_error([&] { build_index_map(kSizes, {10, 10}, c); });
    CHECK(msg.find("'valid'") != std::string::npos);
    CHECK(msg.find("--split") != std::string::npos);
    CHECK(msg.find("10 samples") != std::string::npos);
  }
  SUBCASE("split without tokens") {
    const std::vector<int32_t> zeros = {0, 0, 0};
    const std::string msg = tool_error([&] { build_index_map(zeros, {0, 3}, config(5, 4, 1)); });
    CHECK(msg.find("no tokens") != std::string::npos);
    CHECK(msg.find("--split") != std::string::npos);
  }
  SUBCASE("sequence length 0") {
    CHECK(tool_error([&] { build_index_map(kSizes, {0, 10}, config(5, 0, 1)); }).find("--seq-length") !=
          std::string::npos);
  }
  SUBCASE("absurd epoch counts") {
    const std::string msg = tool_error([&] { build_index_map(kSizes, {0, 1}, config(uint64_t{1} << 40, 4096, 1)); });
    CHECK(msg.find("--train-iters") != std::string::npos);
    CHECK(msg.find("epochs") != std::string::npos);
  }
  SUBCASE("range outside the data") {
    CHECK(tool_error([&] { build_index_map(kSizes, {5, 11}, config(5, 4, 1)); }).find("outside") != std::string::npos);
  }
}

TEST_CASE("a sequence length longer than the split repeats epochs like Megatron") {
  IndexMap m = build_index_map(kSizes, {0, 2}, config(3, 20, 5));  // 8 tokens per epoch
  CHECK(m.plan.epochs == 8);  // 8*8 - 1 = 63 >= 3*20
  CHECK(m.size() == 3);
}

TEST_CASE("md5 names (spec 3.11 b)") {
  CHECK(md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
  CHECK(md5_hex(std::string(1000, 'a')) == "cabe45dcc9ae5b66ba86600cca6b8ba8");
  const std::string desc = md5_index_map_description("/data/owt_text_document", "train", 128000, 1024, 1234, "969, 30, 1");
  CHECK(md5_hex(desc) == "71afab051ae041b7759075e44a5ca448");
  const IndexMapFiles f = md5_index_map_files(default_index_cache_dir("/data/owt_text_document"), desc);
  CHECK(f.doc_idx == "/data/index-cache/71afab051ae041b7759075e44a5ca448_doc_idx.npy");
  CHECK(f.description == "/data/index-cache/71afab051ae041b7759075e44a5ca448.dsc");
  CHECK(default_index_cache_dir("owt") == "index-cache");
  CHECK(classic_index_map_files("/data/owt_text_document", "train", 128000, 1024, 1234).sample_idx ==
        "/data/owt_text_document_train_indexmap_128000ns_1024sl_1234s_sample_idx.npy");
}

TEST_CASE("save and load an index map cache") {
  TempDir tmp;
  IndexMap m = build_index_map(kSizes, {0, 10}, config(30, 4, 1234));
  const std::string desc = md5_index_map_description(tmp / "d", "train", 30, 4, 1234, "100");
  const IndexMapFiles files = md5_index_map_files(tmp.path(), desc);
  CHECK(!index_map_files_exist(files));
  save_index_map(m, files, desc);
  CHECK(index_map_files_exist(files));
  CHECK(read_bytes(files.description) == desc);
  IndexMap back = load_index_map(files);
  CHECK(back.size() == m.size());
  CHECK(back.doc_idx.data == m.doc_idx.data);
  CHECK(back.sample_idx.data == m.sample_idx.data);
  CHECK(back.shuffle_idx.data == m.shuffle_idx.data);
  // A shuffle file from another map is caught.
  write_npy(files.shuffle_idx, NpyArray::from(std::vector<uint32_t>{0, 1}));
  CHECK(tool_error([&] { load_index_map(files); }).find("shuffle_idx") != std::string::npos);
}
