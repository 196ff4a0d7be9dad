// The document fields the text tools read (bpe-train, bpe-encode, jsonl-to-mmap, sentence-split),
// read one way everywhere:
//   text       a string
//   sentences  an array of strings (sentence-split's output)
//   ids        an array of non-negative integer token ids (bpe-encode's output)
// A missing field or one of the wrong type is a DocumentError naming the field, so --on-error
// decides what happens to the document.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/jsonl/json_line.h"

namespace suite {

// A field holding a text or a list of sentences (every element checked to be a string).
struct TextOrSentences {
  bool sentences = false;
  std::string_view text;         // !sentences
  simdjson::dom::array array;    // sentences
  // Calls f(std::string_view) for the text, or for each sentence in order.
  template <class F>
  void for_each(F&& f) const {
    if (!sentences) {
      f(text);
      return;
    }
    for (simdjson::dom::element item : array) f(std::string_view(item.get_string().value_unsafe()));
  }
};

// The element under `key`; DocumentError("missing field") when there is none.
simdjson::dom::element require_field(JsonLine& doc, const std::string& key);

// A text field (a string).
std::string_view read_text(JsonLine& doc, const std::string& key);
// A text or sentences field: a string or an array of strings.
TextOrSentences read_text_or_sentences(JsonLine& doc, const std::string& key);
TextOrSentences text_or_sentences(simdjson::dom::element value, const std::string& key);

// Appends the ids of an ids array to `out` and returns the largest one (0 for none), which the
// caller checks against its limit; an element that is not a non-negative integer is a
// DocumentError naming `field`.
uint64_t read_ids(simdjson::dom::array ids, const std::string& field, std::vector<uint32_t>& out);

}  // namespace suite
