#!/usr/bin/env python3
"""What SLEM would earn verifying m trie nodes instead of 2k, and with free verification.

Reads a log of SLEM rounds written by a build with bench/notes/slem_nodes_s19.patch applied
(lines "TARGET TEMP PROMPT XS k m acc r1 r2 ...": a round of k drafts verified m nodes and
accepted acc, the accepted path's nodes having score ranks r1, r2, ... in the merged trie).

Why this is exact, not a model of acceptance: the verified nodes are the trie's m best by
score and a node never scores above its parent, so the best m' <= m nodes are a sub-trie, and
the target's walk (one draw per node along the path, verify/verify.h) would have gone through
the same nodes while they stay in it. So a round that verified m nodes tells how many tokens
any m' <= m would have given: 1 + the number of leading path nodes with rank < m'.

The cost side is a table of the target's forward time by token count (ms) and the drafter's
per-draft time, taken from `hsd bench forward` on the machine in question; each round costs
k * draft + f(m' + 1) + over. Speedup = (tokens / cost) * f(1), against AR at f(1) a token.

    bench/slem_nodes.py LOG [--draft 3.6] [--over 1.0] [--free] [--f "1:21,3:24,..."]

--free prices every verification as f(1): the bound that flat verification would give.
"""
import argparse
import collections
import sys

# Zen 4 (session 18, quiet host), the inflated Q4_K_M target: hsd bench forward, ms by tokens
ZEN4_Q4 = "1:20.5,5:26.9,7:30.7,9:39.6,13:55.7,25:104.9"


def table(spec, free):
    pts = sorted((int(a), float(b)) for a, b in (x.split(":") for x in spec.split(",")))
    if free:
        return lambda n: pts[0][1]

    def f(n):
        # linear between the measured sizes, flat below the first, the last slope above
        if n <= pts[0][0]:
            return pts[0][1]
        for (a, ta), (b, tb) in zip(pts, pts[1:]):
            if n <= b:
                return ta + (tb - ta) * (n - a) / (b - a)
        (a, ta), (b, tb) = pts[-2], pts[-1]
        return tb + (tb - ta) / (b - a) * (n - b)

    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--draft", type=float, default=3.6, help="drafter ms per draft")
    ap.add_argument("--over", type=float, default=1.0, help="other ms per round")
    ap.add_argument("--f", default=ZEN4_Q4, help="target forward ms by tokens, n:ms,...")
    ap.add_argument("--free", action="store_true", help="every verification costs f(1)")
    a = ap.parse_args()
    f = table(a.f, a.free)
    rounds = collections.defaultdict(list)
    for line in open(a.log):
        w = line.split()
        if len(w) < 7 or w[3] != "XS":
            continue
        k, m = int(w[4]), int(w[5])
        rounds[(w[0], w[1], k)].append((m, [int(x) for x in w[7:]]))
    if not rounds:
        sys.exit("slem_nodes: no XS lines in " + a.log)
    for tg, temp in sorted({(t, tp) for t, tp, _ in rounds}):
        print(f"{tg} T={temp}: k, m' -> tokens per round / speedup over AR")
        best = (0, 0, 0)
        for k in sorted(kk for t, tp, kk in rounds if (t, tp) == (tg, temp)):
            rs = rounds[(tg, temp, k)]
            cells = []
            for mm in range(1, 3 * k + 1):
                tok = cost = 0.0
                for m, ranks in rs:
                    q = min(mm, m)
                    acc = 0
                    for r in ranks:
                        if r >= q:
                            break
                        acc += 1
                    tok += 1 + acc
                    cost += k * a.draft + f(q + 1) + a.over
                sp = tok / cost * f(1)
                if sp > best[0]:
                    best = (sp, k, mm)
                if mm in (k, 2 * k, 3 * k):
                    cells.append(f"m'={mm}: {tok / len(rs):.2f} / {sp:.2f}")
            print(f"  k={k} ({len(rs)} rounds)  " + "   ".join(cells))
        print(f"  best: k={best[1]}, m'={best[2]}: {best[0]:.2f}x")


if __name__ == "__main__":
    main()
