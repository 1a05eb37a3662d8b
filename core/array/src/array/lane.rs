//! The host side of a lane function ([`Op::AlongAxis`](super::Op::AlongAxis)): the
//! blocks a merge or gather reads, borrowed where the backend keeps them on the host and
//! copied (and recorded as a fallback naming the op) where it does not.

use std::borrow::Cow;

use crate::backend::{ArrayBackend, Chunk};
use crate::error::Result;
use crate::host::HostArray;

/// Host views of `deps`, or copies where `b` keeps a chunk off the host; a copy records
/// that `op` ran `why` on the host.
pub(super) fn host_blocks<'a>(
    b: &'a dyn ArrayBackend,
    deps: &'a [Chunk],
    op: &str,
    why: &str,
) -> Result<Vec<Cow<'a, HostArray>>> {
    let mut copied = false;
    let blocks = deps
        .iter()
        .map(|c| match b.host_view(c) {
            Some(h) => Ok(Cow::Borrowed(h)),
            None => {
                copied = true;
                b.to_host(c).map(Cow::Owned)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    if copied {
        crate::fallback::record(b.name(), op, why);
    }
    Ok(blocks)
}
