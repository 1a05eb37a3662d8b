//! What the generator hands the runtime: a [`KernelPlan`] (the kernel text, its entry
//! points and their arguments, the packed parameters, the launch shape), and the pieces of
//! the text every kernel shares ([`PRELUDE`], [`MAX_BLOCK`], kernel names from a stable
//! hash of the text).

use tessera_core::program::{Node, Program};
use tessera_core::random::Distribution;
use tessera_core::DType;

use super::names;

/// The scalar definitions every kernel starts with (see the module docs).
pub const PRELUDE: &str = include_str!("prelude.cu");

/// The largest block size a reduction kernel's shared-memory tree holds.
pub const MAX_BLOCK: u32 = 256;

/// Threads per block for every launch (a power of two, at most [`MAX_BLOCK`]): the
/// kernels' shared-memory trees are sized for it, the devices launch with it.
pub const BLOCK: u32 = 256;
const _: () = assert!(BLOCK <= MAX_BLOCK && BLOCK.is_power_of_two());

/// What one kernel argument is, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// `const u64* P`: the packed run-time values.
    Params,
    /// `const T* inN`: input slot `N`, of the dtype.
    Input(usize, DType),
    /// `T* out`: the output, of the dtype.
    Output(DType),
    /// `Acc* part`: pass one's partial accumulators, one per (kept element, part).
    Partials(DType),
    /// `i64* part_idx`: the positions that go with the partials of an arg-reduction.
    PartialIndex,
    /// The ziggurat's three tables (`f64 wi[1024]`, `u64 ki[1024]`, `f64 fi[1024]`), for
    /// programs that draw normal numbers.
    ZigguratTables,
}

/// One `extern "C" __global__` entry point of a kernel text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its symbol.
    pub name: String,
    /// Its arguments, in order.
    pub args: Vec<Arg>,
}

/// How an output's kernel is launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// One grid-stride loop over `n` output elements.
    Elementwise {
        /// Output elements.
        n: u64,
    },
    /// Pass one over `kept * parts` blocks, pass two over `kept` elements.
    Reduce {
        /// Output (kept) elements.
        kept: u64,
        /// Elements reduced into each output element.
        reduced: u64,
        /// Blocks per output element in pass one (at least 1).
        parts: u64,
        /// The accumulator's dtype (the partials buffer's).
        acc: DType,
    },
}

/// The kernel text for one output of a program, and the run-time values it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelPlan {
    /// The kernels' own CUDA C text, without the [`PRELUDE`] every kernel shares (so a
    /// plan, built for every task, does not copy it; [`Self::source`] adds it).
    pub body: String,
    /// A stable 64-bit hash of the body before naming (FNV-1a): the name and the cache key.
    pub hash: u64,
    /// Pass one (or the only pass), then `<name>_fin` for reductions.
    pub entries: Vec<Entry>,
    /// The packed run-time values (`P`).
    pub params: Vec<u64>,
    /// How to launch it.
    pub launch: Launch,
    /// The output's dtype.
    pub out_dtype: DType,
}

/// FNV-1a over bytes: a hash that is the same in every build and on every machine, so it
/// can name kernels in the on-disk cache.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Whether the program draws normal numbers (its kernels take the ziggurat tables).
pub fn uses_normal(program: &Program) -> bool {
    program.nodes.iter().any(|n| {
        matches!(
            n,
            Node::Random {
                spec: tessera_core::random::RandomSpec {
                    dist: Distribution::Normal { .. },
                    ..
                },
                ..
            }
        )
    })
}

impl KernelPlan {
    /// The full text NVRTC compiles: the prelude, then the body.
    pub fn source(&self) -> String {
        let mut s = String::with_capacity(PRELUDE.len() + self.body.len() + 1);
        s.push_str(PRELUDE);
        s.push('\n');
        s.push_str(&self.body);
        s
    }
}

/// Names the kernels of a body by its hash: the body with its entries named
/// `<prefix>_<hash>`, the hash, and that name.
pub fn named(body: &str, prefix: &str) -> (String, u64, String) {
    let hash = stable_hash(body.as_bytes());
    let name = format!("{prefix}_{hash:016x}");
    (body.replace(names::NAME, &name), hash, name)
}
