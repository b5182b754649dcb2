#!/usr/bin/env python3
"""bench/ab/report.py: the two estimators of an A/B (docs/benchmarks.md,
"Comparing two builds", step 4), from run.sh's results.

    report.py RUNS A B ROUNDS VARIANT...

RUNS/BUILD-VARIANT-ROUND/results.csv holds each run's figures (its median
column). Per time key that every run has: the geometric mean over variants
of each build's median over rounds, B over A ("geo"), and the median over
all (variant, round) of B's run over A's run beside it ("paired"). Keys
over 1.03 by either are marked; floors (the runner's own loops, the same
code in both builds) show the method's resolution. Peers' keys are left
out, and so are keys with a figure <= 0 in some run (a difference, such as
scale.switch_ns, whose ratio means nothing).
"""
import csv
import math
import statistics
import sys

PEERS = ("libuv", "libevent", ".go", "node", "polyfill")


def load(path):
    figures = {}
    with open(path + "/results.csv") as f:
        for row in csv.reader(f):
            try:
                figures[row[0]] = float(row[5])
            except (IndexError, ValueError):
                pass  # the header, or a key without a median
    return figures


def is_time(key):
    return key.endswith(("ns_per_task", ".ns", "switch_ns")) and not any(p in key for p in PEERS)


def main(argv):
    if len(argv) < 6:
        sys.exit("usage: report.py RUNS A B ROUNDS VARIANT...")
    runs, a, b, rounds, variants = argv[1], argv[2], argv[3], int(argv[4]), argv[5:]
    data = {(build, v, r): load("%s/%s-%s-%d" % (runs, build, v, r))
            for build in (a, b) for v in variants for r in range(1, rounds + 1)}
    keys = [k for k in sorted(data[(a, variants[0], 1)])
            if is_time(k) and all(k in d and d[k] > 0 for d in data.values())]
    if not keys:
        sys.exit("report.py: no time key in every run")
    geos, paireds = [], []
    for k in keys:
        def median(build, v):
            return statistics.median(data[(build, v, r)][k] for r in range(1, rounds + 1))

        def geo(build):
            return math.exp(sum(math.log(median(build, v)) for v in variants) / len(variants))

        g = geo(b) / geo(a)
        p = statistics.median(data[(b, v, r)][k] / data[(a, v, r)][k]
                              for v in variants for r in range(1, rounds + 1))
        geos.append(g)
        paireds.append(p)
        mark = " floor" if ".floor_" in k else (" over" if max(g, p) > 1.03 else "")
        print("%-56s %10.2f %10.2f  geo %.3f  paired %.3f%s" % (k, geo(a), geo(b), g, p, mark))
    print("median over %d keys: geo %.3f (%.3f-%.3f), paired %.3f (%.3f-%.3f)" % (
        len(keys), statistics.median(geos), min(geos), max(geos),
        statistics.median(paireds), min(paireds), max(paireds)))


if __name__ == "__main__":
    main(sys.argv)
