//! The executor's tuning constants in one place: the bounds at which an operator changes
//! its algorithm (tree or shuffle, broadcast or shuffle, how many buckets). Each says what
//! it bounds and the measurement it was set from; a change to one is a change to the
//! plans every frame runs, so it is measured (`bench/frame_classes.py`, TPC-H) first.

/// Partial results with more rows than this (in total) are combined by shuffle instead of
/// a tree: a tree would funnel them all through one task.
pub const SHUFFLE_ROWS: usize = 1 << 20;

/// In one process, a groupby whose partial results have more rows than this (in total)
/// combines them by shuffle: the tree's last combine (and its sort by the keys) runs on
/// one thread while the others wait. Measured on 2 cores (`frame_classes`, 16 partitions):
/// 160k partial rows (10k groups) combine in 14 ms by tree and 17 ms by shuffle, 630k
/// (1M rows into 630k groups) in 200 ms by tree and 110 ms by shuffle.
pub const TREE_ROWS: usize = 1 << 18;

/// In one process, a side of a join at most this many bytes is broadcast to every
/// partition of the other: it is hashed once and shared, and the other side streams
/// through it. The shuffle it replaces holds both sides too, and copies both into
/// buckets: TPC-H Q9 at scale factor 10 shuffled its 300 MB `partsupp` and `orders` sides
/// at a 256 MiB bound, 8.5 s at a 2.2 GB peak, against 3.5 s at 1.5 GB broadcast. (Across
/// the ranks of a job, where a broadcast side is sent to every rank, the bound is 256
/// MiB.)
pub const BROADCAST_BYTES: usize = 1 << 30;

/// A join side keyed by strings with more rows than this is not broadcast when the process
/// has more than one worker: its hash table is built by one thread while the others wait
/// (a random insert into a table past the caches costs about 170 ns), where a shuffle
/// builds a table per bucket on every worker. Measured on 2 cores (`frame_classes`,
/// 10M x 10M rows on a string key): 2.7 s broadcast, 1.9 s shuffled. Integer keys are
/// exempt: their tables are mostly direct-indexed and cheap to build (the same join on
/// integers: 0.57 s broadcast, 0.69 s shuffled; TPC-H Q9 at scale 10: 3.5 s against 8.5 s).
pub const BROADCAST_STRING_ROWS: usize = 4 << 20;

/// The build-side rows a shuffled hash join aims at per bucket: the join shuffles into at
/// least `rows / JOIN_BUCKET_ROWS` buckets (up to the shuffle's fan), so that each
/// bucket's hash table stays near the caches. One partition's join of 625k rows with 625k
/// on a short-string key (a 10M-row side in 16 buckets) took 173 ns a build row; of 78k,
/// 51 ns; of 39k, 49 ns. On an integer key: 53, 20 and 18 ns (`cargo run --release
/// --example join_kernel`, an Intel Xeon with a 2 MiB L2 per core).
pub const JOIN_BUCKET_ROWS: usize = 1 << 16;

/// A join side computed first (the one `join_guess` expects smaller) is broadcast while
/// the other side streams only when it measures at most this many bytes. The guess knows
/// no statistics, so it can pick the larger side: past this
/// size the other side is computed too and the smaller of the two measured is broadcast,
/// which bounds what a wrong guess costs to hashing this much. It is the broadcast bound
/// itself: at 64 MiB, TPC-H Q5 at scale factor 10 (whose customers-with-orders side
/// measures past it) computed all 60 million line items before choosing, 4.0 s at a 3 GB
/// peak, against 2.5 s at 254 MB streamed through the hashed side.
pub const STREAMED_BROADCAST_BYTES: usize = BROADCAST_BYTES;

/// The most buckets a shuffle makes, and the most groups of input partitions it cuts
/// into them: a shuffle keeps a piece per group and bucket, so at most `SHUFFLE_FAN`²
/// pieces unless a spill budget's task bound asks for more. With a bucket per partition,
/// as before this bound, TPC-H at scale 100 (5,232 partitions of line items, one per row
/// group) cut 35 million pieces in Q4's shuffle, whose bookkeeping took 17 GB beside 3 GB
/// of keys.
pub(crate) const SHUFFLE_FAN: usize = 256;

/// Rows a partition needs before its partial state may switch the others to passing
/// their rows through: a small partition says little about the rest.
pub(crate) const PASS_MIN_ROWS: usize = 10_000;

/// Across the ranks of a job, a side of a join at most this many bytes is broadcast: sent
/// whole to every rank, where a shuffle sends each rank its share of both sides.
pub(crate) const RANK_BROADCAST_BYTES: usize = 256 << 20;

/// What a kept partition costs beyond its buffers, per partition and per column
/// ([`crate::exec::spill::charged_bytes`]): the batch, the array and buffer headers, their
/// allocations and the stash. From TPC-H at scale 100, where 35 million one-column pieces
/// of Q4's shuffle took 17 GB beside their 3 GB of keys: about 490 bytes a piece.
pub(crate) const PIECE_BOOKKEEPING_BYTES: u64 = 256;

/// See [`PIECE_BOOKKEEPING_BYTES`]: the share of each column.
pub(crate) const COLUMN_BOOKKEEPING_BYTES: u64 = 256;

/// How many times a grace join splits a bucket whose build side is still over a task's
/// bytes before it stops recursing and joins the bucket by sorting both sides
/// ([`crate::exec::grace_join`]): four levels split by at least 2 each already cut a
/// bucket in 16, and a bucket that does not shrink is skewed, which splitting cannot fix.
pub(crate) const GRACE_MAX_DEPTH: usize = 4;

/// The bytes a grace join expects a hash table to take per build row when it decides how
/// many buckets fit its budget; each table's real size, as the backend reports it, is
/// charged once built, and a bucket whose table does not fit then goes to disk. The CPU
/// backend's tables take at most 32 bytes of chain heads a row (a hash map of 16-byte
/// entries at a load of 7/8 or less), a dense integer key's about 4. At 8, TPC-H Q9 at
/// scale 10 under 1 GiB peaked at 1,088 MB, past the limit; at 32, 945 MB.
pub(crate) const GRACE_TABLE_ROW_BYTES: u64 = 32;

/// Within a spill budget, the join side computed first (the one `join_guess` expects
/// smaller) becomes a grace join's build side, and the other side streams, unless it
/// measures more than this many times what the other is guessed to be: the guess was
/// then probably wrong about which side is smaller, and the other side is computed too
/// so that the smaller one measured is built on. At 4, TPC-H Q12 at scale 10 under 1 GiB
/// built on its 15 million orders (measured 250 MB; the filtered line items guessed at
/// 75 MB, measured 30 MB): 1.46 s, against 1.15 s broadcasting the line items.
pub(crate) const GRACE_GUESS_MARGIN: u64 = 1;

/// How many times an external sort cuts a range still over a task's bytes into smaller
/// ranges before it sorts the range whole ([`crate::exec::external_sort`]).
pub(crate) const SORT_MAX_DEPTH: usize = 4;

/// The fewest build rows a grace join's bucket is cut to, and below which a spilled
/// bucket is joined whatever its bytes: `nbytes` is an estimate, and a partition whose
/// arrays share a larger one's buffers (string views, slices) counts them whole — TPC-H
/// Q16's groupby results at scale 10, 27,840 rows, reported 46 GiB.
pub(crate) const GRACE_MIN_BUCKET_ROWS: usize = 1 << 10;

/// The fewest rows an external sort's range is cut to, and below which a range is sorted
/// whatever its bytes (see [`GRACE_MIN_BUCKET_ROWS`] for why bytes alone do not do).
pub(crate) const SORT_MIN_RANGE_ROWS: usize = 1 << 13;

/// A groupby folds runs of consecutive input partitions into one partial state each
/// (`crate::exec::aggregate`) when the states of its first partitions, combined, keep
/// fewer than this fraction (in 64ths) of their rows: the same keys recur from partition
/// to partition, and a state per partition would repeat them, for the combine to hash
/// again. Where each partition holds keys of its own (TPC-H's line items by order), the
/// states do not shrink and partitions are aggregated one by one.
pub(crate) const FOLD_KEEP_64THS: usize = 48;

/// The most rows a folded run gathers before it is aggregated into one state (and a new
/// run starts): the run's partitions are in memory at once in its task. Measured on 2
/// cores (`frame_classes`, 100k string keys over 10M rows): at 4M rows, 0.112 s at a 525
/// MB peak from Parquet's 16 partitions and 0.124 s at 750 MB from 37 CSV partitions; at
/// 1M, 0.123 s at 400 MB and 0.110 s at 563 MB.
pub(crate) const FOLD_ROWS: usize = 1 << 20;

/// The most bytes a folded run gathers (within a spill budget, a task's bytes if fewer):
/// the run's partitions are in memory at once, in the task folding them.
pub(crate) const FOLD_BYTES: u64 = 256 << 20;
