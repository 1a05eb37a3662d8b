//! Which GPUs a process opens. One process usually drives every GPU it sees (chunks are
//! placed round robin over them). Under `scheduler = "mpi"` with several ranks per node,
//! that would have every rank contend for every card; there each rank takes the device of
//! its *local* rank (its index among the ranks of its node, which the launcher sets in
//! the environment), modulo the devices it sees — one GPU per rank, as dask-cuda gives one
//! GPU per worker. `device.ordinal` overrides either choice: `all`, or one index.
//! `CUDA_VISIBLE_DEVICES` still applies first, as for every CUDA program.

use tessera_core::config::DeviceOrdinal;
use tessera_core::{Error, Result};

/// The variables launchers set to a process's rank among the ranks of its node: Open MPI,
/// MVAPICH, MPICH/Intel MPI (Hydra), Slurm's `srun`.
pub const LOCAL_RANK_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "SLURM_LOCALID",
];

/// This process's local rank, from the first of [`LOCAL_RANK_VARS`] that is set.
pub fn local_rank() -> Option<usize> {
    LOCAL_RANK_VARS
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// The device indices to open out of `visible`, under `setting`; `distributed` when the
/// scheduler is `mpi`, `local_rank` the process's rank on its node where known.
///
/// # Errors
/// [`Error::Invalid`] for an index past the visible devices.
pub fn choose(
    visible: usize,
    setting: DeviceOrdinal,
    distributed: bool,
    local_rank: Option<usize>,
) -> Result<Vec<usize>> {
    match setting {
        DeviceOrdinal::One(i) if i < visible => Ok(vec![i]),
        DeviceOrdinal::One(i) => Err(Error::invalid(
            "device.ordinal",
            format!(
                "device {i} was asked for but {visible} are visible (indices 0..{visible}, \
                 after CUDA_VISIBLE_DEVICES)"
            ),
        )),
        DeviceOrdinal::Auto if distributed && visible > 0 => match local_rank {
            Some(r) => Ok(vec![r % visible]),
            None => {
                log::warn!(
                    "scheduler = \"mpi\" but no local rank is set ({}): every rank opens all \
                     {visible} devices; set device.ordinal per rank to give each its own",
                    LOCAL_RANK_VARS.join(", ")
                );
                Ok((0..visible).collect())
            }
        },
        DeviceOrdinal::Auto | DeviceOrdinal::All => Ok((0..visible).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rank_takes_the_device_of_its_local_rank() {
        use DeviceOrdinal::*;
        assert_eq!(choose(4, Auto, false, Some(2)).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(choose(4, Auto, true, Some(2)).unwrap(), vec![2]);
        assert_eq!(
            choose(4, Auto, true, Some(6)).unwrap(),
            vec![2],
            "more ranks than GPUs"
        );
        assert_eq!(choose(2, Auto, true, None).unwrap(), vec![0, 1]);
        assert_eq!(choose(4, All, true, Some(1)).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(choose(4, One(3), true, Some(1)).unwrap(), vec![3]);
        let e = choose(2, One(2), false, None).unwrap_err().to_string();
        assert!(
            e.contains("device 2 was asked for but 2 are visible"),
            "{e}"
        );
    }
}
