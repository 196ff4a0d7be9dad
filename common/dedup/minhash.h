// MinHash signatures and LSH banding.
//
// K = bands × rows permutations. Permutation i maps a 64-bit shingle hash x to
// a_i·x + b_i (mod 2^64), with a_i odd, both drawn from splitmix64(seed): a bijection of the
// 64-bit space whose high bits (which decide the minimum) are well mixed because x is already an
// XXH3 hash. The signature is the per-permutation minimum over the shingles; band j is the
// XXH3_64 hash (seeded with j) of its `rows` minima. Two documents are LSH candidates when any
// band hash is equal; with Jaccard similarity s that happens with probability 1 − (1 − s^r)^b.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace suite::dedup {

struct BandsRows {
  int bands = 14;
  int rows = 8;
};

// P(candidate) = 1 − (1 − s^rows)^bands.
double s_curve(double s, BandsRows br);

// The (b, r) with b·r ≤ num_perm minimising the FP area ∫₀ᵗ P + the FN area ∫ₜ¹ (1 − P), equal
// weights (datasketch/text-dedup's optimal_param); ties go to fewer permutations.
BandsRows choose_bands_rows(double threshold, int num_perm);

// "b×r = 14×8 (112 hashes), midpoint 0.719; P(candidate) at s=0.50 0.053, ..." for the log.
std::string describe_s_curve(BandsRows br);

class MinHasher {
 public:
  MinHasher(BandsRows br, uint64_t seed);
  int num_perm() const { return br_.bands * br_.rows; }
  const BandsRows& bands_rows() const { return br_; }
  // Signature of a non-empty list of shingle hashes: num_perm() minima.
  void signature(std::span<const uint64_t> shingles, std::vector<uint64_t>& sig) const;
  // One hash per band from a signature.
  void band_hashes(std::span<const uint64_t> sig, std::span<uint64_t> bands) const;

 private:
  BandsRows br_;
  std::vector<uint64_t> a_, b_;
};

uint64_t splitmix64(uint64_t& state);

}  // namespace suite::dedup
