#!/usr/bin/env python3
"""Scores a minhash-dedup --removed report against minhash_corpus.py's ground truth.

  minhash_eval.py TRUTH REMOVED recall MIN_J MIN_RECALL     pairs with J >= MIN_J found >= MIN_RECALL
  minhash_eval.py TRUTH REMOVED precision MIN_J MIN_PREC    near removals whose true J >= MIN_J
  minhash_eval.py TRUTH REMOVED scurve BANDS ROWS MAX_Z     detection rate per J bin vs 1-(1-s^R)^B
  minhash_eval.py TRUTH REMOVED exact                       every exact copy removed as "exact"
Exits 1 (with the figures) when the check fails."""
import json
import math
import sys


def load(truth_path, removed_path):
    truth = {}
    for line in open(truth_path):
        c, b, kind, j = line.rstrip("\n").split("\t")
        truth[frozenset((c, b))] = (c, b, kind, float(j))
    removed = [json.loads(l) for l in open(removed_path)]
    found = {frozenset((r["id"], r["duplicate_of"])): r for r in removed}
    return truth, removed, found


def main():
    truth, removed, found = load(sys.argv[1], sys.argv[2])
    mode = sys.argv[3]
    if mode == "recall":
        min_j, want = float(sys.argv[4]), float(sys.argv[5])
        pairs = [k for k, v in truth.items() if v[2] == "near" and v[3] >= min_j]
        hit = sum(1 for k in pairs if k in found)
        recall = hit / len(pairs)
        print(f"recall at J >= {min_j}: {hit}/{len(pairs)} = {recall:.4f} (want >= {want})")
        ok = recall >= want and len(pairs) >= 50
    elif mode == "precision":
        min_j, want = float(sys.argv[4]), float(sys.argv[5])
        near = [r for r in removed if r["match"] == "near"]
        good = sum(1 for r in near if truth.get(frozenset((r["id"], r["duplicate_of"])), (0, 0, 0, 0.0))[3] >= min_j)
        prec = good / len(near) if near else 0.0
        print(f"precision at J >= {min_j}: {good}/{len(near)} = {prec:.4f} (want >= {want})")
        ok = prec >= want and len(near) >= 50
    elif mode == "scurve":
        b, r, max_z = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
        bins = {}
        for k, v in truth.items():
            if v[2] != "near":
                continue
            key = min(int(v[3] / 0.05), 19)
            bins.setdefault(key, []).append((v[3], k in found))
        ok, worst = True, 0.0
        for key in sorted(bins):
            items = bins[key]
            if len(items) < 30:
                continue
            ps = [1 - (1 - s ** r) ** b for s, _ in items]
            pred = sum(ps) / len(ps)
            obs = sum(1 for _, f in items if f) / len(items)
            sd = max(math.sqrt(sum(p * (1 - p) for p in ps)) / len(items), 1.0 / len(items))
            z = (obs - pred) / sd
            worst = max(worst, abs(z))
            print(f"J {key * 0.05:.2f}-{key * 0.05 + 0.05:.2f}: n={len(items):4d} predicted {pred:.3f} measured {obs:.3f} z={z:+.2f}")
            ok = ok and abs(z) <= max_z
        print(f"largest |z| = {worst:.2f} (want <= {max_z})")
        ok = ok and len([k for k in bins if len(bins[k]) >= 30]) >= 5
    elif mode == "exact":
        pairs = [k for k, v in truth.items() if v[2] == "exact"]
        hit = sum(1 for k in pairs if k in found and found[k]["match"] == "exact")
        print(f"exact copies removed as exact: {hit}/{len(pairs)}")
        ok = hit == len(pairs) and hit > 0
    else:
        sys.exit(f"unknown mode {mode}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
