// Text normalisation before exact hashing and shingling (minhash-dedup). Each step is a flag:
//   lowercase  full Unicode simple lower-casing (ASCII fast path)
//   nfkc       Unicode NFKC (ICU; skipped for pure-ASCII text, which NFKC leaves unchanged)
//   punct      punctuation (Unicode P* categories, ASCII symbols) becomes a space
//   space      runs of white space become one ' ', leading/trailing space is dropped
//   digits     every run of decimal digits (Nd) becomes "0"
// Steps run in the order nfkc, lowercase, digits, punct, space (datatrove's simplify_text order,
// with NFKC in place of its NFD-and-drop-marks step).
#pragma once

#include <string>
#include <string_view>

namespace suite::dedup {

struct NormalizeOptions {
  bool lowercase = true;
  bool nfkc = true;
  bool punct = true;
  bool space = true;
  bool digits = true;
  // "lowercase,nfkc,punct,space,digits", "none" or any subset; throws UsageError on unknown names.
  static NormalizeOptions parse(std::string_view list);
  std::string describe() const;  // canonical comma list, or "none"
};

class Normalizer {
 public:
  explicit Normalizer(NormalizeOptions options = {});
  // Writes the normalised form of `in` (valid UTF-8) to `out` (cleared first).
  void normalize(std::string_view in, std::string& out);
  const NormalizeOptions& options() const { return options_; }

 private:
  NormalizeOptions options_;
  const void* nfkc_ = nullptr;  // icu::Normalizer2*, owned by ICU
  std::string nfkc_buf_;
};

}  // namespace suite::dedup
