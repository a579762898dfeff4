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
use std::time::{Duration, Instant};

/// Why a cluster did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClusterError {
    /// No `nats-server` binary was found.
    NotInstalled,
    /// A process could not be started, or did not listen in time.
    Start(String),
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotInstalled => f.write_str(
                "nats-server is not installed: apt-get install nats-server (or set NATS_SERVER)",
            ),
            Self::Start(why) => write!(f, "cannot start nats-server: {why}"),
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

/// A port of 127.0.0.1 free now.
fn free_port() -> Result<u16, ClusterError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|error| ClusterError::Start(error.to_string()))
}

/// One node: its ports and, while it runs, its process.
#[derive(Debug)]
struct Node {
    client_port: u16,
    cluster_port: u16,
    process: Option<Child>,
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
    /// [`ClusterError::Start`] if a server does not come up in 10 s.
    pub fn start(nodes: usize) -> Result<Self, ClusterError> {
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
        // The log goes nowhere, but is read so the pipe never fills.
        if let Some(log) = process.stderr.take() {
            std::thread::spawn(move || for _ in BufReader::new(log).lines() {});
        }
        self.nodes[node].process = Some(process);
        Ok(())
    }

    /// Waits until node `node` accepts connections and is routed to every
    /// other node that runs.
    fn wait_ready(&mut self, node: usize) -> Result<(), ClusterError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let port = self.nodes[node].client_port;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(process) = &mut self.nodes[node].process
                && let Ok(Some(status)) = process.try_wait()
            {
                return Err(ClusterError::Start(format!("node {node} exited: {status}")));
            }
            if Instant::now() > deadline {
                return Err(ClusterError::Start(format!("node {node} did not listen")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let running = self.nodes.iter().filter(|n| n.process.is_some()).count();
        while self.routes(node) + 1 < running {
            if Instant::now() > deadline {
                return Err(ClusterError::Start(format!("node {node} has no routes")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// The routes node `node` has, from the `INFO` line it greets a
    /// client with (`connect_urls`: the other nodes' client addresses).
    fn routes(&self, node: usize) -> usize {
        let Ok(stream) = TcpStream::connect(("127.0.0.1", self.nodes[node].client_port)) else {
            return 0;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut line = String::new();
        if BufReader::new(stream).read_line(&mut line).is_err() {
            return 0;
        }
        let Some(urls) = line.split("\"connect_urls\":[").nth(1) else {
            return 0;
        };
        let urls = urls.split(']').next().unwrap_or("");
        urls.split(',').filter(|url| !url.trim().is_empty()).count()
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for node in 0..self.nodes.len() {
            self.kill(node);
        }
    }
}
