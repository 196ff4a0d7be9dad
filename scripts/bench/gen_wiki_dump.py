#!/usr/bin/env python3
"""Generate a synthetic MediaWiki XML dump for benchmarking wiki-extract (deterministic, stdlib only).

    gen_wiki_dump.py --mb 300 -o dump.xml [--bz2 dump.xml.bz2]

Pages look like real articles in shape: infoboxes with nested templates, paragraphs with internal and
external links, bold/italic, <ref>s, headings, lists, tables, files, categories, interlanguage links;
about 5 % redirects and 10 % pages outside the main namespace. --bz2 also writes a multistream bzip2
copy (streams of 100 pages, like Wikimedia's *-multistream.xml.bz2), compressed on all cores.
"""
import argparse
import bz2
import multiprocessing
import random
from xml.sax.saxutils import escape

HEADER = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">
  <siteinfo>
    <sitename>Benchwiki</sitename>
    <dbname>benchwiki</dbname>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <generator>gen_wiki_dump.py</generator>
    <case>first-letter</case>
  </siteinfo>
"""
FOOTER = "</mediawiki>\n"


def make_parts(rng):
    syll = ["ka", "lo", "mi", "ra", "ne", "to", "su", "vi", "de", "an", "or", "el", "qu", "is", "ba", "ru"]
    words = ["".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) for _ in range(5000)]
    titles = [" ".join(w.capitalize() for w in rng.sample(words, rng.randint(1, 3))) for _ in range(3000)]

    def sentence():
        out = []
        for _ in range(rng.randint(6, 24)):
            r = rng.random()
            w = rng.choice(words)
            if r < 0.06:
                out.append("[[%s]]" % rng.choice(titles))
            elif r < 0.10:
                out.append("[[%s|%s]]" % (rng.choice(titles), w))
            elif r < 0.12:
                out.append("'''%s'''" % w)
            elif r < 0.14:
                out.append("''%s''" % w)
            elif r < 0.15:
                out.append("[https://example.org/%s %s]" % (w, rng.choice(words)))
            elif r < 0.16:
                out.append("{{lang|fr|%s}}" % w)
            elif r < 0.17:
                out.append("%s&nbsp;km" % rng.randint(1, 999))
            else:
                out.append(w)
        s = " ".join(out).capitalize() + "."
        if rng.random() < 0.2:
            s += '<ref name="r%d">{{cite web |url=https://example.org/%s |title=%s |date=2020}}</ref>' % (
                rng.randint(1, 50), rng.choice(words), rng.choice(titles))
        elif rng.random() < 0.05:
            s += '<ref name="r%d" />' % rng.randint(1, 50)
        return s

    paragraphs = [" ".join(sentence() for _ in range(rng.randint(2, 7))) for _ in range(3000)]
    infobox = [
        "{{Infobox thing\n| name = %s\n| image = %s.jpg\n| caption = {{nowrap|%s}} {{small|(%d)}}\n| born = {{birth date|%d|%d|%d}}\n}}"
        % (rng.choice(titles), rng.choice(words), rng.choice(words), rng.randint(1800, 2000), rng.randint(1800, 2000),
           rng.randint(1, 12), rng.randint(1, 28))
        for _ in range(200)]
    tables = [
        '{| class="wikitable"\n! Year !! Name\n' + "".join("|-\n| %d || {{flag|%s}} [[%s]]\n" % (
            rng.randint(1900, 2020), rng.choice(words), rng.choice(titles)) for _ in range(rng.randint(2, 8))) + "|}"
        for _ in range(200)]
    lists = ["\n".join("* [[%s]] <!-- note --> %s" % (rng.choice(titles), rng.choice(words)) for _ in range(rng.randint(2, 6)))
             for _ in range(200)]
    return words, titles, paragraphs, infobox, tables, lists


def article(rng, parts):
    words, titles, paragraphs, infobox, tables, lists = parts
    out = ["{{Short description|%s}}" % rng.choice(words)]
    if rng.random() < 0.6:
        out.append(rng.choice(infobox))
    out.append(rng.choice(paragraphs))
    for _ in range(rng.randint(1, 5)):
        out.append("== %s ==" % rng.choice(titles))
        out.append(rng.choice(paragraphs))
        r = rng.random()
        if r < 0.3:
            out.append(rng.choice(lists))
        elif r < 0.5:
            out.append(rng.choice(tables))
        elif r < 0.6:
            out.append("[[File:%s.jpg|thumb|A [[%s]] caption]]" % (rng.choice(words), rng.choice(titles)))
    out.append("== References ==\n{{Reflist}}\n__NOTOC__")
    out.append("[[Category:%s]]\n[[de:%s]]" % (rng.choice(titles), rng.choice(titles)))
    return "\n\n".join(out)


def page(i, rng, parts):
    titles = parts[1]
    title = "%s %d" % (rng.choice(titles), i)
    r = rng.random()
    ns, redirect, text = 0, "", ""
    if r < 0.05:
        target = rng.choice(titles)
        redirect = '    <redirect title="%s" />\n' % escape(target)
        text = "#REDIRECT [[%s]]" % target
    elif r < 0.15:
        ns = rng.choice([1, 2, 4, 10, 14])
        title = {1: "Talk:", 2: "User:", 4: "Wikipedia:", 10: "Template:", 14: "Category:"}[ns] + title
        text = rng.choice(parts[2])
    else:
        text = article(rng, parts)
    body = escape(text)
    return ("  <page>\n    <title>%s</title>\n    <ns>%d</ns>\n    <id>%d</id>\n%s    <revision>\n"
            "      <id>%d</id>\n      <timestamp>2024-01-01T00:00:00Z</timestamp>\n"
            "      <contributor><username>Bench</username><id>1</id></contributor>\n"
            "      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
            '      <text bytes="%d" xml:space="preserve">%s</text>\n      <sha1>0</sha1>\n    </revision>\n  </page>\n'
            % (escape(title), ns, i, redirect, i + 1000000, len(text.encode()), body))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=300, help="approximate size of the XML in MB")
    ap.add_argument("-o", "--output", required=True, help="plain XML output")
    ap.add_argument("--bz2", help="also write a multistream bzip2 copy here")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    parts = make_parts(rng)
    limit = int(args.mb * 1e6)
    streams = [HEADER.encode()]
    size = len(streams[0])
    group = []
    i = 1
    while size < limit:
        p = page(i, rng, parts).encode()
        group.append(p)
        size += len(p)
        i += 1
        if len(group) == 100:
            streams.append(b"".join(group))
            group = []
    if group:
        streams.append(b"".join(group))
    streams.append(FOOTER.encode())
    with open(args.output, "wb") as f:
        for s in streams:
            f.write(s)
    if args.bz2:
        with multiprocessing.Pool() as pool, open(args.bz2, "wb") as f:
            for c in pool.imap(bz2.compress, streams, chunksize=8):
                f.write(c)
    print("%s: %d pages, %.1f MB" % (args.output, i - 1, size / 1e6))


if __name__ == "__main__":
    main()
