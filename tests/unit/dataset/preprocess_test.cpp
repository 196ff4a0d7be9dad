#include <doctest/doctest.h>

#include <fstream>

#include "common/dataset/indexed_dataset.h"
#include "common/dataset/indexed_dataset_writer.h"
#include "common/dataset/preprocess.h"
#include "test_support.h"

using namespace suite::dataset;
using namespace dataset_test;

TEST_CASE("python_float_str matches Python's repr of floats") {
  CHECK(python_float_str(1234.5678901234567) == "1234.5678901234567");
  CHECK(python_float_str(0.1) == "0.1");
  CHECK(python_float_str(2.0) == "2.0");
  CHECK(python_float_str(1e16) == "1e+16");
  CHECK(python_float_str(123456789012345680.0) == "1.2345678901234568e+17");
  CHECK(python_float_str(9999999999999998.0) == "9999999999999998.0");
  CHECK(python_float_str(0.0001) == "0.0001");
  CHECK(python_float_str(0.00001) == "1e-05");
  CHECK(python_float_str(0.000012345) == "1.2345e-05");
  CHECK(python_float_str(-3.5) == "-3.5");
  CHECK(python_float_str(0.0) == "0.0");
}

TEST_CASE("the progress line has preprocess_data.py's shape") {
  // 1000 documents, 2 * 1024 * 1024 characters in 2 s.
  CHECK(megatron_progress_line(1000, 2 * 1024 * 1024, 2.0) == "Processed 1000 documents (500.0 docs/s, 1.0 MB/s).");
}

TEST_CASE("output prefixes follow preprocess_data.py naming") {
  CHECK(preprocess_output_prefix("out/my-gpt2", "text", false) == "out/my-gpt2_text_document");
  CHECK(preprocess_output_prefix("x", "body", true) == "x_body_sentence");
}

TEST_CASE("dataset_stats and document_tokens on a small dataset with an empty document") {
  TempDir tmp;
  const std::string prefix = tmp / "d";
  {
    IndexedDatasetWriter w(prefix, DType::UInt16);
    std::vector<uint16_t> a{5, 7, 9}, b{1}, c{2, 3};
    std::vector<int32_t> la{3}, lbc{1, 2};
    w.add_document(std::span<const uint16_t>(a), std::span<const int32_t>(la));
    w.add_document(std::span<const uint16_t>(), std::span<const int32_t>());
    std::vector<uint16_t> bc{1, 2, 3};
    w.add_document(std::span<const uint16_t>(bc), std::span<const int32_t>(lbc));
    w.finalize();
  }
  IndexedDataset d(prefix);
  DatasetStats s = dataset_stats(d);
  CHECK(s.sequences == 3);
  CHECK(s.documents == 3);
  CHECK(s.empty_documents == 1);
  CHECK(s.tokens == 6);
  CHECK(s.min_length == 1);
  CHECK(s.max_length == 3);
  CHECK(s.mean_length == doctest::Approx(2.0));
  CHECK(s.min_token == 1);
  CHECK(s.max_token == 9);
  CHECK(document_tokens(d, 1).empty());
  CHECK(document_tokens(d, 2) == std::vector<int64_t>{1, 2, 3});
  CHECK_THROWS_AS(document_tokens(d, 3), suite::ToolError);
}

TEST_CASE("run_preprocess: ids, empty documents, EOD and sentence lists, any thread count") {
  TempDir tmp;
  const std::string in = tmp / "in.jsonl";
  {
    std::ofstream f(in);
    f << "{\"ids\": [10, 11]}\n{\"ids\": []}\n{\"ids\": [[1], [], [2, 3]]}\n";
  }
  for (int threads : {1, 2}) {
    suite::CommonOptions o;
    o.inputs = {in};
    o.threads = threads;
    o.quiet = true;
    PreprocessConfig c;
    c.output_prefix = tmp / ("o" + std::to_string(threads));
    c.append_eod = true;
    c.eod_id = 99;
    c.quiet = true;
    c.max_token_id = 65535;
    auto r = run_preprocess(o, c);
    REQUIRE(r.prefixes.size() == 1);
    CHECK(r.documents == 3);
    IndexedDataset d(r.prefixes[0]);
    CHECK(r.prefixes[0] == c.output_prefix + "_text_document");
    CHECK(d.sequence_count() == 3);  // [10 11 99], [1], [2 3 99]
    CHECK(d.document_indices() == std::vector<int64_t>{0, 1, 1, 3});
    CHECK(document_tokens(d, 0) == std::vector<int64_t>{10, 11, 99});
    CHECK(document_tokens(d, 2) == std::vector<int64_t>{1, 2, 3, 99});
    CHECK(d.sequence_length(2) == 3);
  }
}
