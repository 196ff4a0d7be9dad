#!/usr/bin/env python3
"""Rebuilds data/sample/python-docs.jsonl.zst from Debian's python3.11-doc package.

Each HTML page of the Python 3.11 documentation becomes one JSON line:
  {"id": ..., "url": "https://docs.python.org/3.11/<path>", "title": ..., "text": ..., "html": ...}
`html` is the page as shipped; `text` is its main content (Sphinx's div[role=main]) as plain text,
with scripts, styles and navigation dropped, paragraphs separated by blank lines. Pages are
sorted by path so the output is reproducible. Python standard library only.

Usage: apt-get install python3.11-doc zstd && python3 scripts/build-sample.py data/sample/python-docs.jsonl.zst
"""
import html.parser
import json
import os
import subprocess
import sys

DOC_ROOT = "/usr/share/doc/python3.11/html"
BLOCK = {"p", "div", "section", "pre", "li", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table",
         "blockquote", "ul", "ol", "dl", "br", "figure", "caption"}
DROP = {"script", "style", "nav", "head", "noscript"}


class MainText(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title, self.in_title = "", False
        self.depth_main = 0      # >0 while inside div[role=main]
        self.stack = []          # open tags inside main, to find its end
        self.drop = 0
        self.parts = []
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "title":
            self.in_title = True
        if self.depth_main == 0:
            if tag == "div" and a.get("role") == "main":
                self.depth_main = 1
                self.stack = ["div"]
            return
        if tag not in ("br", "img", "hr", "meta", "link", "input", "wbr"):
            self.stack.append(tag)
        if tag in DROP or (a.get("class") or "").find("headerlink") >= 0:
            self.drop += 1 if tag not in ("br",) else 0
            if tag == "a":
                self.stack[-1] = "a#drop"
        if tag == "pre":
            self.pre += 1
        if tag in BLOCK:
            self.parts.append("\n\n" if tag not in ("li", "dd", "tr", "br") else "\n")

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        if self.depth_main == 0 or not self.stack:
            return
        if tag not in (t.split("#")[0] for t in self.stack):
            return  # a stray end tag: ignore it rather than close the main block
        # Pop up to the matching tag (HTML may leave some unclosed).
        while self.stack:
            top = self.stack.pop()
            name = top.split("#")[0]
            if top == "a#drop" or name in DROP:
                self.drop -= 1
            if name == "pre":
                self.pre -= 1
            if name == tag:
                break
        if not self.stack:
            self.depth_main = 0
        if tag in BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        if self.depth_main and not self.drop:
            if self.pre:
                self.parts.append(data)
            else:  # collapse whitespace but keep a separating space at either end
                words = " ".join(data.split())
                lead = " " if data[:1].isspace() else ""
                trail = " " if data[-1:].isspace() and words else ""
                self.parts.append(lead + words + trail)

    def text(self):
        raw = "".join(self.parts)
        lines = [ln.rstrip() for ln in raw.split("\n")]
        out, blank = [], 0
        for ln in lines:
            if ln.strip():
                out.append(ln if self.pre else ln.lstrip() if not ln.startswith("    ") else ln)
                blank = 0
            elif out and blank == 0:
                out.append("")
                blank = 1
        return "\n".join(out).strip()


def main():
    dest = sys.argv[1] if len(sys.argv) > 1 else "data/sample/python-docs.jsonl.zst"
    pages = []
    for root, dirs, files in os.walk(DOC_ROOT):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".html"):
                pages.append(os.path.join(root, f))
    pages.sort()
    lines = []
    for i, path in enumerate(pages):
        rel = os.path.relpath(path, DOC_ROOT)
        with open(path, encoding="utf-8", errors="replace") as fh:
            page = fh.read()
        p = MainText()
        p.feed(page)
        title = " ".join(p.title.split()).replace(" — Python 3.11.2 documentation", "")
        doc = {"id": i, "url": "https://docs.python.org/3.11/" + rel, "title": title, "text": p.text(), "html": page}
        lines.append(json.dumps(doc, ensure_ascii=False))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    tmp = dest + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(subprocess.run(["zstd", "-19", "-q", "-c"], input=data, stdout=subprocess.PIPE, check=True).stdout)
    os.replace(tmp, dest)
    print(f"{dest}: {len(lines)} pages, {len(data) / 1e6:.1f} MB uncompressed, "
          f"{os.path.getsize(dest) / 1e6:.1f} MB compressed", file=sys.stderr)


if __name__ == "__main__":
    main()
