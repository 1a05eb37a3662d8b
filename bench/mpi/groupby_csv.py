"""Writes the shuffle-groupby input of `bench/compare_mpi.sh`: `rows` lines of
`key,fare` with `rows / 10` distinct keys (so the partial states are too many for a tree
and are shuffled), from a fixed seed.

    python groupby_csv.py OUT.csv ROWS
"""

import sys

import numpy as np


def main():
    out, rows = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(7)
    keys = rng.integers(0, max(rows // 10, 1), rows)
    fares = rng.integers(0, 400, rows) / 4.0
    with open(out, "w") as f:
        f.write("key,fare\n")
        step = 1_000_000
        for s in range(0, rows, step):
            e = min(s + step, rows)
            f.write("".join(f"{k},{v}\n" for k, v in zip(keys[s:e], fares[s:e])))


if __name__ == "__main__":
    main()
