// Pass 1 of the wikitext cleaner: HTML comments and tags.
//
// <!-- comments --> go, with their text. Tags whose content is not prose (<ref>, <references>,
// <gallery>, <math>, <syntaxhighlight>, HTML <table>, ...) go with their content, self-closing forms
// (<ref name="a"/>) included. Formatting and block tags (<b>, <span>, <div>, <sup>, <blockquote>, ...)
// go but keep their content; block tags and <br> leave a line break. Anything else that looks like
// a tag ("a <b" in prose, "<5") is text and stays.
#pragma once

#include <string>
#include <string_view>

namespace suite::wiki {

void strip_comments_and_tags(std::string_view in, std::string& out);

}  // namespace suite::wiki
