#include "common/dedup/minhash_cluster.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <numeric>
#include <queue>
#include <thread>

#include "common/dedup/union_find.h"

namespace suite::dedup {
namespace {

using Pairs = std::vector<std::pair<uint32_t, uint32_t>>;

// k-way merge of one band's sorted sources; pairs each bucket member with the bucket's first.
void band_pairs(const DocTable& table, const std::vector<uint8_t>& eligible,
                std::vector<std::unique_ptr<BandSource>> sources, Pairs& out) {
  using Item = std::pair<BandRecord, size_t>;
  auto greater = [](const Item& a, const Item& b) { return b.first < a.first; };
  std::priority_queue<Item, std::vector<Item>, decltype(greater)> heap(greater);
  for (size_t s = 0; s < sources.size(); ++s) {
    BandRecord r;
    if (sources[s]->next(r)) heap.push({r, s});
  }
  bool have = false;
  uint64_t bucket = 0;
  int64_t anchor = -1;
  while (!heap.empty()) {
    auto [r, s] = heap.top();
    heap.pop();
    BandRecord nr;
    if (sources[s]->next(nr)) heap.push({nr, s});
    uint32_t d = table.index_of(r.doc);
    if (!eligible[d]) continue;
    if (!have || r.hash != bucket) {
      have = true;
      bucket = r.hash;
      anchor = d;
      continue;
    }
    if (static_cast<int64_t>(d) != anchor) out.emplace_back(static_cast<uint32_t>(anchor), d);
  }
}

}  // namespace

ClusterResult cluster_documents(const DocTable& table, uint32_t bands, const OpenBand& open_band,
                                const ClusterOptions& options) {
  const size_t n = table.size();
  ClusterResult res;
  UnionFind uf(n);
  std::vector<uint8_t> eligible(n, 1);  // first of its exact group

  if (options.exact) {
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return table.exact(a) != table.exact(b) ? table.exact(a) < table.exact(b) : a < b;
    });
    size_t start = 0;
    for (size_t i = 1; i < n; ++i) {
      if (!(table.exact(order[i]) == table.exact(order[start]))) {
        start = i;
        continue;
      }
      uf.unite(order[start], order[i]);
      eligible[order[i]] = 0;
    }
  }

  if (options.near && bands > 0) {
    int threads = std::max(1, std::min<int>(options.threads, static_cast<int>(bands)));
    std::vector<Pairs> per_thread(threads);
    std::vector<std::exception_ptr> errors(threads);
    auto work = [&](int t) {
      try {
        for (uint32_t b = static_cast<uint32_t>(t); b < bands; b += static_cast<uint32_t>(threads))
          band_pairs(table, eligible, open_band(b), per_thread[t]);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (auto& th : pool) th.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    Pairs pairs;
    for (auto& p : per_thread) {
      pairs.insert(pairs.end(), p.begin(), p.end());
      Pairs().swap(p);
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    res.candidate_pairs = pairs.size();
    if (options.verify) {
      std::vector<bool> ok = options.verify(pairs);
      for (size_t i = 0; i < pairs.size(); ++i)
        if (ok[i]) {
          ++res.verified_pairs;
          uf.unite(pairs[i].first, pairs[i].second);
        }
    } else {
      res.verified_pairs = pairs.size();
      for (auto [a, b] : pairs) uf.unite(a, b);
    }
  }

  // Representatives: per root, the smallest member and the kept member.
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> min_of(n, kNone), kept(n, kNone);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t r = uf.find(i);
    if (min_of[r] == kNone) min_of[r] = i;
    if (kept[r] == kNone) {
      kept[r] = i;
    } else if (options.keep == KeepPolicy::kLongest && table.length(i) > table.length(kept[r])) {
      kept[r] = i;
    }
  }
  res.kept_of.resize(n);
  res.cluster.resize(n);
  res.match.assign(n, Match::kKept);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t r = uf.find(i);
    res.kept_of[i] = kept[r];
    res.cluster[i] = min_of[r];
    if (min_of[r] == i && uf.component_size(i) > 1) ++res.clusters;
    if (kept[r] == i) continue;
    if (options.exact && table.exact(i) == table.exact(kept[r])) {
      res.match[i] = Match::kExact;
      ++res.exact_docs;
      res.exact_bytes += table.length(i);
    } else {
      res.match[i] = Match::kNear;
      ++res.near_docs;
      res.near_bytes += table.length(i);
    }
  }
  return res;
}

}  // namespace suite::dedup
