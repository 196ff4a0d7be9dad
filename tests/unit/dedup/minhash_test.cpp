// common/dedup (minhash-dedup): normalisation, shingles, MinHash/banding, union-find, band files,
// clustering.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/cli/error.h"
#include "common/dedup/band_file.h"
#include "common/dedup/dedup_params.h"
#include "common/dedup/doc_table.h"
#include "common/dedup/minhash.h"
#include "common/dedup/minhash_cluster.h"
#include "common/dedup/normalize.h"
#include "common/dedup/shingle.h"
#include "common/dedup/union_find.h"

using namespace suite;
using namespace suite::dedup;

namespace {
std::string norm(std::string_view s, const char* steps = "lowercase,nfkc,punct,space,digits") {
  Normalizer n(NormalizeOptions::parse(steps));
  std::string out;
  n.normalize(s, out);
  return out;
}
}  // namespace

TEST_CASE("normalisation steps") {
  CHECK(norm("Hello,   World!! 2024-05\tok") == "hello world 0 0 ok");
  CHECK(norm("  Ünïcode «quotes» ١٢٣ x ") == "ünïcode quotes 0 x");
  CHECK(norm("ﬁne Ｆｕｌｌ") == "fine full");                 // NFKC: ligature and full-width
  CHECK(norm("ﬁne Ｆｕｌｌ", "lowercase") == "ﬁne ｆｕｌｌ");  // without NFKC they stay
  CHECK(norm("A.B  c", "none") == "A.B  c");
  CHECK(norm("A.B  c", "punct") == "A B  c");
  CHECK(norm("A.B  c", "space") == "A.B c");
  CHECK(norm("a1234b 56", "digits") == "a0b 0");
  CHECK(NormalizeOptions::parse("space,lowercase").describe() == "lowercase,space");
  CHECK(NormalizeOptions::parse("none").describe() == "none");
  CHECK_THROWS_AS(NormalizeOptions::parse("lower"), UsageError);
}

TEST_CASE("word and char shingles") {
  ShingleOptions w{ShingleKind::kWord, 3, 1};
  std::vector<uint64_t> h;
  shingle_hashes("a b c d", w, h);
  REQUIRE(h.size() == 2);
  std::vector<uint64_t> h2;
  shingle_hashes("b c d", w, h2);
  REQUIRE(h2.size() == 1);
  CHECK(h[1] == h2[0]);  // "b c d" hashes the same wherever it appears
  shingle_hashes("a b", w, h);
  CHECK(h.empty());  // fewer words than n: no shingles
  ShingleOptions c{ShingleKind::kChar, 2, 1};
  shingle_hashes("añb", c, h);  // code points, not bytes
  CHECK(h.size() == 2);
  ShingleOptions other_seed{ShingleKind::kWord, 3, 2};
  shingle_hashes("b c d", other_seed, h);
  CHECK(h[0] != h2[0]);
  std::vector<uint64_t> s;
  shingle_set("x y x y x y", ShingleOptions{ShingleKind::kWord, 2, 1}, s);
  CHECK(s.size() == 2);  // "x y" and "y x"
  CHECK(jaccard({1, 2, 3}, {2, 3, 4}) == doctest::Approx(0.5));
  CHECK(jaccard({}, {}) == 0.0);
}

TEST_CASE("s-curve and the choice of bands and rows") {
  BandsRows d{14, 8};
  CHECK(s_curve(0.8, d) == doctest::Approx(0.924).epsilon(0.002));
  CHECK(s_curve(0.7, d) == doctest::Approx(0.565).epsilon(0.002));
  // The spec's derived optima (datasketch objective).
  BandsRows br = choose_bands_rows(0.7, 256);
  CHECK(br.bands == 25);
  CHECK(br.rows == 10);
  br = choose_bands_rows(0.8, 128);
  CHECK(br.bands == 9);
  CHECK(br.rows == 13);
  CHECK(describe_s_curve(d).find("14×8") != std::string::npos);
}

TEST_CASE("minhash signatures estimate Jaccard; banding is deterministic") {
  MinHasher m({16, 8}, 1);
  std::mt19937_64 rng(3);
  std::vector<uint64_t> a, b;
  for (int i = 0; i < 2000; ++i) a.push_back(rng());
  b.assign(a.begin(), a.begin() + 1200);  // J(a, b) = 1200 / 2000 = 0.6
  std::vector<uint64_t> sa, sb;
  m.signature(a, sa);
  m.signature(b, sb);
  REQUIRE(sa.size() == 128);
  int equal = 0;
  for (size_t i = 0; i < sa.size(); ++i) equal += sa[i] == sb[i];
  double est = equal / 128.0;
  CHECK(std::abs(est - 0.6) < 4 * std::sqrt(0.6 * 0.4 / 128));
  // The signature does not depend on shingle order or repetition.
  std::vector<uint64_t> rev(a.rbegin(), a.rend()), sr;
  rev.push_back(a[5]);
  m.signature(rev, sr);
  CHECK(sr == sa);
  std::vector<uint64_t> ba(16), bb(16), bc(16);
  m.band_hashes(sa, ba);
  m.band_hashes(sr, bb);
  CHECK(ba == bb);
  MinHasher other({16, 8}, 2);
  std::vector<uint64_t> so;
  other.signature(a, so);
  CHECK(so != sa);
  // A band hash changes when one of its rows does, and only that band's.
  sr[9] ^= 1;
  m.band_hashes(sr, bc);
  CHECK(bc[1] != ba[1]);
  CHECK(bc[0] == ba[0]);
  CHECK(bc[2] == ba[2]);
}

TEST_CASE("union-find") {
  UnionFind uf(6);
  CHECK(uf.unite(0, 1));
  CHECK(uf.unite(2, 3));
  CHECK(!uf.unite(1, 0));
  CHECK(uf.unite(1, 3));
  CHECK(uf.find(0) == uf.find(2));
  CHECK(uf.find(4) != uf.find(0));
  CHECK(uf.component_size(3) == 4);
  CHECK(uf.component_size(5) == 1);
}

TEST_CASE("band files: round trip, order check, parameter check") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("minhash-test-" + std::to_string(::getpid()));
  fs::create_directories(dir / "bands" / "band-002");
  std::string path = band_file_path(dir.string(), 2, 1, 3);
  CHECK(path == dir.string() + "/bands/band-002/shard-00001-of-00003.bin");
  std::vector<BandRecord> recs{{1, 5}, {1, 7}, {9, 2}};
  DedupParams p;
  write_band_file(path, {kBandMagic, p.describe(), 2, 1, 3, recs.size()}, recs);
  BandFileReader r(path, p.describe(), 2);
  BandRecord x;
  std::vector<BandRecord> back;
  while (r.next(x)) back.push_back(x);
  CHECK(back == recs);
  DedupParams q = p;
  q.br.rows = 6;
  try {
    BandFileReader bad(path, q.describe(), 2);
    FAIL("accepted other parameters");
  } catch (const ToolError& e) {
    CHECK(std::string(e.what()).find("rows=8 in the file vs 6 here") != std::string::npos);
  }
  CHECK_THROWS_AS(BandFileReader(path, p.describe(), 3), ToolError);
  std::vector<BandRecord> unsorted{{9, 1}, {1, 1}};
  write_band_file(path, {kBandMagic, p.describe(), 2, 1, 3, unsorted.size()}, unsorted);
  BandFileReader u(path, p.describe(), 2);
  CHECK(u.next(x));
  CHECK_THROWS_AS(u.next(x), ToolError);
  fs::remove_all(dir);
}

TEST_CASE("clustering: exact groups, LSH buckets, keep policy") {
  DocTable t;
  // docs 0..4 in file 0; 0 and 3 exact copies; 1 ~ 2 share a band; 4 alone.
  t.add(doc_key(0, 1), 100, {1, 1}, "\"a\"");
  t.add(doc_key(0, 2), 50, {2, 2}, "");
  t.add(doc_key(0, 3), 80, {3, 3}, "\"c\"");
  t.add(doc_key(0, 4), 120, {1, 1}, "\"d\"");
  t.add(doc_key(0, 5), 10, {5, 5}, "\"e\"");
  t.compute_offsets();
  std::vector<std::vector<BandRecord>> bands{
      {{7, doc_key(0, 2)}, {7, doc_key(0, 3)}, {8, doc_key(0, 1)}, {8, doc_key(0, 4)}, {9, doc_key(0, 5)}}};
  auto open = [&](uint32_t b) {
    std::vector<std::unique_ptr<BandSource>> v;
    v.push_back(std::make_unique<VectorBandSource>(bands[b]));
    return v;
  };
  ClusterOptions o;
  ClusterResult r = cluster_documents(t, 1, open, o);
  CHECK(r.match[0] == Match::kKept);
  CHECK(r.match[3] == Match::kExact);
  CHECK(r.kept_of[3] == 0);
  CHECK(r.match[1] == Match::kKept);
  CHECK(r.match[2] == Match::kNear);
  CHECK(r.kept_of[2] == 1);
  CHECK(r.match[4] == Match::kKept);
  CHECK(r.clusters == 2);
  // Band 8 pairs 0 with 3, but 3 is an exact copy and takes no part in LSH: one candidate pair.
  CHECK(r.candidate_pairs == 1);
  CHECK(r.exact_bytes == 120);
  o.keep = KeepPolicy::kLongest;
  r = cluster_documents(t, 1, open, o);
  CHECK(r.kept_of[0] == 3);
  CHECK(r.match[0] == Match::kExact);
  CHECK(r.kept_of[1] == 2);
  CHECK(r.cluster[1] == 1);
  o.keep = KeepPolicy::kFirst;
  o.verify = [](const std::vector<std::pair<uint32_t, uint32_t>>& pairs) { return std::vector<bool>(pairs.size(), false); };
  r = cluster_documents(t, 1, open, o);
  CHECK(r.match[2] == Match::kKept);
  CHECK(r.verified_pairs == 0);
  // Ids: the id field's JSON, else the global index.
  std::string s;
  t.append_id(s, 1);
  t.append_id(s, 2);
  CHECK(s == "1\"c\"");
}
