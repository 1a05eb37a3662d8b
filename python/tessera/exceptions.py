"""The exceptions tessera raises.

Each subclasses :class:`TesseraError` and the builtin a Python program would catch for
that kind of failure, so ``except ValueError`` around a bad argument and
``except MemoryError`` around a plan over ``memory-limit`` work as they do with NumPy and
pandas. The message is the engine's: it names the operation, the shapes or columns, and
what would be right. An exception raised by your own function inside ``map_blocks``
comes out of ``compute()`` unchanged; a computation interrupted with Ctrl-C raises
``KeyboardInterrupt``.
"""

__all__ = [
    "TesseraError",
    "InvalidArgumentError",
    "DTypeError",
    "UnsupportedError",
    "BackendUnavailableError",
    "ConfigError",
    "MemoryLimitError",
    "FileChangedError",
    "StorageError",
    "UserFunctionError",
    "PluginError",
    "DistributedError",
    "DeviceError",
    "InternalError",
]


class TesseraError(Exception):
    """Base class of every error tessera raises."""


class InvalidArgumentError(TesseraError, ValueError):
    """An argument the operation cannot take: an axis out of range, a bad slice or chunk
    spec, shapes or dtypes that do not fit, a missing column."""


class DTypeError(InvalidArgumentError, TypeError):
    """An operation that is not defined for its operands' dtypes (a bitwise op on floats,
    arithmetic on two bools, ``sign`` of a bool): a ``TypeError``, as NumPy raises, and an
    :class:`InvalidArgumentError` like every other bad argument.

    >>> import numpy as np, tessera as ts
    >>> try:
    ...     ts.from_array(np.array([1.5])) & 1
    ... except TypeError as e:
    ...     print(type(e).__name__)
    DTypeError
    """


class UnsupportedError(TesseraError, ValueError):
    """The backend declares in its capabilities that it does not support the operation
    (for this dtype); move the data with ``to_backend`` or pick another backend."""


class BackendUnavailableError(TesseraError, ValueError):
    """A backend is unknown, or registered but unable to run here (no driver or device);
    the message gives the reason and the registered backends."""


class ConfigError(TesseraError, ValueError):
    """An unknown configuration key or a bad value; the message lists the valid ones."""


class MemoryLimitError(TesseraError, MemoryError):
    """A plan needs more memory at its peak than ``memory-limit`` allows; the message
    says what to change (smaller chunks, fewer workers, a spill directory)."""


class FileChangedError(TesseraError, OSError):
    """A file or object a plan reads changed after the plan was made; build the array or
    frame again to read the new version."""


class StorageError(TesseraError, OSError):
    """A file, store or URL could not be read or written, or its contents are not what
    its format requires."""


class UserFunctionError(TesseraError, ValueError):
    """A user function returned a block or partition of the wrong shape, dtype or
    schema."""


class PluginError(TesseraError):
    """A backend plugin could not be loaded, was built for another ABI version, or broke
    the protocol at run time."""


class DistributedError(TesseraError):
    """Under ``scheduler = "mpi"``: a rank failed, stopped answering, or the job was
    launched wrongly."""


class DeviceError(TesseraError):
    """A device call failed: out of device memory, a refused launch or copy, a lost
    device."""


class InternalError(TesseraError):
    """An invariant inside tessera broke (a task panicked, or a tessera bug); please
    report it with the message."""
