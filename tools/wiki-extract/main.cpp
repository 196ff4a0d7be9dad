// wiki-extract: a MediaWiki XML dump (plain or bzip2, multistream included) -> JSONL articles
// {id, url, title, text}. One thread splits the dump into pages, workers clean them in parallel,
// output stays in dump order; multistream bzip2 is also decompressed in parallel (common/io/parallel_bz2.h).
// The work is in common/wiki/ (wiki_extract_job.h); this file is the command line.
#include "common/cli/error.h"
#include "common/cli/options.h"
#include "common/wiki/wiki_extract_job.h"

namespace suite {
namespace {

const char* kExample =
    "  wiki-extract -i enwiki-latest-pages-articles-multistream.xml.bz2 -o enwiki.jsonl.zst\n"
    "  bzcat dump.xml.bz2 | wiki-extract --threads 8 > articles.jsonl\n"
    "  # 16 Slurm array tasks, each keeping every 16th page (all read the whole dump):\n"
    "  sbatch --array=0-15 --wrap 'wiki-extract --shard slurm -i dump.xml.bz2 -o part-$SLURM_ARRAY_TASK_ID.jsonl.zst'";

const char* kDetails =
    "Output, one line per article: {\"id\":\"12\",\"url\":\"<base>Title_with_underscores\",\"title\",\"text\"}\n"
    "(id as a string, like WikiExtractor --json). <base> is the directory of the dump's <siteinfo><base>\n"
    "(https://en.wikipedia.org/wiki/ when absent), or --base-url.\n"
    "Kept: pages of namespace 0 that are not redirects and have text after cleaning. Removed from the\n"
    "text: templates (not expanded), tables, <ref>s, comments, files/images, categories, interlanguage\n"
    "links, behaviour switches (__TOC__), bold/italic quotes. Links become their text; headings and list\n"
    "items stay as their own lines (without = * # : ;); blank lines separate paragraphs; entities are\n"
    "decoded (&nbsp; becomes a space).\n"

    "Errors: a page that is malformed or not UTF-8 follows --on-error (replace repairs UTF-8 only);\n"
    "a broken dump structure (truncated file or compressed stream, text between pages, no\n"
    "<mediawiki>, a page longer than --max-line-bytes) always stops with `wiki-extract: file:line: what`,\n"
    "exit 1.";

int body(int argc, char** argv) {
  Cli cli({.name = "wiki-extract",
           .summary = "Extract the articles of a MediaWiki XML dump (plain or .bz2) as JSONL {id, url, title, text}.",
           .example = kExample,
           .reads_text = false,
           .shards = true,
           .details = kDetails});
  wiki::WikiExtractConfig config;
  cli.options().add_options()("base-url", po::value(&config.base_url),
                              "prefix of the article URLs (default: from the dump's <siteinfo><base>)");
  cli.positional().add("input", -1);
  CommonOptions options = cli.parse(argc, argv);

  wiki::run_wiki_extract(options, config);
  return 0;
}

}  // namespace
}  // namespace suite

int main(int argc, char** argv) { return suite::run_tool("wiki-extract", argc, argv, suite::body); }
