#include "common/dedup/normalize.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "common/cli/error.h"
#include "common/unicode/utf8.h"

namespace suite::dedup {

NormalizeOptions NormalizeOptions::parse(std::string_view list) {
  NormalizeOptions o{false, false, false, false, false};
  if (list == "none" || list.empty()) return o;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view name = list.substr(pos, comma - pos);
    if (name == "lowercase") o.lowercase = true;
    else if (name == "nfkc") o.nfkc = true;
    else if (name == "punct") o.punct = true;
    else if (name == "space") o.space = true;
    else if (name == "digits") o.digits = true;
    else
      throw UsageError("--normalize: unknown step '" + std::string(name) +
                       "' (use lowercase,nfkc,punct,space,digits or none)");
    pos = comma + 1;
  }
  return o;
}

std::string NormalizeOptions::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ',';
    s += name;
  };
  add(lowercase, "lowercase");
  add(nfkc, "nfkc");
  add(punct, "punct");
  add(space, "space");
  add(digits, "digits");
  return s.empty() ? "none" : s;
}

Normalizer::Normalizer(NormalizeOptions options) : options_(options) {
  if (options_.nfkc) {
    UErrorCode status = U_ZERO_ERROR;
    nfkc_ = icu::Normalizer2::getNFKCInstance(status);
    if (U_FAILURE(status)) throw ToolError(std::string("ICU NFKC normaliser unavailable: ") + u_errorName(status));
  }
}

namespace {

inline bool ascii_punct(unsigned char c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}
inline bool ascii_space(unsigned char c) { return c == ' ' || (c >= 0x09 && c <= 0x0D); }

}  // namespace

void Normalizer::normalize(std::string_view in, std::string& out) {
  out.clear();
  if (options_.nfkc) {
    bool ascii = true;
    for (unsigned char c : in)
      if (c >= 0x80) {
        ascii = false;
        break;
      }
    if (!ascii) {
      icu::UnicodeString src = icu::UnicodeString::fromUTF8(icu::StringPiece(in.data(), static_cast<int32_t>(in.size())));
      UErrorCode status = U_ZERO_ERROR;
      icu::UnicodeString dst = static_cast<const icu::Normalizer2*>(nfkc_)->normalize(src, status);
      if (U_FAILURE(status)) throw ToolError(std::string("NFKC normalisation failed: ") + u_errorName(status));
      nfkc_buf_.clear();
      dst.toUTF8String(nfkc_buf_);
      in = nfkc_buf_;
    }
  }
  out.reserve(in.size());
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  bool pending_space = false;  // a space run waiting for the next non-space (space mode)
  bool in_digits = false;
  auto emit_space = [&] {
    if (options_.space) {
      pending_space = !out.empty();
    } else {
      out += ' ';
    }
    in_digits = false;
  };
  auto flush_space = [&] {
    if (pending_space) {
      out += ' ';
      pending_space = false;
    }
  };
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      if (options_.digits && c >= '0' && c <= '9') {
        if (!in_digits) {
          flush_space();
          out += '0';
          in_digits = true;
        }
        continue;
      }
      in_digits = false;
      if (options_.punct && ascii_punct(c)) {
        emit_space();
        continue;
      }
      if (options_.space && ascii_space(c)) {
        emit_space();
        continue;
      }
      flush_space();
      if (options_.lowercase && c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c + 32);
      out += static_cast<char>(c);
      continue;
    }
    char32_t cp;
    size_t len = unicode::utf8_decode(p + i, n - i, cp);
    std::string_view raw(in.data() + i, len);
    i += len;
    if (options_.digits && u_charType(static_cast<UChar32>(cp)) == U_DECIMAL_DIGIT_NUMBER) {
      if (!in_digits) {
        flush_space();
        out += '0';
        in_digits = true;
      }
      continue;
    }
    in_digits = false;
    if (options_.punct && u_ispunct(static_cast<UChar32>(cp))) {
      emit_space();
      continue;
    }
    if (options_.space && u_isUWhiteSpace(static_cast<UChar32>(cp))) {
      emit_space();
      continue;
    }
    flush_space();
    if (options_.lowercase) {
      UChar32 lower = u_tolower(static_cast<UChar32>(cp));
      if (lower != static_cast<UChar32>(cp)) {
        unicode::utf8_append(out, static_cast<char32_t>(lower));
        continue;
      }
    }
    out.append(raw);
  }
}

}  // namespace suite::dedup
