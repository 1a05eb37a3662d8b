//! A cluster of several nodes on one machine, for the tests that need ranks on different
//! nodes: each node is a network namespace (its own interface on a bridge, so ranks on two
//! nodes talk over TCP as on a real cluster) entered together with a mount namespace of its
//! own whose `/tmp` is an empty tmpfs (so a path under `/tmp` is node-local) and a hostname
//! of its own. `mpirun` starts its daemons there through a small launcher agent, a shell
//! script given as `plm_rsh_agent` in place of `ssh`.
//!
//! Making namespaces needs root (`CAP_NET_ADMIN`, `CAP_SYS_ADMIN`) and the `ip` and
//! `unshare` tools; where any of that is missing, [`Nodes::new`] says why and the tests
//! that need nodes are skipped with that reason.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The first two octets of the nodes' subnets; the third is chosen free per cluster.
const SUBNET: &str = "10.213";

/// Nodes made for one test, removed when dropped.
pub struct Nodes {
    /// The namespace of each node, in node order.
    namespaces: Vec<String>,
    /// The address of each node, in node order.
    addresses: Vec<String>,
    /// The bridge in the machine's own namespace, where `mpirun` runs.
    bridge: String,
    /// The subnet, `10.213.X.0/24`.
    subnet: String,
    /// The hostfile naming each node with its slots.
    hostfile: PathBuf,
    /// The launcher agent ([`agent_dir`]).
    agent: PathBuf,
    /// Where the agent stashes the folder it binds back over a node's /tmp, if any.
    stash: Option<PathBuf>,
}

/// Where the launcher agent goes: `launch` (the launch directory) unless its path has a `:`
/// or a space, else a fresh directory under `/var/tmp`. Open MPI splits `plm_rsh_agent`
/// at `:` and at spaces (it is a list of agents, each with arguments) and looks the first
/// word up, so an agent under a checkout path with either (a CI clone in
/// `run 2026-12-01T10:00`) "could not be found". Not under `/tmp`: that is each node's
/// own, and a daemon on a node may launch the next through the same agent.
fn agent_dir(launch: &Path, pid: u32, k: usize) -> Result<PathBuf, String> {
    let nameable = |p: &Path| {
        !p.to_string_lossy()
            .contains(|c: char| c == ':' || c.is_whitespace())
    };
    if nameable(launch) {
        return Ok(launch.to_path_buf());
    }
    let dir = Path::new("/var/tmp").join(format!("tessera-mpi-agent-{pid}-{k}"));
    if !nameable(&dir) {
        return Err(format!(
            "the launch directory {} has a `:` or a space, which Open MPI's plm_rsh_agent \
             cannot name, and so has {}",
            launch.display(),
            dir.display()
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// The folder directly under the system's /tmp that holds `dir`, when `dir` is there: each
/// node mounts an empty /tmp of its own, which would hide it (and the test binary beside
/// it) from the ranks, so the agent binds it back.
fn shared_under_tmp(dir: &Path) -> Option<PathBuf> {
    let abs = std::fs::canonicalize(dir).ok()?;
    let rest = abs.strip_prefix("/tmp").ok()?;
    let first = rest.components().next()?;
    Some(Path::new("/tmp").join(first))
}

/// Runs `program args`, or says what failed.
fn sh(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program} could not be run ({e})"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether the process `pid` is alive.
fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid).exists()
}

/// Removes namespaces and bridges that killed test runs left (their pid is dead).
fn sweep() {
    let owner_dead = |name: &str, prefix: &str| {
        name.strip_prefix(prefix)
            .and_then(|rest| rest.split(['-', 'x']).next())
            .is_some_and(|pid| {
                !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && !alive(pid)
            })
    };
    if let Ok(list) = sh("ip", &["netns", "list"]) {
        for ns in list.lines().filter_map(|l| l.split_whitespace().next()) {
            if owner_dead(ns, "tessera-") {
                let _ = sh("ip", &["netns", "del", ns]);
            }
        }
    }
    // Stashes of the agents of runs whose process is gone (a node may still have held
    // one when its run ended).
    for e in std::fs::read_dir("/var/tmp")
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if owner_dead(&name, "tessera-node-stash-") || owner_dead(&name, "tessera-mpi-agent-") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    if let Ok(list) = sh("ip", &["-o", "link", "show", "type", "bridge"]) {
        for link in list.lines().filter_map(|l| l.split(": ").nth(1)) {
            if owner_dead(link, "tsb") {
                let _ = sh("ip", &["link", "del", link]);
            }
        }
    }
}

impl Nodes {
    /// `count` nodes of `slots` slots each, with the hostfile written into `dir` and the
    /// agent beside it (or where [`agent_dir`] says);
    /// `Err` says why nodes cannot be made here.
    pub fn new(count: usize, slots: usize, dir: &Path) -> Result<Nodes, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        if !super::is_root() {
            return Err("making network and mount namespaces needs root".into());
        }
        for tool in ["ip", "unshare"] {
            sh("sh", &["-c", &format!("command -v {tool}")])
                .map_err(|_| format!("`{tool}` is not on the path"))?;
        }
        sweep();
        let used = sh("ip", &["-4", "-o", "addr", "show"])?;
        let third = (0..=255u32)
            .find(|x| !used.contains(&format!("{SUBNET}.{x}.")))
            .ok_or("no free 10.213.X.0/24 subnet")?;
        let (pid, k) = (std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let mut nodes = Nodes {
            namespaces: Vec::new(),
            addresses: Vec::new(),
            bridge: format!("tsb{pid}x{k}"),
            subnet: format!("{SUBNET}.{third}.0/24"),
            hostfile: dir.join("hostfile"),
            agent: agent_dir(dir, pid, k)?.join("agent.sh"),
            stash: None,
        };
        // From here on, whatever was made is removed by Drop if a later step fails.
        let gateway = format!("{SUBNET}.{third}.254/24");
        sh("ip", &["link", "add", &nodes.bridge, "type", "bridge"])?;
        sh("ip", &["addr", "add", &gateway, "dev", &nodes.bridge])?;
        sh("ip", &["link", "set", &nodes.bridge, "up"])?;
        for i in 1..=count {
            let ns = format!("tessera-{pid}-{k}-n{i}");
            let veth = format!("tsv{pid}x{k}n{i}");
            let address = format!("{SUBNET}.{third}.{i}");
            sh("ip", &["netns", "add", &ns])?;
            nodes.namespaces.push(ns.clone());
            sh(
                "ip",
                &[
                    "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
                ],
            )?;
            sh("ip", &["link", "set", &veth, "master", &nodes.bridge, "up"])?;
            sh(
                "ip",
                &[
                    "-n",
                    &ns,
                    "addr",
                    "add",
                    &format!("{address}/24"),
                    "dev",
                    "eth0",
                ],
            )?;
            sh("ip", &["-n", &ns, "link", "set", "eth0", "up"])?;
            sh("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
            nodes.addresses.push(address);
        }
        let hosts: String = nodes
            .addresses
            .iter()
            .map(|a| format!("{a} slots={slots}\n"))
            .collect();
        std::fs::write(&nodes.hostfile, hosts).map_err(|e| format!("hostfile: {e}"))?;
        let cases: String = nodes
            .addresses
            .iter()
            .zip(&nodes.namespaces)
            .map(|(a, ns)| format!("  {a}) ns={ns} ;;\n"))
            .collect();
        // What lives under /tmp and every node must still see: the checkout's folder there
        // (a clone in /tmp/ci holds the test binary and the launch directory), bound back
        // over the node's own empty /tmp through a stash outside it.
        let keep = shared_under_tmp(dir);
        let stash = Path::new("/var/tmp").join(format!("tessera-node-stash-{pid}-{k}"));
        let (bind_aside, bind_back) = match &keep {
            Some(keep) => {
                std::fs::create_dir_all(&stash).map_err(|e| format!("{}: {e}", stash.display()))?;
                nodes.stash = Some(stash.clone());
                (
                    format!("mount --bind {} {} && ", keep.display(), stash.display()),
                    format!(
                        " && mkdir -p {k} && mount --bind {s} {k}",
                        k = keep.display(),
                        s = stash.display()
                    ),
                )
            }
            None => (String::new(), String::new()),
        };
        let agent = format!(
            "#!/bin/sh\n\
             # mpirun's launcher agent for nodes made of namespaces: `agent HOST COMMAND...`\n\
             # runs COMMAND on HOST's node, with an empty /tmp and the node's hostname.\n\
             host=\"$1\"; shift\n\
             case \"$host\" in\n{cases}  *) echo \"agent: no node $host\" >&2; exit 1 ;;\nesac\n\
             exec ip netns exec \"$ns\" unshare --mount --uts sh -c \
             '{bind_aside}mount -t tmpfs tmpfs /tmp{bind_back} && hostname \"$0\" && eval \"$1\"' \"$ns\" \"$*\"\n"
        );
        std::fs::write(&nodes.agent, agent).map_err(|e| format!("agent: {e}"))?;
        sh("chmod", &["+x", nodes.agent.to_str().ok_or("agent path")?])?;
        Ok(nodes)
    }

    /// The `mpirun` options that place ranks on these nodes (by slot: node 1's slots
    /// first) and keep every connection, the launcher's and the ranks', on their subnet.
    pub fn mpirun_options(&self) -> Vec<String> {
        [
            "--hostfile",
            self.hostfile.to_str().expect("hostfile path"),
            "--mca",
            "plm_rsh_agent",
            self.agent.to_str().expect("agent path"),
            "--mca",
            "oob_tcp_if_include",
            &self.subnet,
            "--mca",
            "btl",
            "tcp,self",
            "--mca",
            "btl_tcp_if_include",
            &self.subnet,
        ]
        .map(String::from)
        .to_vec()
    }

    /// Kills every process on node `i` (counted from 1): its daemon and its ranks, as a
    /// node that loses power.
    pub fn kill(&self, i: usize) {
        kill_namespace(&self.namespaces[i - 1]);
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            // A rank that outlived a failed launch would keep the namespace busy.
            kill_namespace(ns);
            let _ = sh("ip", &["netns", "del", ns]);
        }
        let _ = sh("ip", &["link", "del", &self.bridge]);
        if let Some(dir) = self.agent.parent().filter(|d| d.starts_with("/var/tmp")) {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some(stash) = &self.stash {
            let _ = std::fs::remove_dir(stash);
        }
    }
}

/// Kills every process in the network namespace `ns`.
fn kill_namespace(ns: &str) {
    if let Ok(pids) = sh("ip", &["netns", "pids", ns]) {
        for pid in pids.split_whitespace() {
            let _ = sh("kill", &["-9", pid]);
        }
    }
}
