//! Was this process started by an MPI launcher, and does MPI agree with it?
//!
//! Launchers say how many ranks they started in the environment: Open MPI's `mpirun`
//! (`OMPI_COMM_WORLD_SIZE`), MPICH's Hydra and Slurm's PMI (`PMI_SIZE`), Slurm's `srun`
//! (`SLURM_STEP_NUM_TASKS`). A binary linked against one MPI and started by another's
//! launcher does not fail: every rank initialises as a world of one and computes the whole
//! job alone. Comparing the launcher's count with MPI's world size catches that.

use tessera_core::error::{Error, Result};

/// The variables launchers set to the number of ranks, in the order they are trusted.
pub const LAUNCHER_VARIABLES: &[(&str, &str)] = &[
    ("OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"),
    ("PMI_SIZE", "MPICH's mpiexec (Hydra) or srun --mpi=pmi2"),
    ("SLURM_STEP_NUM_TASKS", "Slurm's srun"),
];

/// The number of ranks the launcher says it started, with the variable that says so;
/// `None` without a launcher. `env` reads a variable (`std::env::var` in a program).
pub fn launcher_ranks(env: impl Fn(&str) -> Option<String>) -> Option<(&'static str, usize)> {
    LAUNCHER_VARIABLES.iter().find_map(|&(var, _)| {
        let v = env(var)?;
        v.trim().parse::<usize>().ok().map(|n| (var, n))
    })
}

/// Checks MPI's world size against the launcher.
///
/// # Errors
/// [`Error::Config`] when no launcher started the process, or when the launcher started a
/// different number of ranks than MPI sees (the wrong MPI's launcher); the message says
/// what to run instead.
pub fn check(world_size: usize, env: impl Fn(&str) -> Option<String>) -> Result<()> {
    match launcher_ranks(&env) {
        None => {
            Err(Error::Config(format!(
            "scheduler = \"mpi\", but no MPI launcher started this process (none of {} is set); \
             launch it with `mpirun -n <ranks> {prog}` or `srun -n <ranks> {prog}`, or set \
             scheduler = \"threads\" to run in one process",
            LAUNCHER_VARIABLES
                .iter()
                .map(|(v, _)| *v)
                .collect::<Vec<_>>()
                .join(", "),
            prog = std::env::args().next().unwrap_or_else(|| "./program".into()),
        )))
        }
        Some((var, n)) if n != world_size => {
            let who = LAUNCHER_VARIABLES
                .iter()
                .find(|(v, _)| *v == var)
                .map_or("the launcher", |(_, w)| w);
            Err(Error::Config(format!(
                "{who} started {n} ranks ({var}={n}) but MPI sees a world of {world_size}: \
                 this binary is linked against a different MPI than the launcher's, so every \
                 rank would run the whole job alone. Launch it with the mpirun of the MPI it \
                 was built with (`mpicc -show` names it; srun needs --mpi=pmix for Open MPI), \
                 or rebuild against the launcher's MPI (MPICC=<its mpicc> cargo build --features mpi)"
            )))
        }
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(v, _)| *v == k)
                .map(|(_, x)| x.to_string())
        }
    }

    #[test]
    fn no_launcher_is_refused_with_how_to_launch() {
        let e = check(1, env(&[])).unwrap_err().to_string();
        assert!(
            e.contains("no MPI launcher") && e.contains("mpirun -n"),
            "{e}"
        );
    }

    #[test]
    fn another_mpis_launcher_is_refused_naming_both_counts() {
        let e = check(1, env(&[("PMI_SIZE", "4")])).unwrap_err().to_string();
        assert!(e.contains("PMI_SIZE=4") && e.contains("world of 1"), "{e}");
        assert!(e.contains("MPICH"), "{e}");
    }

    #[test]
    fn a_matching_launcher_passes_and_open_mpi_is_trusted_first() {
        check(4, env(&[("OMPI_COMM_WORLD_SIZE", "4")])).unwrap();
        check(1, env(&[("OMPI_COMM_WORLD_SIZE", "1")])).unwrap();
        // Inside a Slurm allocation, mpirun's own count wins over the step's.
        let both = [("OMPI_COMM_WORLD_SIZE", "8"), ("SLURM_STEP_NUM_TASKS", "1")];
        check(8, env(&both)).unwrap();
        assert_eq!(
            launcher_ranks(env(&both)),
            Some(("OMPI_COMM_WORLD_SIZE", 8))
        );
        assert_eq!(launcher_ranks(env(&[("PMI_SIZE", "x")])), None);
    }
}
