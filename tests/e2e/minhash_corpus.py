#!/usr/bin/env python3
"""Seeded test corpus for minhash-dedup: base documents of random words, near copies with a known
word substitution rate, and exact copies that differ only in case, punctuation and spacing.

Writes PREFIX-NN.jsonl (documents dealt round-robin over --files files, shuffled) and
PREFIX-truth.tsv: copy id, base id, kind (near|exact), exact Jaccard of the word 5-gram sets."""
import argparse
import json
import random


def shingles(words, n):
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a, b):
    return len(a & b) / len(a | b) if a or b else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--base", type=int, default=1000)
    ap.add_argument("--files", type=int, default=1)
    ap.add_argument("--max-edit", type=float, default=0.15)
    ap.add_argument("--exact-every", type=int, default=10)
    ap.add_argument("--ngram", type=int, default=5)
    ap.add_argument("prefix")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(4000)})
    docs, truth = [], []
    for i in range(a.base):
        words = [rng.choice(vocab) for _ in range(rng.randint(80, 160))]
        bid = f"b{i}"
        docs.append({"id": bid, "text": " ".join(words)})
        if i % a.exact_every == 0:
            # Same normalised text: capitalised words, punctuation and doubled spaces.
            t = "  ".join(w.capitalize() + ("," if k % 7 == 3 else "") for k, w in enumerate(words)) + "!"
            docs.append({"id": f"x{i}", "text": t})
            truth.append((f"x{i}", bid, "exact", 1.0))
            continue
        rate = rng.uniform(0.0, a.max_edit)
        copy = [rng.choice(vocab) if rng.random() < rate else w for w in words]
        j = jaccard(shingles(words, a.ngram), shingles(copy, a.ngram))
        docs.append({"id": f"c{i}", "text": " ".join(copy), "edit_rate": round(rate, 4)})
        truth.append((f"c{i}", bid, "near", j))
    rng.shuffle(docs)
    outs = [open(f"{a.prefix}-{k:02d}.jsonl", "w") for k in range(a.files)]
    for k, d in enumerate(docs):
        outs[k % a.files].write(json.dumps(d) + "\n")
    for f in outs:
        f.close()
    with open(f"{a.prefix}-truth.tsv", "w") as f:
        for c, b, kind, j in truth:
            f.write(f"{c}\t{b}\t{kind}\t{j:.6f}\n")


if __name__ == "__main__":
    main()
