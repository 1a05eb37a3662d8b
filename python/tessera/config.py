"""Configuration, as ``dask.config`` has it.

Keys are tessera's (``tessera config`` lists them, as does :func:`keys`): the same file
(``tessera.toml``), environment variables (``TESSERA_ARRAY_BACKEND``, ...) and defaults as
the Rust library. :func:`set` overrides keys for the whole process at once and, used as a
context manager, undoes exactly its own overrides on leaving the block::

    import tessera as ts
    with ts.config.set({"array.backend": "cuda", "scheduler": "single-threaded"}):
        ...
    ts.config.set(num_threads=4)          # until the process ends

Keyword names take ``_`` for ``-`` and ``__`` for ``.`` (``array__backend``), as Dask's do.
"""

from __future__ import annotations

import threading
from typing import Any

from . import _tessera

__all__ = ["get", "set", "keys", "refresh"]

_active: list["_Scope"] = []
_lock = threading.Lock()


def _key(name: str) -> str:
    return name.replace("__", ".").replace("_", "-")


class _Scope:
    """Overrides in force; ``with`` undoes them on exit."""

    def __init__(self, values: dict[str, Any]):
        self._values = values
        self._scope = _tessera.config_set(values)
        with _lock:
            _active.append(self)

    def __enter__(self) -> "_Scope":
        return self

    def __exit__(self, *exc: object) -> None:
        self._scope.close()
        with _lock:
            if self in _active:
                _active.remove(self)

    def __repr__(self) -> str:
        return f"tessera.config.set({self._values!r})"


def set(arg: dict[str, Any] | None = None, **kwargs: Any) -> _Scope:  # noqa: A001 - dask's name
    """Override configuration keys for the whole process (every thread sees them).

    Values are validated at once: an unknown key or a bad value raises
    :class:`tessera.ConfigError` naming the valid ones. Returns a context manager that
    undoes these overrides on exit; not used as one, they last until the process ends.
    """
    values: dict[str, Any] = {}
    if arg:
        values.update({str(k): v for k, v in arg.items()})
    values.update({_key(k): v for k, v in kwargs.items()})
    return _Scope(values)


def get(key: str, default: Any = ...) -> str:
    """The effective value of ``key`` (overrides, then environment, then files, then
    the default), as text. With ``default`` given, an unknown key returns it instead of
    raising."""
    try:
        return _tessera.config_get(key)[0]
    except Exception:
        if default is ...:
            raise
        return default


def source(key: str) -> str:
    """Where the effective value of ``key`` comes from (default, a file, the environment
    variable, an override)."""
    return _tessera.config_get(key)[1]


def keys() -> list[dict[str, str]]:
    """Every key with its environment variable, effective value, source and meaning."""
    return [
        {"key": k, "env": env, "value": value, "source": src, "doc": doc}
        for (k, env, value, src, doc) in _tessera.config_keys()
    ]


def refresh() -> None:
    """Drops every override made with :func:`set` (Dask's ``refresh``)."""
    with _lock:
        scopes = list(_active)
    for s in scopes:
        s.__exit__(None, None, None)
