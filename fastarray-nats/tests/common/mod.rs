//! What the NATS tests share.

use fastarray_nats::NatsBus;
use fastarray_nats::dev::LocalCluster;

/// A test's NATS: a cluster of its own and a runtime for its clients.
pub struct Net {
    pub cluster: LocalCluster,
    pub runtime: tokio::runtime::Runtime,
}

impl Net {
    /// A cluster of `nodes` nodes, and a runtime.
    pub fn start(nodes: usize) -> Self {
        Self {
            cluster: LocalCluster::start(nodes).unwrap(),
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        }
    }

    /// A client that connects to node `node` first.
    pub fn connect(&self, node: usize, name: &str) -> NatsBus {
        NatsBus::connect(self.runtime.handle(), &self.cluster.urls_from(node), name).unwrap()
    }
}
