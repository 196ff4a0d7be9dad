#!/usr/bin/env python3
"""Builds the language-identification test set of test_scrape_filter.sh from Debian's installed
fortune files. Nothing is vendored: the set is made at test time (scripts/install-deps.sh installs
the packages). Provenance, as installed on the development machine (Debian 12):
  en: fortunes 1:1.99.1-7.3 (the fortune-mod collection; see its copyright file), top-level files of
      /usr/share/games/fortunes other than the Chinese ones
  de: fortunes-de 0.35-1 (GPL-2+), /usr/share/games/fortunes/de
  es: fortunes-es 1.36 (GPL-2+), /usr/share/games/fortunes/es
  ru: fortunes-ru 1.52-3.1 (GPL-2 / GPL-2+), /usr/share/games/fortunes/ru
  zh: fortunes-zh 2.98 (GPL-3.0+): chinese, tang300, song100 in /usr/share/games/fortunes
Licences: /usr/share/doc/<package>/copyright.

Writes JSONL to stdout: {"id", "url", "lang" (the truth, as "truth"), "text"}, N documents per
language (default 500), taken evenly spaced from every fortune of 40..600 characters, with
ASCII-art files skipped and terminal escape sequences removed. Deterministic: same files, same set.
Usage: fortune_langid_set.py [ROOT=/usr/share/games/fortunes] [N=500]
"""
import json
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/games/fortunes"
per_lang = int(sys.argv[2]) if len(sys.argv) > 2 else 500
ZH = {"chinese", "tang300", "song100"}
SKIP = {"art", "ascii-art", "asciiart"}
ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def files(directory, keep):
    out = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if (os.path.islink(path) or not os.path.isfile(path) or name.endswith(".dat") or name.endswith(".u8")
                or name in SKIP or not keep(name)):
            continue
        out.append(path)
    return out


sources = {
    "en": files(root, lambda n: n not in ZH),
    "de": files(os.path.join(root, "de"), lambda n: True),
    "es": files(os.path.join(root, "es"), lambda n: True),
    "ru": files(os.path.join(root, "ru"), lambda n: True),
    "zh": files(root, lambda n: n in ZH),
}

doc_id = 0
for lang, paths in sources.items():
    fortunes = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for block in f.read().split("\n%\n"):
                text = ESCAPE.sub("", block).strip()
                text = re.sub(r"[ \t]+", " ", text)
                if 40 <= len(text) <= 600:
                    fortunes.append(text)
    if len(fortunes) < per_lang:
        sys.exit(f"fortune_langid_set: only {len(fortunes)} {lang} fortunes under {root} (need {per_lang})")
    step = len(fortunes) / per_lang
    for k in range(per_lang):
        text = fortunes[int(k * step)]
        print(json.dumps({"id": doc_id, "url": f"https://fortunes.example/{lang}/{k}", "truth": lang, "text": text},
                         ensure_ascii=False))
        doc_id += 1
