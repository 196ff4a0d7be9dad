#include "common/wiki/entities.h"

#include <algorithm>
#include <cstring>

#include "common/unicode/utf8.h"

namespace suite::wiki {
namespace {

struct Named {
  const char* name;
  const char* utf8;  // replacement text ("" drops the reference)
};

// Sorted by name (binary search). The subset of HTML5's table that appears in Wikipedia articles.
constexpr Named kHtml[] = {
    {"AElig", "Æ"},  {"Aacute", "Á"}, {"Acirc", "Â"},   {"Agrave", "À"}, {"Alpha", "Α"},  {"Aring", "Å"},
    {"Atilde", "Ã"}, {"Auml", "Ä"},   {"Beta", "Β"},    {"Ccedil", "Ç"}, {"Chi", "Χ"},    {"Delta", "Δ"},
    {"ETH", "Ð"},    {"Eacute", "É"}, {"Ecirc", "Ê"},   {"Egrave", "È"}, {"Epsilon", "Ε"}, {"Eta", "Η"},
    {"Euml", "Ë"},   {"Gamma", "Γ"},  {"Iacute", "Í"},  {"Icirc", "Î"},  {"Igrave", "Ì"}, {"Iota", "Ι"},
    {"Iuml", "Ï"},   {"Kappa", "Κ"},  {"Lambda", "Λ"},  {"Mu", "Μ"},     {"Ntilde", "Ñ"}, {"Nu", "Ν"},
    {"OElig", "Œ"},  {"Oacute", "Ó"}, {"Ocirc", "Ô"},   {"Ograve", "Ò"}, {"Omega", "Ω"},  {"Omicron", "Ο"},
    {"Oslash", "Ø"}, {"Otilde", "Õ"}, {"Ouml", "Ö"},    {"Phi", "Φ"},    {"Pi", "Π"},     {"Prime", "″"},
    {"Psi", "Ψ"},    {"Rho", "Ρ"},    {"Scaron", "Š"},  {"Sigma", "Σ"},  {"THORN", "Þ"},  {"Tau", "Τ"},
    {"Theta", "Θ"},  {"Uacute", "Ú"}, {"Ucirc", "Û"},   {"Ugrave", "Ù"}, {"Upsilon", "Υ"}, {"Uuml", "Ü"},
    {"Xi", "Ξ"},     {"Yacute", "Ý"}, {"Yuml", "Ÿ"},    {"Zeta", "Ζ"},   {"aacute", "á"}, {"acirc", "â"},
    {"acute", "´"},  {"aelig", "æ"},  {"agrave", "à"},  {"alpha", "α"},  {"amp", "&"},    {"and", "∧"},
    {"ang", "∠"},    {"apos", "'"},   {"aring", "å"},   {"asymp", "≈"},  {"atilde", "ã"}, {"auml", "ä"},
    {"bdquo", "„"},  {"beta", "β"},   {"brvbar", "¦"},  {"bull", "•"},   {"cap", "∩"},    {"ccedil", "ç"},
    {"cedil", "¸"},  {"cent", "¢"},   {"chi", "χ"},     {"circ", "ˆ"},   {"clubs", "♣"},  {"cong", "≅"},
    {"copy", "©"},   {"crarr", "↵"},  {"cup", "∪"},     {"curren", "¤"}, {"dagger", "†"}, {"darr", "↓"},
    {"deg", "°"},    {"delta", "δ"},  {"diams", "♦"},   {"divide", "÷"}, {"eacute", "é"}, {"ecirc", "ê"},
    {"egrave", "è"}, {"empty", "∅"},  {"emsp", " "},    {"ensp", " "},   {"epsilon", "ε"}, {"equiv", "≡"},
    {"eta", "η"},    {"eth", "ð"},    {"euml", "ë"},    {"euro", "€"},   {"exist", "∃"},  {"forall", "∀"},
    {"frac12", "½"}, {"frac14", "¼"}, {"frac34", "¾"},  {"gamma", "γ"},  {"ge", "≥"},     {"gt", ">"},
    {"harr", "↔"},   {"hearts", "♥"}, {"hellip", "…"},  {"iacute", "í"}, {"icirc", "î"},  {"iexcl", "¡"},
    {"igrave", "ì"}, {"infin", "∞"},  {"int", "∫"},     {"iota", "ι"},   {"iquest", "¿"}, {"isin", "∈"},
    {"iuml", "ï"},   {"kappa", "κ"},  {"lambda", "λ"},  {"laquo", "«"},  {"larr", "←"},   {"lceil", "⌈"},
    {"ldquo", "“"},  {"le", "≤"},     {"lfloor", "⌊"},  {"lowast", "∗"}, {"loz", "◊"},    {"lrm", ""},
    {"lsaquo", "‹"}, {"lsquo", "‘"},  {"lt", "<"},      {"macr", "¯"},   {"mdash", "—"},  {"micro", "µ"},
    {"middot", "·"}, {"minus", "−"},  {"mu", "μ"},      {"nabla", "∇"},  {"nbsp", " "},   {"ndash", "–"},
    {"ne", "≠"},     {"ni", "∋"},     {"not", "¬"},     {"notin", "∉"},  {"nsub", "⊄"},   {"ntilde", "ñ"},
    {"nu", "ν"},     {"oacute", "ó"}, {"ocirc", "ô"},   {"oelig", "œ"},  {"ograve", "ò"}, {"omega", "ω"},
    {"omicron", "ο"}, {"oplus", "⊕"}, {"or", "∨"},      {"ordf", "ª"},   {"ordm", "º"},   {"oslash", "ø"},
    {"otilde", "õ"}, {"otimes", "⊗"}, {"ouml", "ö"},    {"para", "¶"},   {"part", "∂"},   {"permil", "‰"},
    {"perp", "⊥"},   {"phi", "φ"},    {"pi", "π"},      {"plusmn", "±"}, {"pound", "£"},  {"prime", "′"},
    {"prod", "∏"},   {"prop", "∝"},   {"psi", "ψ"},     {"quot", "\""},  {"radic", "√"},  {"raquo", "»"},
    {"rarr", "→"},   {"rceil", "⌉"},  {"rdquo", "”"},   {"reg", "®"},    {"rfloor", "⌋"}, {"rho", "ρ"},
    {"rlm", ""},     {"rsaquo", "›"}, {"rsquo", "’"},   {"sbquo", "‚"},  {"scaron", "š"}, {"sdot", "⋅"},
    {"sect", "§"},   {"shy", ""},     {"sigma", "σ"},   {"sigmaf", "ς"}, {"sim", "∼"},    {"spades", "♠"},
    {"sub", "⊂"},    {"sube", "⊆"},   {"sum", "∑"},     {"sup", "⊃"},    {"sup1", "¹"},   {"sup2", "²"},
    {"sup3", "³"},   {"supe", "⊇"},   {"szlig", "ß"},   {"tau", "τ"},    {"there4", "∴"}, {"theta", "θ"},
    {"thinsp", " "}, {"thorn", "þ"},  {"tilde", "˜"},   {"times", "×"},  {"trade", "™"},  {"uacute", "ú"},
    {"uarr", "↑"},   {"ucirc", "û"},  {"ugrave", "ù"},  {"uml", "¨"},    {"upsilon", "υ"}, {"uuml", "ü"},
    {"xi", "ξ"},     {"yacute", "ý"}, {"yen", "¥"},     {"yuml", "ÿ"},   {"zeta", "ζ"},   {"zwj", "\u200D"},
    {"zwnj", "\u200C"},
};

constexpr Named kXml[] = {{"amp", "&"}, {"apos", "'"}, {"gt", ">"}, {"lt", "<"}, {"quot", "\""}};

template <size_t N>
const Named* lookup(const Named (&table)[N], std::string_view name) {
  auto it = std::lower_bound(std::begin(table), std::end(table), name,
                             [](const Named& e, std::string_view n) { return std::string_view(e.name) < n; });
  return it != std::end(table) && name == it->name ? it : nullptr;
}

bool is_ref_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '#';
}

// Decodes the numeric reference body ("#123" / "#x7B"); false if it is not one.
bool numeric(std::string_view body, std::string& out) {
  if (body.size() < 2 || body[0] != '#') return false;
  bool hex = body[1] == 'x' || body[1] == 'X';
  size_t i = hex ? 2 : 1;
  if (i == body.size()) return false;
  uint32_t cp = 0;
  for (; i < body.size(); ++i) {
    char c = body[i];
    uint32_t d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (hex && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (hex && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    cp = cp * (hex ? 16 : 10) + d;
    if (cp > 0x10FFFF) cp = 0x110000;  // saturate: stays invalid, never overflows
  }
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = unicode::kReplacementChar;
  unicode::utf8_append(out, static_cast<char32_t>(cp));
  return true;
}

template <size_t N>
void decode(std::string_view in, std::string& out, const Named (&table)[N]) {
  out.reserve(out.size() + in.size());
  size_t pos = 0;
  while (pos < in.size()) {
    const void* hit = std::memchr(in.data() + pos, '&', in.size() - pos);
    size_t amp = hit ? static_cast<size_t>(static_cast<const char*>(hit) - in.data()) : in.size();
    out.append(in.data() + pos, amp - pos);
    if (amp == in.size()) break;
    // A reference is at most 32 characters of [#A-Za-z0-9] before ';'.
    size_t end = amp + 1;
    while (end < in.size() && end - amp <= 32 && is_ref_char(in[end]))
      ++end;
    if (end < in.size() && in[end] == ';' && end > amp + 1) {
      std::string_view body = in.substr(amp + 1, end - amp - 1);
      if (numeric(body, out)) {
        pos = end + 1;
        continue;
      }
      if (const Named* e = lookup(table, body)) {
        out += e->utf8;
        pos = end + 1;
        continue;
      }
    }
    out += '&';
    pos = amp + 1;
  }
}

}  // namespace

void decode_xml_entities(std::string_view in, std::string& out) { decode(in, out, kXml); }
void decode_html_entities(std::string_view in, std::string& out) { decode(in, out, kHtml); }

}  // namespace suite::wiki
