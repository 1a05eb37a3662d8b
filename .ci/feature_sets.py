#!/usr/bin/env python3
"""Prints the dependencies whose features differ between the builds CI runs over one
target directory: `cargo test --workspace`, the optional features (as `.ci/run` selects
them) and the Python extension (its own workspace). Each difference recompiles that
dependency and everything above it in the later build; `core/workspace-hack` lists the
union so that there is none. Exit 1 when a difference is left (the tessera crates' own
features excepted: those differ by design).

Usage: .ci/feature_sets.py
"""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPTIONAL = "tessera/object-store,tessera/cuda-host-devices,tessera/hdf5,tessera/netcdf,tessera/mpi"
BUILDS = {
    "workspace tests": (ROOT, ["--workspace", "-e", "normal,build,dev"]),
    "optional features": (
        ROOT,
        ["-p", "tessera", "-p", "tessera-io", "-p", "tessera-mpi", "--features", OPTIONAL, "-e", "normal,build,dev"],
    ),
    "Python extension": (ROOT / "python", ["-e", "normal,build"]),
}


def features(cwd, args):
    """{(name, version): set of features} of one build's resolved graph."""
    out = subprocess.run(
        ["cargo", "tree", "--prefix", "none", "--no-dedupe", "-f", "{p}|{f}", *args],
        cwd=cwd, capture_output=True, text=True, check=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        if "|" not in line:
            continue
        package, feats = line.split("|", 1)
        name, version = package.split()[:2]
        found.setdefault((name, version), set()).update(f for f in feats.split(",") if f)
    return found


def main():
    graphs = {name: features(cwd, args) for name, (cwd, args) in BUILDS.items()}
    names = list(graphs)
    left = 0
    shared = set.intersection(*(set(g) for g in graphs.values()))
    for package in sorted(shared):
        if package[0].startswith("tessera"):
            continue
        sets = [graphs[n][package] for n in names]
        if all(s == sets[0] for s in sets):
            continue
        left += 1
        union = set().union(*sets)
        detail = "; ".join(f"{n} lacks {sorted(union - s)}" for n, s in zip(names, sets) if union - s)
        print(f"{package[0]} {package[1]}: {detail}")
    print(f"feature sets: {len(shared)} shared dependencies, {left} with features that differ")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
