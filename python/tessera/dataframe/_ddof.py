"""Variances with ``ddof`` delta degrees of freedom, from the engine's sample variance
(``ddof`` 1) and the count ``n`` of the values, as pandas defines them: NaN where
``n <= ddof``, 0 for a single value (whose sample variance is missing), else
``var * (n - 1) / (n - ddof)``. One rule, for a computed value (a Series' ``var``) and
for an engine expression (a groupby's, per group)."""

from __future__ import annotations

import math

from .. import col, when


def rescaled_value(var, n, ddof: int) -> float:
    """The rule for computed numbers.

    >>> from tessera.dataframe._ddof import rescaled_value
    >>> rescaled_value(2.0, 3, 0), rescaled_value(float("nan"), 1, 0), rescaled_value(1.0, 2, 2)
    (1.3333333333333333, 0.0, nan)
    """
    if n - ddof <= 0:
        return math.nan
    if n == 1:
        return 0.0
    if var is None:
        return math.nan
    return var * ((n - 1) / (n - ddof))


def rescaled_expr(var: str, n: str, ddof: int):
    """The rule as an engine expression over the columns ``var`` and ``n``."""
    size = col(n).astype("float64")
    return (
        when(size - ddof <= 0)
        .then(math.nan)
        .when(size == 1)
        .then(0.0)
        .otherwise(col(var) * ((size - 1.0) / (size - ddof)))
    )
