// Real-data path: Megatron .bin/.idx through common/dataset index maps, split, vocabulary checks.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "common/cli/error.h"
#include "common/dataset/indexed_dataset_writer.h"
#include "tests/unit/train/train_helpers.h"
#include "train/data/data_setup.h"
#include "train/loop/data_args.h"

namespace {
// 60 documents of counting sequences (t, t+1, ... mod 40): learnable structure.
std::string write_corpus(const train_test::TempDir& dir) {
  const std::string prefix = dir / "corpus_text_document";
  suite::dataset::IndexedDatasetWriter w(prefix, suite::dataset::DType::UInt16);
  for (int d = 0; d < 60; ++d) {
    std::vector<uint16_t> doc;
    for (int i = 0; i < 10 + d % 7; ++i) doc.push_back(uint16_t((d + i) % 40));
    w.add_item(doc);
    w.end_document();
  }
  w.finalize();
  return prefix;
}

std::vector<std::string> data_flags(const std::string& prefix, std::vector<std::string> extra) {
  std::vector<std::string> f = {"--data-path", prefix, "--split", "90,10,0"};
  f.insert(f.end(), extra.begin(), extra.end());
  auto t = train_test::tiny_flags(f);
  // drop the mock-data flags of tiny_flags
  for (const char* drop : {"--mock-data-samples"}) {
    auto at = std::find(t.begin(), t.end(), drop);
    if (at != t.end()) t.erase(at, at + 2);
  }
  t.erase(std::find(t.begin(), t.end(), "--mock-data"));
  return t;
}
}  // namespace

TEST_CASE("samples come from the index map; labels are inputs shifted by one") {
  train_test::TempDir dir("gpt-train-data");
  const auto prefix = write_corpus(dir);
  auto a = train_test::parse(data_flags(prefix, {"--train-iters", "6"}));
  auto d = gpt::open_data(gpt::data_config(a, 6));
  REQUIRE(d.train->size() >= 24);
  std::vector<int> tok(9), in(8), tgt(8);
  d.train->sample(3, tok.data());
  gpt::fill_batch(*d.train, 3, 1, 8, in.data(), tgt.data());
  for (int t = 0; t < 8; ++t) {
    CHECK(in[t] == tok[t]);
    CHECK(tgt[t] == tok[t + 1]);
  }
  // built index maps are cached under Megatron's classic names
  CHECK(std::filesystem::exists(prefix + "_train_indexmap_24ns_8sl_1234s_doc_idx.npy"));
  CHECK(d.valid->size() == 0);  // --eval-iters 0 asks for no validation samples
}

TEST_CASE("loss falls on a real (tiny) dataset; validation works; empty split does not crash") {
  train_test::TempDir dir("gpt-train-data2");
  const auto prefix = write_corpus(dir);
  std::string log;
  auto r = train_test::run(data_flags(prefix, {"--train-iters", "30", "--eval-interval", "10",
                                               "--eval-iters", "1"}),
                           &log);
  CHECK(r.losses.back() < r.losses.front() - 0.5);
  CHECK(r.validation_losses.size() == 3);
  auto empty = train_test::run(data_flags(prefix, {"--train-iters", "3", "--split", "100,0,0",
                                                   "--eval-iters", "2"}),
                               &log);
  CHECK(empty.validation_losses.empty());
  CHECK(log.find("validation split is empty") != std::string::npos);
}

TEST_CASE("data errors: missing files, vocabulary smaller than the data's ids") {
  train_test::TempDir dir("gpt-train-data3");
  const auto prefix = write_corpus(dir);
  CHECK_THROWS_WITH_AS(train_test::run(data_flags(dir / "missing", {"--train-iters", "3"})),
                       doctest::Contains("dataset not found"), suite::ToolError);
  CHECK_THROWS_WITH_AS(
      train_test::run(data_flags(prefix, {"--train-iters", "3", "--vocab-size", "20"})),
      doctest::Contains("holds token id 39 but the vocabulary has only 20"), suite::ToolError);
}

TEST_CASE("per-split data: --train-data-path and --valid-data-path, each read whole") {
  train_test::TempDir dir("gpt-train-data4");
  const auto prefix = write_corpus(dir);
  auto flags = data_flags(prefix, {"--train-iters", "3", "--eval-interval", "2", "--eval-iters", "1"});
  // --data-path P --split S becomes --train-data-path P --valid-data-path P.
  const auto at = std::find(flags.begin(), flags.end(), "--data-path");
  *at = "--train-data-path";
  flags.insert(flags.end(), {"--valid-data-path", prefix});
  const gpt::TrainArgs a = train_test::parse(flags);
  const gpt::DataConfig d = gpt::data_config(a, 3);
  const auto splits = gpt::open_data(d);
  // One epoch of the whole corpus in each split: the valid split is not cut to 10%.
  CHECK(splits.valid->size() == splits.train->size());
  CHECK_NOTHROW(train_test::run(flags));

  // The same lists from Megatron-core's --per-split-data-args-path file.
  const std::string json = dir / "per-split.json";
  std::ofstream(json) << "{\"train\": [\"" << prefix << "\"], \"valid\": \"" << prefix << "\", \"test\": null}";
  auto from_file = data_flags(prefix, {"--train-iters", "3", "--eval-interval", "2", "--eval-iters", "1"});
  const auto dp0 = std::find(from_file.begin(), from_file.end(), "--data-path");
  from_file.erase(dp0, dp0 + 2);
  from_file.insert(from_file.end(), {"--per-split-data-args-path", json});
  const auto file_splits = gpt::open_data(gpt::data_config(train_test::parse(from_file), 3));
  CHECK(file_splits.valid->size() == splits.valid->size());

  using suite::UsageError;
  auto both = flags;
  both.insert(both.end(), {"--data-path", prefix});
  CHECK_THROWS_WITH_AS(train_test::parse(both), doctest::Contains("exclude each other"), UsageError);
  auto valid_only = data_flags(prefix, {"--train-iters", "3"});
  const auto dp = std::find(valid_only.begin(), valid_only.end(), "--data-path");
  *dp = "--valid-data-path";
  CHECK_THROWS_WITH_AS(train_test::parse(valid_only), doctest::Contains("need --train-data-path"), UsageError);
}
