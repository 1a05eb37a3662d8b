"""Prints NumPy 2's signs of zero (np.signbit) for the cases that
`arrays::signed_zeros_from_maximum_minimum_clip_and_where_follow_numpy` checks, in float64
and float32: maximum and minimum of a grid of signed zeros (a tie gives the second
operand on x86-64), clip against a zero bound (a value equal to a bound is kept), where.
Run with NumPy 2 installed and compare with the test's lists when the cases change:

    python tests/scripts/numpy_signed_zero_golden.py

A zero maximum or minimum *reduction* over a mix of +0 and -0 is not here: NumPy's sign
there depends on its SIMD lane order (over 2,000 random arrays of signed zeros, 6% differ
from "the last tie wins"), so no rule of tessera's could match it.
"""
import numpy as np

A = [-0.0, 0.0, -0.0, 0.0, 1.0, -1.0]
B = [0.0, -0.0, -0.0, 0.0, -0.0, 0.0]
COND = [True, False, True, False, True, False]

for dt in (np.float64, np.float32):
    a, b = np.array(A, dt), np.array(B, dt)
    sign = lambda x: np.signbit(x).tolist()
    print(dt.__name__)
    print("  maximum   ", sign(np.maximum(a, b)))
    print("  minimum   ", sign(np.minimum(a, b)))
    print("  clip(0, 1)", sign(np.clip(a, 0.0, 1.0)))
    print("  clip(-1,-0)", sign(np.clip(a, -1.0, -0.0)))
    print("  where     ", sign(np.where(COND, a, b)))
