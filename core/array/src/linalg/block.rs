//! The block kernels chunked linear algebra calls, and their explicit host fallback.
//!
//! Reduced QR and thin SVD of one chunk are optional backend primitives
//! ([`ArrayBackend::qr`], [`ArrayBackend::svd`]). A backend that implements them (the CPU
//! backend, with faer) runs them natively. A backend that declares them unsupported
//! (`Capabilities::BLOCK_LINALG`) gets them here, on the host: the block is copied to the
//! `cpu` backend, factored there and the factors copied back, and it is
//! [recorded](crate::fallback::record) as a fallback (logged once per backend and kernel).
//! The protocol's trait defaults never do this behind the caller's back.

use crate::backend::{ArrayBackend, Chunk};
use crate::error::{Error, Result};
use crate::program::ArrayOp;

/// Reduced QR of one chunk on `b`, or on the host when `b` declares `qr` unsupported.
pub(crate) fn qr(b: &dyn ArrayBackend, x: &Chunk) -> Result<(Chunk, Chunk)> {
    if native(b, ArrayOp::Qr, x) {
        return b.qr(x);
    }
    let out = on_host(b, ArrayOp::Qr, x, |cpu, c| {
        cpu.qr(c).map(|(q, r)| vec![q, r])
    })?;
    let mut it = out.into_iter();
    match (it.next(), it.next()) {
        (Some(q), Some(r)) => Ok((q, r)),
        _ => Err(Error::Internal("qr returned fewer than two factors".into())),
    }
}

/// Thin SVD of one chunk on `b`, or on the host when `b` declares `svd` unsupported.
pub(crate) fn svd(b: &dyn ArrayBackend, x: &Chunk) -> Result<(Chunk, Chunk, Chunk)> {
    if native(b, ArrayOp::Svd, x) {
        return b.svd(x);
    }
    let out = on_host(b, ArrayOp::Svd, x, |cpu, c| {
        cpu.svd(c).map(|(u, s, vt)| vec![u, s, vt])
    })?;
    let mut it = out.into_iter();
    match (it.next(), it.next(), it.next()) {
        (Some(u), Some(s), Some(vt)) => Ok((u, s, vt)),
        _ => Err(Error::Internal(
            "svd returned fewer than three factors".into(),
        )),
    }
}

/// True when `b` declares `op` supported for `x`'s dtype.
pub(crate) fn native(b: &dyn ArrayBackend, op: ArrayOp, x: &Chunk) -> bool {
    b.capabilities().supports(op, x.dtype())
}

/// Runs `f` on the registered `cpu` backend over `x` copied through the host, and copies
/// the results back to `b`.
fn on_host(
    b: &dyn ArrayBackend,
    op: ArrayOp,
    x: &Chunk,
    f: impl FnOnce(&dyn ArrayBackend, &Chunk) -> Result<Vec<Chunk>>,
) -> Result<Vec<Chunk>> {
    let unsupported = || Error::Unsupported {
        backend: b.name().to_string(),
        op: op.name().to_string(),
        dtype: x.dtype(),
    };
    let cpu = crate::registry::array_backend("cpu").map_err(|_| unsupported())?;
    if cpu.name() == b.name() || !native(cpu.as_ref(), op, x) {
        return Err(unsupported());
    }
    crate::fallback::record(
        b.name(),
        op.name(),
        "no native kernel: its blocks run on the host with the cpu backend (copied there and back)",
    );
    let c = cpu.from_host(&b.to_host(x)?)?;
    f(cpu.as_ref(), &c)?
        .iter()
        .map(|r| b.from_host(&cpu.to_host(r)?))
        .collect()
}
