// The TensorBoard encoder and the metrics file names (the events are also read back by protobuf's
// own reader in tests/e2e/test_tensorboard.sh).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "train/loop/crc32c.h"
#include "train/loop/run_recorder.h"
#include "train/loop/tensorboard_writer.h"

using namespace gpt;

TEST_CASE("crc32c: the check value of the Castagnoli polynomial") {
  CHECK(crc32c("123456789", 9) == 0xE3069283u);
  CHECK(crc32c("", 0) == 0u);
  const uint32_t c = crc32c("a", 1);
  CHECK(masked_crc32c("a", 1) == ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST_CASE("tfrecord framing: length, its masked crc, data, its masked crc") {
  const std::string r = frame_tfrecord("xyz");
  REQUIRE(r.size() == 8 + 4 + 3 + 4);
  uint64_t n;
  std::memcpy(&n, r.data(), 8);
  CHECK(n == 3);
  uint32_t hc, dc;
  std::memcpy(&hc, r.data() + 8, 4);
  std::memcpy(&dc, r.data() + 15, 4);
  CHECK(hc == masked_crc32c(r.data(), 8));
  CHECK(r.substr(12, 3) == "xyz");
  CHECK(dc == masked_crc32c("xyz", 3));
}

TEST_CASE("scalar event bytes, field by field") {
  const std::string e = encode_scalar_event(1.5, 300, "lm loss", 2.0f);
  std::string want;
  want += '\x09';  // wall_time: field 1, fixed64
  double w = 1.5;
  want.append(reinterpret_cast<const char*>(&w), 8);
  want += "\x10\xac\x02";  // step: field 2, varint 300
  want += "\x2a\x10";      // summary: field 5, 16 bytes
  want += "\x0a\x0e";      // value: field 1, 14 bytes
  want += "\x0a\x07lm loss";
  want += '\x15';  // simple_value: field 2, fixed32
  float v = 2.0f;
  want.append(reinterpret_cast<const char*>(&v), 4);
  CHECK(e == want);
  // step 0 is left out, as proto3 serializers do
  CHECK(encode_scalar_event(1.5, 0, "x", 1.0f).find('\x10') == std::string::npos);
  const std::string fv = encode_file_version_event(2.0);
  CHECK(fv.substr(9) == std::string("\x1a\x0d"
                                    "brain.Event:2"));
}

TEST_CASE("per-rank metrics file names") {
  CHECK(rank_metrics_path("m.jsonl", 3) == "m.rank3.jsonl");
  CHECK(rank_metrics_path("out/run.v2/metrics", 0) == "out/run.v2/metrics.rank0");
  CHECK(rank_metrics_path("out/.hidden", 1) == "out/.hidden.rank1");
  CHECK(rank_metrics_path("a/b.c.jsonl", 12) == "a/b.c.rank12.jsonl");
}

TEST_CASE("metrics files: rank r writes PATH.rank<r>, the last rank also PATH; config first") {
  const std::string dir = "/tmp/run_record_test." + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  TrainArgs a;
  a.metrics_file = dir + "/m.jsonl";
  a.train_iters = 10;
  a.global_batch_size = 8;
  a.command_line = "gpt-train --x \"quoted\"";
  ModelConfig m;
  m.num_layers = 2;
  m.hidden_size = 8;
  m.num_heads = 2;
  m.ffn_hidden_size = 32;
  m.seq_length = 4;
  for (int rank = 0; rank < 3; ++rank) {
    RunRecorder r(a, m, "cuda", rank, 3);
    IntervalRecord iv;
    iv.log.iteration = 5;
    iv.log.consumed_samples = 40;
    iv.log.lm_loss = 1.25;
    iv.log.grad_norm = -1;  // skipped: null
    iv.stage_compute_ms = 10.0 * (rank + 1);
    r.interval(iv);
  }
  auto lines = [](const std::string& p) {
    std::ifstream in(p);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  for (int rank = 0; rank < 3; ++rank) {
    auto l = lines(dir + "/m.rank" + std::to_string(rank) + ".jsonl");
    REQUIRE(l.size() == 2);
    CHECK(l[0].rfind("{\"type\":\"config\"", 0) == 0);
    CHECK(l[0].find("\"rank\":" + std::to_string(rank) + ",\"world_size\":3") != std::string::npos);
    CHECK(l[0].find("\"layout\":{\"tensor\":1,\"pipeline\":1,\"data\":3}") != std::string::npos);
    CHECK(l[0].find("\"gpus\":3") != std::string::npos);
    CHECK(l[0].find("\"command_line\":\"gpt-train --x \\\"quoted\\\"\"") != std::string::npos);
    CHECK(l[1].find("\"tokens\":160") != std::string::npos);
    CHECK(l[1].find("\"grad_norm\":null") != std::string::npos);
    CHECK(l[1].find("\"stage_compute_ms\":" + std::to_string(10 * (rank + 1))) !=
          std::string::npos);
    CHECK(l[1].find("stage_wait_ms") == std::string::npos);  // unknown: left out
  }
  auto main_file = lines(dir + "/m.jsonl");
  REQUIRE(main_file.size() == 2);
  CHECK(main_file[0].find("\"rank\":2") != std::string::npos);
  std::filesystem::remove_all(dir);
}
