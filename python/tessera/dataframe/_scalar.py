"""``Scalar``: a lazy single value, what a reduction of a Series gives (Dask's
``dd.Scalar``).

``df.x.mean()`` runs nothing; ``compute()`` runs one aggregation in the engine and
gives the value as pandas would (``np.float64``, ``np.int64``, ``pd.Timestamp``).
Arithmetic between scalars and numbers stays lazy (``df.x.sum() / df.x.count()``).
"""

from __future__ import annotations

import operator

_VALUE = "__scalar__"


class Scalar:
    """A lazy value (see the module docs).

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> df = dd.from_pandas(pd.DataFrame({"x": [1.0, 2.0, 6.0]}), npartitions=2)
    >>> (df.x.sum() / df.x.count()).compute()
    np.float64(3.0)
    """

    def __init__(self, thunk, what: str = "scalar"):
        self._thunk = thunk
        self._what = what

    @classmethod
    def of(cls, frame, expr, func: str) -> "Scalar":
        """The aggregation ``func`` (an engine name: ``"mean"``, ``"quantile(0.9)"``) of
        ``expr`` over the engine frame ``frame``."""
        return cls.of_many(frame, [(expr, func)], lambda v: v, f"{func}({expr!r})")

    @classmethod
    def of_many(cls, frame, aggs, finish, what: str = "aggregate") -> "Scalar":
        """``finish`` of the values of several aggregations ``(expr, func)`` of one engine
        frame, computed in one plan (``finish`` takes them as arguments)."""

        def run():
            from ._convert import arrow_to_pandas

            outputs = [f"{_VALUE}{i}" for i in range(len(aggs))]
            specs = [(e, f, o) for (e, f), o in zip(aggs, outputs)]
            row = arrow_to_pandas(frame.agg_exprs(specs).compute())
            return finish(*(row[o].iloc[0] for o in outputs))

        return cls(run, what)

    @classmethod
    def combine(cls, scalars, fn) -> "Scalar":
        """A scalar computed by ``fn`` from the values of ``scalars``."""
        return cls(lambda: fn(*(s.compute() for s in scalars)), "combined")

    def map(self, fn) -> "Scalar":
        """A scalar computed by ``fn`` from this one's value."""
        return Scalar(lambda: fn(self.compute()), self._what)

    def compute(self):
        """The value."""
        return self._thunk()

    def persist(self) -> "Scalar":
        """The scalar with its value computed now."""
        value = self.compute()
        return Scalar(lambda: value, self._what)

    def __repr__(self) -> str:
        return f"tessera.dataframe.Scalar<{self._what}>"

    def _op(self, other, op, reflected: bool = False) -> "Scalar":
        def run():
            a = self.compute()
            b = other.compute() if isinstance(other, Scalar) else other
            return op(b, a) if reflected else op(a, b)

        return Scalar(run, self._what)

    def __add__(self, o):
        return self._op(o, operator.add)

    def __radd__(self, o):
        return self._op(o, operator.add, True)

    def __sub__(self, o):
        return self._op(o, operator.sub)

    def __rsub__(self, o):
        return self._op(o, operator.sub, True)

    def __mul__(self, o):
        return self._op(o, operator.mul)

    def __rmul__(self, o):
        return self._op(o, operator.mul, True)

    def __truediv__(self, o):
        return self._op(o, operator.truediv)

    def __rtruediv__(self, o):
        return self._op(o, operator.truediv, True)

    def __floordiv__(self, o):
        return self._op(o, operator.floordiv)

    def __pow__(self, o):
        return self._op(o, operator.pow)

    def __neg__(self):
        return self.map(operator.neg)

    def __abs__(self):
        return self.map(abs)

    def __lt__(self, o):
        return self._op(o, operator.lt)

    def __le__(self, o):
        return self._op(o, operator.le)

    def __gt__(self, o):
        return self._op(o, operator.gt)

    def __ge__(self, o):
        return self._op(o, operator.ge)
