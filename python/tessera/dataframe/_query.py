"""``df.query("x > 2 and k == 'a'")`` and ``df.eval("x * 2")``: pandas' expression
strings read with Python's parser into Series of the frame, so they run as engine
expressions. Names are columns (or the index by its name), ``@name`` is a Python
variable of the caller, and backticks quote column names that are not identifiers."""

from __future__ import annotations

import ast
import operator
import re
import sys

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_LOCAL = "__tessera_local_"


def caller_scope(local_dict=None) -> dict:
    """The variables ``@name`` may refer to: ``local_dict``, else those of the code
    that called ``query``/``eval``."""
    if local_dict is not None:
        return dict(local_dict)
    frame = sys._getframe(2)
    scope = dict(frame.f_globals)
    scope.update(frame.f_locals)
    return scope


def assignment(text: str):
    """``(name, right-hand side)`` of ``"name = expression"``, or ``(None, text)``
    for an expression, read by Python's parser (``==`` is a comparison)."""
    source = re.sub(r"@([A-Za-z_][A-Za-z0-9_]*)", lambda m: _LOCAL + m.group(1), text.strip())
    try:
        body = ast.parse(source, mode="exec").body
    except SyntaxError:
        return None, text
    if len(body) == 1 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1:
        target = body[0].targets[0]
        if isinstance(target, ast.Name):
            # The target is a bare name, so the first `=` is the assignment's.
            return target.id, text.split("=", 1)[1]
    return None, text


def parse(text: str, df, scope: dict):
    """The Series (or value) the expression ``text`` stands for over ``df``.

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> df = dd.from_pandas(pd.DataFrame({"x": [1, 5, 3], "k": ["a", "b", "a"]}), npartitions=1)
    >>> df.query("x > 2 and k == 'a'").compute().x.tolist()
    [3]
    """
    quoted = {}

    def backtick(m):
        name = f"__tessera_col_{len(quoted)}"
        quoted[name] = m.group(1)
        return name

    source = re.sub(r"`([^`]*)`", backtick, text.strip())
    source = re.sub(r"@([A-Za-z_][A-Za-z0-9_]*)", lambda m: _LOCAL + m.group(1), source)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"query: cannot parse {text!r}: {e.msg}") from None
    return _Reader(df, scope, quoted, text).visit(tree.body)


class _Reader(ast.NodeVisitor):
    def __init__(self, df, scope, quoted, text):
        self.df, self.scope, self.quoted, self.text = df, scope, quoted, text

    def fail(self, node, what: str):
        raise ValueError(f"query {self.text!r}: {what} is not supported")

    def visit_Name(self, node):
        name = self.quoted.get(node.id, node.id)
        if name.startswith(_LOCAL):
            var = name[len(_LOCAL):]
            if var not in self.scope:
                raise NameError(f"query {self.text!r}: no local variable {var!r}")
            return self.scope[var]
        if name in self.df._visible():
            return self.df[name]
        if self.df._index and name in self.df._index_names:
            return self.df.index
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        raise NameError(f"query {self.text!r}: no column {name!r}; columns: {self.df._visible()}")

    def visit_Constant(self, node):
        return node.value

    def visit_List(self, node):
        return [self.visit(e) for e in node.elts]

    visit_Tuple = visit_List

    def visit_UnaryOp(self, node):
        v = self.visit(node.operand)
        if isinstance(node.op, (ast.Not, ast.Invert)):
            return ~v
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        self.fail(node, type(node.op).__name__)

    def visit_BinOp(self, node):
        op = _BINARY.get(type(node.op))
        if op is None:
            self.fail(node, f"the operator {type(node.op).__name__}")
        return op(self.visit(node.left), self.visit(node.right))

    def visit_BoolOp(self, node):
        values = [self.visit(v) for v in node.values]
        out = values[0]
        for v in values[1:]:
            out = (out & v) if isinstance(node.op, ast.And) else (out | v)
        return out

    def visit_Compare(self, node):
        left = self.visit(node.left)
        out = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.visit(right_node)
            if isinstance(op, (ast.In, ast.NotIn)):
                values = right if isinstance(right, list) else list(right)
                c = left.isin(values)
                c = ~c if isinstance(op, ast.NotIn) else c
            else:
                fn = _COMPARE.get(type(op))
                if fn is None:
                    self.fail(node, f"the comparison {type(op).__name__}")
                c = fn(left, right)
            out = c if out is None else out & c
            left = right
        return out

    def visit_Attribute(self, node):
        return getattr(self.visit(node.value), node.attr)

    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = [self.visit(a) for a in node.args]
        kwargs = {k.arg: self.visit(k.value) for k in node.keywords}
        return fn(*args, **kwargs)

    def generic_visit(self, node):
        self.fail(node, type(node).__name__)
