"""Linear algebra, as ``dask.array.linalg``: ``svd`` (TSQR for tall-and-skinny arrays),
``svd_compressed`` (randomized), ``qr``, ``lstsq`` and ``norm``. Results are lazy arrays.
"""

from ._tessera import lstsq, norm, qr, svd, svd_compressed

__all__ = ["svd", "svd_compressed", "qr", "lstsq", "norm"]
