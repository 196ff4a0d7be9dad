#include "common/filter/text_repair.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include "common/cli/error.h"
#include "common/filter/mojibake.h"
#include "common/unicode/utf8.h"

namespace suite::filter {
namespace {

bool is_space_separator(char32_t cp) {
  return cp == 0xA0 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

const icu::Normalizer2& nfc() {
  static const icu::Normalizer2* n = [] {
    UErrorCode err = U_ZERO_ERROR;
    const icu::Normalizer2* p = icu::Normalizer2::getNFCInstance(err);
    if (U_FAILURE(err)) throw ToolError(std::string("ICU NFC: ") + u_errorName(err));
    return p;
  }();
  return *n;
}

}  // namespace

void clean_controls_and_whitespace(std::string_view text, bool controls, bool whitespace, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  const size_t start = out.size();
  size_t newlines = 0;  // pending newlines (emitted before the next visible character)
  size_t pending_ws = out.size();  // where trailing spaces of the current line begin
  auto emit_newline = [&] {
    if (whitespace) out.resize(pending_ws);  // drop trailing spaces and tabs
    ++newlines;
  };
  auto flush_newlines = [&] {
    if (newlines == 0) return;
    size_t k = whitespace ? std::min<size_t>(newlines, 2) : newlines;
    if (whitespace && out.size() == start) k = 0;  // leading blank lines
    out.append(k, '\n');
    newlines = 0;
    pending_ws = out.size();
  };
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7F) {
      // ASCII run: copy up to the next byte that needs a look.
      size_t j = i + 1;
      while (j < n && p[j] >= 0x20 && p[j] < 0x7F) ++j;
      flush_newlines();
      for (size_t k = i; k < j; ++k) {
        out += char(p[k]);
        if (p[k] != ' ') pending_ws = out.size();
      }
      i = j;
      continue;
    }
    if (c == '\n' || c == '\r') {
      emit_newline();
      i += (c == '\r' && i + 1 < n && p[i + 1] == '\n') ? 2 : 1;
      if (!whitespace) {
        out += '\n';
        newlines = 0;
        pending_ws = out.size();
      }
      continue;
    }
    if (c == '\t') {
      flush_newlines();
      out += '\t';
      ++i;
      continue;
    }
    if (c < 0x20 || c == 0x7F) {
      if (!controls) {
        flush_newlines();
        out += char(c);
        pending_ws = out.size();
      }
      ++i;
      continue;
    }
    char32_t cp;
    size_t len = unicode::utf8_decode(p + i, n - i, cp);
    if (controls && ((cp >= 0x80 && cp <= 0x9F) || cp == 0xFEFF)) {
      i += len;
      continue;
    }
    flush_newlines();
    if (whitespace && is_space_separator(cp)) {
      out += ' ';
    } else {
      out.append(text.data() + i, len);
      pending_ws = out.size();
    }
    i += len;
  }
  if (whitespace) out.resize(pending_ws < start ? start : pending_ws);
  else if (newlines) out.append(newlines, '\n');
}

bool to_nfc(std::string_view text, std::string& out) {
  UErrorCode err = U_ZERO_ERROR;
  icu::StringPiece piece(text.data(), int32_t(text.size()));
  if (nfc().isNormalizedUTF8(piece, err) || U_FAILURE(err)) {
    out.append(text);
    return false;
  }
  err = U_ZERO_ERROR;
  size_t mark = out.size();
  icu::StringByteSink<std::string> sink(&out);
  nfc().normalizeUTF8(0, piece, sink, nullptr, err);
  if (U_FAILURE(err)) {
    out.resize(mark);
    out.append(text);
    return false;
  }
  return true;
}

bool TextRepair::repair(std::string_view text, std::string& out) {
  std::string_view cur = text;
  if (config_.mojibake && may_contain_mojibake(cur)) {
    a_.clear();
    if (fix_mojibake(cur, a_) > 0) cur = a_;
  }
  if (config_.controls || config_.whitespace) {
    b_.clear();
    clean_controls_and_whitespace(cur, config_.controls, config_.whitespace, b_);
    cur = b_;
  }
  out.clear();
  if (config_.nfc)
    to_nfc(cur, out);
  else
    out.append(cur);
  return out != text;
}

}  // namespace suite::filter
