#include "common/wiki/page_extractor.h"

#include <algorithm>

#include "common/cli/error.h"
#include "common/jsonl/json_writer.h"
#include "common/unicode/utf8.h"
#include "common/wiki/entities.h"
#include "common/wiki/page_url.h"
#include "common/wiki/page_xml.h"

namespace suite::wiki {

PageExtractor::PageExtractor(OnError policy, std::string base_url_override)
    : policy_(policy), base_override_(std::move(base_url_override)) {}

void PageExtractor::process(const PageBatch& batch, ChunkOutput& out) {
  for (const PageBatch::Ref& ref : batch.pages) {
    ++out.documents;
    out.bytes += ref.size;
    process_page(batch, ref, out);
  }
}

void PageExtractor::problem(const PageBatch& batch, const PageBatch::Ref& ref, size_t offset,
                            const std::string& reason, const std::string& message, ChunkOutput& out) {
  if (policy_ == OnError::kFail) {
    auto page = batch.xml.begin() + static_cast<std::ptrdiff_t>(ref.offset);
    uint64_t line = ref.line + static_cast<uint64_t>(std::count(page, page + static_cast<std::ptrdiff_t>(offset), '\n'));
    throw ToolError(location(batch.source, line), message);
  }
  out.counts.add("skipped: " + reason);
}

void PageExtractor::process_page(const PageBatch& batch, const PageBatch::Ref& ref, ChunkOutput& out) {
  std::string_view xml = std::string_view(batch.xml).substr(ref.offset, ref.size);
  PageXml page;
  if (auto error = parse_page_xml(xml, page)) {
    problem(batch, ref, error->offset, "malformed page", error->message, out);
    return;
  }
  if (page.ns != 0) {
    out.counts.add("other namespaces");
    return;
  }
  if (page.redirect) {
    out.counts.add("redirects");
    return;
  }
  // Both fields must be UTF-8 (entities decode to valid UTF-8, so checking the escaped form suffices).
  std::string_view title = page.title, text = page.text;
  for (std::string_view* field : {&title, &text}) {
    size_t bad = unicode::utf8_first_invalid(*field);
    if (bad == field->size()) continue;
    if (policy_ != OnError::kReplace) {
      problem(batch, ref, static_cast<size_t>(field->data() - xml.data()) + bad, "invalid UTF-8",
              "invalid UTF-8 in the page " + std::string(field == &title ? "title" : "text"), out);
      return;
    }
    std::string& repaired = field == &title ? repaired_title_ : repaired_;
    repaired = unicode::utf8_repair(*field);
    *field = repaired;
    out.counts.add("replaced: invalid UTF-8");
  }
  wikitext_.clear();
  decode_xml_entities(text, wikitext_);
  if (is_redirect_text(wikitext_)) {
    out.counts.add("redirects");
    return;
  }
  cleaner_.clean(wikitext_, text_);
  if (text_.empty()) {
    out.counts.add("empty after cleaning");
    return;
  }
  title_.clear();
  decode_xml_entities(title, title_);
  const std::string_view base = !base_override_.empty() ? std::string_view(base_override_)
                                : !batch.base_url.empty() ? std::string_view(batch.base_url)
                                                          : kDefaultBaseUrl;
  url_.clear();
  append_page_url(url_, base, title_);
  JsonObjectWriter obj(out.text);
  obj.string_field("id", page.id).string_field("url", url_).string_field("title", title_).string_field("text", text_);
  obj.end_line();
  out.counts.add("kept");
}

}  // namespace suite::wiki
