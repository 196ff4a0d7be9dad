#include "common/tokenizer/vocab_io.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "common/cli/error.h"
#include "common/io/atomic_file.h"
#include "common/tokenizer/byte_map.h"
#include "common/unicode/utf8.h"

namespace suite::bpe {

std::string bytes_to_display(std::string_view bytes) { return bytes_to_token_text(bytes); }

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ToolError(location(path), std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ToolError(location(path), "read error");
  return std::move(ss).str();
}

void write_vocab_and_merges(const std::string& dir, const std::vector<std::string>& tokens,
                            std::span<const std::pair<TokenId, TokenId>> merges) {
  const std::string vocab = format_vocab_json(tokens), merges_txt = format_merges_txt(tokens, merges);
  AtomicFile vocab_file(dir + "/vocab.json"), merges_file(dir + "/merges.txt");
  vocab_file.write(vocab.data(), vocab.size());
  merges_file.write(merges_txt.data(), merges_txt.size());
  commit_together({&vocab_file, &merges_file});
}

void write_text_file(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ToolError(location(path), std::string("cannot create: ") + std::strerror(errno));
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.flush();
  if (!out) throw ToolError(location(path), "write error");
}

namespace {

// A minimal parser for the one shape vocab.json has: a flat object of string -> integer.
class VocabJsonParser {
 public:
  VocabJsonParser(std::string_view s, std::string_view file) : s_(s), file_(file) {}

  std::vector<std::string> parse() {
    skip_ws();
    expect('{');
    std::vector<std::string> tokens;
    std::vector<uint64_t> id_line;  // line of each id, 0 = unseen
    skip_ws();
    if (peek() == '}') {
      ++i_;
    } else {
      for (;;) {
        skip_ws();
        uint64_t line = line_;
        std::string text = parse_string();
        skip_ws();
        expect(':');
        skip_ws();
        uint64_t id = parse_id();
        std::string bytes;
        if (text.empty()) fail(line, "empty token string");
        if (!token_text_to_bytes(text, bytes))
          fail(line, "token \"" + text + "\" has a character outside the byte-level alphabet");
        if (id >= tokens.size()) {
          tokens.resize(id + 1);
          id_line.resize(id + 1, 0);
        }
        if (id_line[id]) fail(line, "id " + std::to_string(id) + " also used on line " + std::to_string(id_line[id]));
        tokens[id] = std::move(bytes);
        id_line[id] = line;
        skip_ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        break;
      }
    }
    skip_ws();
    if (i_ != s_.size()) fail(line_, "unexpected text after the closing '}'");
    for (size_t id = 0; id < tokens.size(); ++id)
      if (!id_line[id]) throw ToolError(location(file_), "ids are not contiguous: id " + std::to_string(id) + " is missing");
    return tokens;
  }

 private:
  [[noreturn]] void fail(uint64_t line, const std::string& what) const {
    throw ToolError(location(file_, line), what);
  }
  int peek() const { return i_ < s_.size() ? static_cast<unsigned char>(s_[i_]) : -1; }
  void expect(char c) {
    if (peek() != c) {
      std::string got = peek() < 0 ? "end of file" : std::string("'") + s_[i_] + "'";
      fail(line_, std::string("expected '") + c + "', found " + got);
    }
    ++i_;
  }
  void skip_ws() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '\n') ++line_;
      else if (c != ' ' && c != '\t' && c != '\r') break;
      ++i_;
    }
  }
  uint64_t parse_id() {
    if (peek() < '0' || peek() > '9') fail(line_, "token id must be a non-negative integer");
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(s_[i_++] - '0');
      if (v > 0xFFFFFFFEull) fail(line_, "token id too large");
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E') fail(line_, "token id must be an integer");
    return v;
  }
  unsigned hex4() {
    if (i_ + 4 > s_.size()) fail(line_, "truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail(line_, "bad hex digit in \\u escape");
    }
    return v;
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail(line_, "unterminated string");
      char c = s_[i_++];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) fail(line_, "control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) fail(line_, "unterminated string");
      char e = s_[i_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          char32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') fail(line_, "lone surrogate in \\u escape");
            i_ += 2;
            char32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail(line_, "bad surrogate pair in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail(line_, "lone surrogate in \\u escape");
          }
          unicode::utf8_append(out, cp);
          break;
        }
        default: fail(line_, std::string("bad escape '\\") + e + "'");
      }
    }
    if (!unicode::utf8_is_valid(out)) fail(line_, "string is not valid UTF-8");
    return out;
  }

  std::string_view s_;
  std::string_view file_;
  size_t i_ = 0;
  uint64_t line_ = 1;
};

void append_json_string_ascii(std::string& out, std::string_view utf8) {
  static const char* hex = "0123456789abcdef";
  auto u4 = [&](unsigned v) {
    out += "\\u";
    for (int k = 3; k >= 0; --k) out.push_back(hex[(v >> (4 * k)) & 15]);
  };
  out.push_back('"');
  auto p = reinterpret_cast<const unsigned char*>(utf8.data());
  for (size_t i = 0; i < utf8.size();) {
    char32_t cp;
    i += unicode::utf8_decode(p + i, utf8.size() - i, cp);
    if (cp == '"') out += "\\\"";
    else if (cp == '\\') out += "\\\\";
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp == '\b') out += "\\b";
    else if (cp == '\f') out += "\\f";
    else if (cp >= 0x20 && cp < 0x7F) out.push_back(static_cast<char>(cp));
    else if (cp < 0x10000) u4(cp);
    else {
      cp -= 0x10000;
      u4(0xD800 + (cp >> 10));
      u4(0xDC00 + (cp & 0x3FF));
    }
  }
  out.push_back('"');
}

}  // namespace

std::vector<std::string> parse_vocab_json(std::string_view content, std::string_view file_name) {
  return VocabJsonParser(content, file_name).parse();
}

std::vector<std::string> read_vocab_json(const std::string& path) {
  return parse_vocab_json(read_text_file(path), path);
}

std::vector<std::pair<TokenId, TokenId>> parse_merges_txt(std::string_view content, std::string_view file_name,
                                                          const std::vector<std::string>& tokens,
                                                          std::string_view vocab_name) {
  const std::string vocabulary =
      vocab_name.empty() ? "the vocabulary" : "the vocabulary " + std::string(vocab_name) + " (the two files do not belong together)";
  std::unordered_map<std::string_view, TokenId> ids;
  ids.reserve(tokens.size());
  for (TokenId id = 0; id < tokens.size(); ++id) ids.emplace(tokens[id], id);
  std::vector<std::pair<TokenId, TokenId>> merges;
  std::string left, right;
  uint64_t line_no = 0;
  size_t pos = 0;
  while (pos < content.size()) {
    size_t nl = content.find('\n', pos);
    std::string_view line = content.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? content.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1 && line.starts_with("#version")) continue;
    if (line.empty()) {
      if (pos >= content.size()) break;  // blank last line
      throw ToolError(location(file_name, line_no), "empty line");
    }
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size() ||
        line.find(' ', sp + 1) != std::string_view::npos)
      throw ToolError(location(file_name, line_no), "expected two tokens separated by one space");
    left.clear();
    right.clear();
    if (!token_text_to_bytes(line.substr(0, sp), left) || !token_text_to_bytes(line.substr(sp + 1), right))
      throw ToolError(location(file_name, line_no), "token has a character outside the byte-level alphabet");
    auto l = ids.find(left), r = ids.find(right);
    if (l == ids.end() || r == ids.end())
      throw ToolError(location(file_name, line_no),
                      "token \"" + std::string(l == ids.end() ? line.substr(0, sp) : line.substr(sp + 1)) +
                          "\" is not in " + vocabulary);
    if (!ids.count(left + right))
      throw ToolError(location(file_name, line_no),
                      "merged token \"" + bytes_to_display(left + right) + "\" is not in " + vocabulary);
    merges.emplace_back(l->second, r->second);
  }
  return merges;
}

std::vector<std::pair<TokenId, TokenId>> read_merges_txt(const std::string& path,
                                                         const std::vector<std::string>& tokens,
                                                         std::string_view vocab_name) {
  return parse_merges_txt(read_text_file(path), path, tokens, vocab_name);
}

namespace {
// Special tokens (<|endoftext|>, <s>, [PAD]) are in the vocabulary without a merge producing them.
bool special_shaped(std::string_view t) {
  return t.size() >= 3 && ((t.front() == '<' && t.back() == '>') || (t.front() == '[' && t.back() == ']'));
}
}  // namespace

void check_vocab_matches_merges(const std::vector<std::string>& tokens,
                                std::span<const std::pair<TokenId, TokenId>> merges, std::string_view vocab_name,
                                std::string_view merges_name) {
  std::vector<bool> produced(tokens.size(), false);
  std::unordered_map<std::string_view, TokenId> ids;
  ids.reserve(tokens.size());
  for (TokenId id = 0; id < tokens.size(); ++id) ids.emplace(tokens[id], id);
  for (auto [l, r] : merges) {
    auto it = ids.find(tokens[l] + tokens[r]);
    if (it != ids.end()) produced[it->second] = true;
  }
  auto reachable = [&](std::string_view t) {
    auto it = ids.find(t);
    return it != ids.end() && (t.size() == 1 || produced[it->second]);
  };
  // A token no merge produces is what a missing merge would have made when it splits into two
  // reachable tokens; other unreachable tokens are taken for special tokens of other shapes.
  size_t unreachable = 0;
  TokenId example = 0;
  for (TokenId id = 0; id < tokens.size(); ++id) {
    const std::string_view t = tokens[id];
    if (t.size() <= 1 || produced[id] || special_shaped(t)) continue;
    bool mergeable = false;
    for (size_t k = 1; k < t.size() && !mergeable; ++k) mergeable = reachable(t.substr(0, k)) && reachable(t.substr(k));
    if (mergeable && unreachable++ == 0) example = id;
  }
  if (unreachable)
    throw ToolError(std::string(vocab_name),
                    std::to_string(unreachable) + " token(s) of the vocabulary (e.g. \"" +
                        bytes_to_display(tokens[example]) + "\", id " + std::to_string(example) + ") come from no merge in " +
                        std::string(merges_name) + ": the vocabulary and the merges do not belong together");
}

std::string format_vocab_json(const std::vector<std::string>& tokens) {
  std::string out = "{";
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (id) out += ", ";
    append_json_string_ascii(out, bytes_to_token_text(tokens[id]));
    out += ": ";
    out += std::to_string(id);
  }
  out += "}";
  return out;
}

std::string format_merges_txt(const std::vector<std::string>& tokens,
                              std::span<const std::pair<TokenId, TokenId>> merges) {
  std::string out = "#version: 0.2\n";
  for (auto [l, r] : merges) {
    out += bytes_to_token_text(tokens.at(l));
    out.push_back(' ');
    out += bytes_to_token_text(tokens.at(r));
    out.push_back('\n');
  }
  return out;
}

std::string format_merges_txt(const std::vector<std::string>& tokens, std::span<const Merge> merges) {
  std::vector<std::pair<TokenId, TokenId>> pairs;
  pairs.reserve(merges.size());
  for (const Merge& m : merges) pairs.emplace_back(m.left, m.right);
  return format_merges_txt(tokens, pairs);
}

}  // namespace suite::bpe
