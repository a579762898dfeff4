//! [`LocalCluster`]: `nats-server` processes on free ports of 127.0.0.1,
//! joined in one cluster, for tests and demos. A test starts its own and
//! they stop when it is dropped; a node can be killed and restarted to
//! test faults.
//!
//! `nats-server` must be installed (Debian: `apt-get install nats-server`,
//! which puts it in `/usr/sbin`; `.ci/run` does it). Set `NATS_SERVER` to
//! use another binary.

use std::fmt;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a cluster did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClusterError {
    /// No `nats-server` binary was found.
    NotInstalled,
    /// A process could not be started, or did not listen in time.
    Start(String),
    /// Node `node` exited as it started (its port taken, say): what it
    /// said last on stderr.
    Exited {
        /// The node.
        node: usize,
        /// How it exited.
        status: std::process::ExitStatus,
        /// Its last lines on stderr, joined by ` | `.
        log: String,
    },
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotInstalled => f.write_str(
                "nats-server is not installed: apt-get install nats-server (or set NATS_SERVER)",
            ),
            Self::Start(why) => write!(f, "cannot start nats-server: {why}"),
            Self::Exited { node, status, log } => {
                write!(
                    f,
                    "cannot start nats-server: node {node} exited: {status}: {log}"
                )
            }
        }
    }
}

impl std::error::Error for ClusterError {}

/// The `nats-server` binary: `$NATS_SERVER`, else the first found on the
/// `PATH` or in `/usr/sbin` and `/usr/local/bin`.
pub fn nats_server() -> Result<PathBuf, ClusterError> {
    if let Some(path) = std::env::var_os("NATS_SERVER") {
        return Ok(path.into());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/bin".into()])
        .map(|dir| dir.join("nats-server"))
        .find(|candidate| candidate.is_file())
        .ok_or(ClusterError::NotInstalled)
}

/// The first port of the kernel's ephemeral range: outgoing connections
/// take their local ports from there, so a port below it that is free now
/// stays free until a server binds it (a port from `bind(0)` could be taken
/// by any client's connection in between, and a node would exit with
/// "address already in use").
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// The next port this process has not handed out, below the ephemeral
/// range, that 127.0.0.1 lets us bind now. Each process starts at its own
/// offset, so concurrent test processes rarely meet, and a process never
/// hands out a port twice while the range lasts.
fn free_port() -> Result<u16, ClusterError> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOWEST: u32 = 10_000;
    let top = u32::from(ephemeral_start()).max(LOWEST + 1_000);
    let span = top - LOWEST;
    let offset = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let step = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = LOWEST + (offset + step) % span;
        let Ok(port) = u16::try_from(port) else {
            continue;
        };
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(ClusterError::Start(
        "no free port below the ephemeral range".into(),
    ))
}

/// One node: its ports and, while it runs, its process.
#[derive(Debug)]
struct Node {
    client_port: u16,
    cluster_port: u16,
    process: Option<Child>,
    /// The last lines the process wrote to stderr (said when it fails).
    log: Arc<Mutex<Vec<String>>>,
}

/// `nats-server` processes joined in one cluster on 127.0.0.1.
#[derive(Debug)]
pub struct LocalCluster {
    binary: PathBuf,
    nodes: Vec<Node>,
}

impl LocalCluster {
    /// Starts `nodes` servers, each routed to the others, and waits until
    /// every one accepts clients and has its routes to the others.
    ///
    /// # Errors
    /// [`ClusterError::NotInstalled`] without `nats-server`;
    /// [`ClusterError::Start`] if a server does not come up in 10 s;
    /// [`ClusterError::Exited`] if one exited as it started, four times
    /// on fresh ports.
    pub fn start(nodes: usize) -> Result<Self, ClusterError> {
        // A node that exits at once (its port taken after all, by a process
        // we do not know of) costs a fresh set of ports, three times at most.
        let mut attempt = 0;
        loop {
            match Self::start_once(nodes) {
                Err(ClusterError::Exited { .. }) if attempt < 3 => {
                    attempt += 1;
                }
                started => return started,
            }
        }
    }

    fn start_once(nodes: usize) -> Result<Self, ClusterError> {
        let binary = nats_server()?;
        let mut cluster = Self {
            binary,
            nodes: Vec::new(),
        };
        for _ in 0..nodes {
            cluster.nodes.push(Node {
                client_port: free_port()?,
                cluster_port: free_port()?,
                process: None,
                log: Arc::default(),
            });
        }
        for node in 0..nodes {
            cluster.spawn(node)?;
        }
        for node in 0..nodes {
            cluster.wait_ready(node)?;
        }
        Ok(cluster)
    }

    /// The client URL of node `node`.
    pub fn url(&self, node: usize) -> String {
        format!("nats://127.0.0.1:{}", self.nodes[node].client_port)
    }

    /// The client URLs of every node, `first` first (a client connects to
    /// the first it can).
    pub fn urls_from(&self, first: usize) -> Vec<String> {
        let count = self.nodes.len();
        (0..count).map(|n| self.url((first + n) % count)).collect()
    }

    /// Kills node `node` (SIGKILL: no goodbye to its clients or routes).
    pub fn kill(&mut self, node: usize) {
        if let Some(mut process) = self.nodes[node].process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    /// Starts node `node` again on its ports, and waits until it is ready.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn restart(&mut self, node: usize) -> Result<(), ClusterError> {
        self.kill(node);
        self.spawn(node)?;
        self.wait_ready(node)
    }

    fn spawn(&mut self, node: usize) -> Result<(), ClusterError> {
        let routes: Vec<String> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|&(other, _)| other != node)
            .map(|(_, other)| format!("nats://127.0.0.1:{}", other.cluster_port))
            .collect();
        let this = &self.nodes[node];
        let mut command = Command::new(&self.binary);
        command
            .args(["-a", "127.0.0.1", "-p"])
            .arg(this.client_port.to_string())
            .args(["-n", &format!("fastarray-{node}")])
            .args(["--cluster_name", "fastarray"])
            .arg("--cluster")
            .arg(format!("nats://127.0.0.1:{}", this.cluster_port))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if !routes.is_empty() {
            command.arg("--routes").arg(routes.join(","));
        }
        let mut process = command
            .spawn()
            .map_err(|error| ClusterError::Start(format!("{}: {error}", self.binary.display())))?;
        // The log is read so the pipe never fills; its last lines are kept
        // to say why the node stopped, if it does.
        if let Some(stderr) = process.stderr.take() {
            let log = Arc::clone(&this.log);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let mut log = log.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    if log.len() == 8 {
                        log.remove(0);
                    }
                    log.push(line);
                }
            });
        }
        self.nodes[node].process = Some(process);
        Ok(())
    }

    /// Waits until node `node` greets a client as a NATS server and knows
    /// every node that runs (itself included), or says why it stopped.
    fn wait_ready(&mut self, node: usize) -> Result<(), ClusterError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let running = self.nodes.iter().filter(|n| n.process.is_some()).count();
        loop {
            // Asked first: something else may listen on a port the node
            // could not bind, and answer the greeting below with silence.
            if let Some(process) = &mut self.nodes[node].process
                && let Ok(Some(status)) = process.try_wait()
            {
                // The reader thread may still be taking the last lines.
                std::thread::sleep(Duration::from_millis(50));
                let log = self.nodes[node].log.lock().map(|log| log.join(" | "));
                let log = log.unwrap_or_default();
                return Err(ClusterError::Exited { node, status, log });
            }
            match self.known_nodes(node) {
                Some(known) if known >= running => return Ok(()),
                Some(_) if Instant::now() > deadline => {
                    return Err(ClusterError::Start(format!("node {node} has no routes")));
                }
                None if Instant::now() > deadline => {
                    return Err(ClusterError::Start(format!("node {node} did not listen")));
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// How many nodes node `node` knows, itself included, from the `INFO`
    /// line it greets a client with (`connect_urls`: the client addresses
    /// of the cluster's nodes); `None` if it gives no such greeting.
    fn known_nodes(&self, node: usize) -> Option<usize> {
        let stream = TcpStream::connect(("127.0.0.1", self.nodes[node].client_port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_millis(250)))
            .ok()?;
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line).ok()?;
        if !line.starts_with("INFO ") {
            return None;
        }
        let Some(urls) = line.split("\"connect_urls\":[").nth(1) else {
            // A node alone in its cluster lists no URLs.
            return Some(1);
        };
        let urls = urls.split(']').next().unwrap_or("");
        Some(urls.split(',').filter(|url| !url.trim().is_empty()).count())
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for node in 0..self.nodes.len() {
            self.kill(node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_below_the_ephemeral_range_and_never_handed_out_twice() {
        let top = ephemeral_start();
        let ports: Vec<u16> = (0..200).map(|_| free_port().unwrap()).collect();
        assert!(ports.iter().all(|&port| (10_000..top).contains(&port)));
        let distinct: std::collections::HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len());
    }

    /// The failure CI met once: a node whose port another process holds
    /// exits; the error says so with the node's own words.
    #[test]
    #[ignore = "needs nats-server (cargo test -p fastarray-nats -- --ignored)"]
    fn a_node_whose_port_is_taken_exits_and_says_why() {
        let holder = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut cluster = LocalCluster {
            binary: nats_server().unwrap(),
            nodes: vec![Node {
                client_port: holder.local_addr().unwrap().port(),
                cluster_port: free_port().unwrap(),
                process: None,
                log: Arc::default(),
            }],
        };
        cluster.spawn(0).unwrap();
        let error = cluster.wait_ready(0).unwrap_err();
        assert!(
            matches!(&error, ClusterError::Exited { node: 0, log, .. } if log.contains("address already in use")),
            "{error}"
        );
        assert!(error.to_string().contains("node 0 exited"), "{error}");
    }

    #[test]
    #[ignore = "needs nats-server (cargo test -p fastarray-nats -- --ignored)"]
    fn a_cluster_starts_routed_and_a_killed_node_restarts_on_its_ports() {
        let mut cluster = LocalCluster::start(3).unwrap();
        let url = cluster.url(1);
        cluster.kill(1);
        assert!(TcpStream::connect(url.trim_start_matches("nats://")).is_err());
        cluster.restart(1).unwrap();
        assert_eq!(cluster.url(1), url);
        assert_eq!(cluster.known_nodes(1), Some(3));
    }
}
