// The GPT dataset builder: one cache policy (where maps are looked for and saved), maps found
// anywhere on it reused byte for byte, maps that do not fit the data refused, blends cached.
#include "common/dataset/gpt_dataset.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "common/dataset/indexed_dataset_writer.h"
#include "common/dataset/md5.h"
#include "tests/unit/dataset/test_support.h"

using namespace suite::dataset;
using dataset_test::TempDir;
using dataset_test::tool_error;
namespace fs = std::filesystem;

namespace {

// `docs` documents of lengths 5..11 tokens.
void write_dataset(const std::string& prefix, int docs) {
  IndexedDatasetWriter w(prefix, DType::UInt16);
  for (int d = 0; d < docs; ++d) {
    std::vector<uint16_t> doc;
    for (int i = 0; i < 5 + d % 7; ++i) doc.push_back(uint16_t((d * 7 + i) % 50));
    w.add_item(doc);
    w.end_document();
  }
  w.finalize();
}

GptDatasetConfig config_for(const std::string& prefix) {
  GptDatasetConfig c;
  set_data_path(c, std::vector<std::string>{prefix});
  c.split = "80,20,0";
  c.seq_length = 8;
  c.samples = {30, 6, 0};
  return c;
}

GptDatasets build(const GptDatasetConfig& c, const GptBuildOptions& o = {}) {
  return build_gpt_datasets(c, open_gpt_datasets(c), o);
}

bool same(const NpyArray& a, const NpyArray& b) {
  return a.dtype == b.dtype && a.shape == b.shape &&
         std::equal(a.data.data(), a.data.data() + a.data.size(), b.data.data(), b.data.data() + b.data.size());
}

}  // namespace

TEST_CASE("cache policy: the home first, then classic names beside the data and in the cache, then md5") {
  GptDatasetConfig c = config_for("data/web");
  const std::string desc = md5_index_map_description("data/web", "train", 30, 8, 1234, "80,20,0");
  const std::string h = md5_hex(desc);
  auto docs = [](const std::vector<IndexMapFiles>& f) {
    std::vector<std::string> out;
    for (const auto& x : f) out.push_back(x.doc_idx);
    return out;
  };
  CHECK(docs(index_map_search(c, "data/web", SplitIndex::Train, 30)) ==
        std::vector<std::string>{"data/web_train_indexmap_30ns_8sl_1234s_doc_idx.npy",
                                 "data/index-cache/" + h + "_doc_idx.npy"});
  c.cache_dir = "cache";
  CHECK(index_map_home(c, "data/web", SplitIndex::Train, 30).doc_idx ==
        "cache/web_train_indexmap_30ns_8sl_1234s_doc_idx.npy");
  CHECK(docs(index_map_search(c, "data/web", SplitIndex::Train, 30)) ==
        std::vector<std::string>{"cache/web_train_indexmap_30ns_8sl_1234s_doc_idx.npy",
                                 "data/web_train_indexmap_30ns_8sl_1234s_doc_idx.npy",
                                 "data/index-cache/" + h + "_doc_idx.npy", "cache/" + h + "_doc_idx.npy"});
  c.naming = CacheNaming::Md5;
  const IndexMapFiles home = index_map_home(c, "data/web", SplitIndex::Train, 30);
  CHECK(home.doc_idx == "cache/" + h + "_doc_idx.npy");
  CHECK(home.description == "cache/" + h + ".dsc");
  CHECK(index_map_search(c, "data/web", SplitIndex::Train, 30)[0].doc_idx == home.doc_idx);
  c.cache_dir.clear();
  CHECK(index_map_home(c, "data/web", SplitIndex::Train, 30).doc_idx == "data/index-cache/" + h + "_doc_idx.npy");
  CHECK(parse_cache_naming("md5") == CacheNaming::Md5);
  CHECK_THROWS_WITH_AS(parse_cache_naming("sha"), doctest::Contains("classic or md5"), suite::ToolError);
}

TEST_CASE("maps are built and saved at their home once, then loaded from wherever the policy finds them") {
  TempDir dir;
  const std::string prefix = dir / "web";
  write_dataset(prefix, 40);
  GptDatasetConfig c = config_for(prefix);
  const GptDatasets first = build(c);
  const GptSplit& train = first.split(SplitIndex::Train);
  REQUIRE(train.maps.size() == 1);
  CHECK(train.maps[0].found.doc_idx.empty());
  CHECK(train.maps[0].saved.doc_idx == prefix + "_train_indexmap_30ns_8sl_1234s_doc_idx.npy");
  CHECK(first.split(SplitIndex::Valid).size() >= 6);
  CHECK(first.split(SplitIndex::Test).empty());  // 0 samples asked: not built

  // A cache folder and md5 naming: the classic maps beside the data are still what is loaded,
  // and nothing is written.
  c.cache_dir = dir / "cache";
  c.naming = CacheNaming::Md5;
  const GptDatasets again = build(c);
  CHECK(again.split(SplitIndex::Train).maps[0].found.doc_idx == train.maps[0].saved.doc_idx);
  CHECK(again.split(SplitIndex::Train).maps[0].saved.doc_idx.empty());
  CHECK(!fs::exists(dir / "cache"));
  CHECK(same(again.split(SplitIndex::Train).maps[0].map->shuffle_idx, train.maps[0].map->shuffle_idx));
  CHECK(again.sample(SplitIndex::Train, 3).tokens == first.sample(SplitIndex::Train, 3).tokens);
  CHECK(again.sample(SplitIndex::Train, 3).tokens.size() == 9);

  // copy_home (build-indexmap): the same arrays are also saved at the md5 home.
  const GptDatasets copied = build(c, {.copy_home = true});
  const ComponentMap& m = copied.split(SplitIndex::Valid).maps[0];
  CHECK(m.saved.description == index_map_home(c, prefix, SplitIndex::Valid, 6).description);
  CHECK(dataset_test::read_bytes(m.saved.sample_idx) == dataset_test::read_bytes(m.found.sample_idx));
  CHECK(dataset_test::read_bytes(m.saved.description).find("Split 80,20,0") != std::string::npos);
}

TEST_CASE("maps left from an earlier tokenization of the same prefix are refused, not read") {
  TempDir dir;
  const std::string prefix = dir / "web";
  write_dataset(prefix, 40);
  GptDatasetConfig c = config_for(prefix);
  (void)build(c);
  write_dataset(prefix, 12);  // retokenized: fewer, shorter sequences under the same name
  const std::string e = tool_error([&] { (void)build(c); });
  CHECK(e.find(prefix + "_train_indexmap_30ns_8sl_1234s_doc_idx.npy: the index maps do not match the data") == 0);
  CHECK(e.find("--force") != std::string::npos);
  // ... which force rebuilds.
  const GptDatasets rebuilt = build(c, {.force = true});
  CHECK(rebuilt.split(SplitIndex::Train).maps[0].found.doc_idx.empty());
  CHECK(rebuilt.sample(SplitIndex::Train, 0).tokens.size() == 9);
}

TEST_CASE("--split-rounding core reads megatron/core's ranges; a legacy map under the same name is refused") {
  TempDir dir;
  const std::string prefix = dir / "web";
  write_dataset(prefix, 530);  // "969,30,1": legacy train [0, 513), core [0, 514)
  GptDatasetConfig c = config_for(prefix);
  c.split = "969,30,1";
  c.samples = {30, 0, 0};
  const GptDatasets legacy = build(c);
  CHECK(legacy.split(SplitIndex::Train).maps[0].map->doc_idx.shape[0] == 513);
  c.split_rounding = SplitRounding::Core;
  const std::string e = tool_error([&] { (void)build(c); });
  CHECK_MESSAGE(e.find("doc_idx holds 513 entries of sequences [0, 513), not whole epochs") != std::string::npos, e);
  const GptDatasets core = build(c, {.force = true});
  CHECK(core.split(SplitIndex::Train).maps[0].map->doc_idx.shape[0] == 514);
}

TEST_CASE("index_map_mismatch: documents outside the split, offsets outside their document") {
  TempDir dir;
  const std::string prefix = dir / "web";
  write_dataset(prefix, 40);
  const IndexedDataset data(prefix);
  IndexMapConfig cfg;
  cfg.num_samples = 30;
  cfg.seq_length = 8;
  const SequenceRange range{0, 32};
  IndexMap map = build_index_map(data.sequence_lengths(), range, cfg);
  CHECK(index_map_mismatch(map, data.sequence_lengths(), range, 30).empty());
  CHECK(index_map_mismatch(map, data.sequence_lengths(), range, 1000).find("samples where 1000") !=
        std::string::npos);
  CHECK(index_map_mismatch(map, data.sequence_lengths(), {0, 20}, 30).find("is not one of the split's") !=
        std::string::npos);
  CHECK(index_map_mismatch(map, data.sequence_lengths(), {0, 33}, 30).find("not whole epochs") != std::string::npos);
  map.sample_idx.as<int32_t>()[2 * 3 + 1] = 1000;  // sample 3 starts past its sequence
  CHECK(index_map_mismatch(map, data.sequence_lengths(), range, 30).find("sample_idx[3] = (") == 0);
}

TEST_CASE("blends: component maps, blending indices saved with the weights as typed, then loaded") {
  TempDir dir;
  write_dataset(dir / "a", 40);
  write_dataset(dir / "b", 30);
  GptDatasetConfig c;
  set_data_path(c, std::vector<std::string>{"0.3 " + (dir / "a"), "0.70", dir / "b"});
  CHECK(c.weight_words == std::vector<std::string>{"0.3", "0.70"});
  c.split = "100,0,0";
  c.seq_length = 8;
  c.samples = {20, 0, 0};
  c.blend_size_requested = true;
  const GptDatasets built = build(c, {.save_blend = true});
  const GptSplit& s = built.split(SplitIndex::Train);
  REQUIRE(s.maps.size() == 2);
  CHECK(s.size() == 20);
  CHECK(s.blend_files[0] == dir / "blend_0.3_0.70_20_dataset_index.npy");
  const GptDatasets loaded = build(c);
  CHECK(loaded.split(SplitIndex::Train).blend_loaded);
  CHECK(loaded.split(SplitIndex::Train).blend.dataset_sample_index == s.blend.dataset_sample_index);
  for (uint64_t j = 0; j < 20; ++j)
    CHECK(loaded.sample(SplitIndex::Train, j).tokens == built.sample(SplitIndex::Train, j).tokens);
  // A blending index naming a dataset the blend does not have is refused.
  write_npy(s.blend_files[0], NpyArray::from(std::vector<int16_t>(20, 2)));
  CHECK(tool_error([&] { (void)build(c); }).find("is not one of the blend's 2 datasets") != std::string::npos);
}
