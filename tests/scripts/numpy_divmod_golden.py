"""Prints NumPy 2's floor_divide and remainder on the special and ordinary float64 pairs
that `ops::tests::floor_division_matches_numpy_goldens` checks, as Rust tuples
(a, b, a // b, a % b). Run with NumPy 2 installed and paste the output into the test when
the case list changes:

    python tests/scripts/numpy_divmod_golden.py
"""
import numpy as np

inf = np.inf
PAIRS = [
    (1.0, 0.1), (6.0, -inf), (inf, 3.0), (-7.0, 2.0), (7.0, -2.0), (-0.0, 5.0),
    (0.0, -5.0), (1.0, 0.0), (0.0, 0.0), (-6.0, inf), (6.0, inf), (5.5, -0.5),
    (-5.5, 0.25), (1e308, 1e-308), (-1e-308, 3.0), (0.7, 0.1), (-3.0, -inf),
    (np.nan, 2.0), (2.0, np.nan), (-inf, -inf), (123456789.0, 0.001),
]


def rust(x):
    x = float(x)
    if np.isnan(x):
        return "f64::NAN"
    if np.isinf(x):
        return "f64::INFINITY" if x > 0 else "f64::NEG_INFINITY"
    return repr(x) if "e" in repr(x) or "." in repr(x) else repr(x) + ".0"


with np.errstate(all="ignore"):
    for a, b in PAIRS:
        q, r = np.floor_divide(a, b), np.remainder(a, b)
        print(f"            ({rust(a)}, {rust(b)}, {rust(q)}, {rust(r)}),")
