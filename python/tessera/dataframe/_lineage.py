"""Which lazy columns can be combined as expressions of one engine frame.

A Dask-shaped ``Series`` is an engine expression over the columns of an engine frame.
Two of them combine into one expression (``df.x + df.y``, ``df[df.x > 0]``) when they
come from the same rows in the same order: the operations that keep the rows and
every column's meaning (selecting columns, window functions into fresh names) keep the
frame's *rows token*, and every other one makes a new one: filters, sorts, joins and
aggregations, and also ``assign`` and ``rename``, after which a name may hold other
values than it does in another frame of the same rows. So within one token a name
always means the same values, and an expression of one frame can be evaluated on
another of the same token that has its columns.
"""

from __future__ import annotations


class Rows:
    """A token naming one sequence of rows; compared by identity."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<rows {id(self):#x}>"


def frame_for(frame, rows, exprs) -> object:
    """The engine frame among ``frame`` on which every expression in ``exprs`` (pairs of
    an expression and its rows token and frame) can be evaluated, or ``None``."""
    columns = set(frame.columns)
    for expr, expr_rows, _ in exprs:
        if expr_rows is not rows or not set(expr.columns()) <= columns:
            return None
    return frame


def common_frame(parts):
    """The engine frame on which the ``(expr, rows, frame)`` triples in ``parts`` can all
    be evaluated, or ``None`` when they come from different rows."""
    for _, rows, frame in parts:
        found = frame_for(frame, rows, parts)
        if found is not None:
            return found
    return None


def unaligned(what: str) -> ValueError:
    """The error for combining columns of different rows."""
    return ValueError(
        f"{what}: the operands come from different rows (a filtered, sorted, joined or "
        "reassigned frame and another); build both from the same frame, or join them "
        "first with merge() or join()"
    )
