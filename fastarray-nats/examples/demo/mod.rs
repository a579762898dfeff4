//! What the relays and shards demos share: the agent, the options, the
//! connection to the cluster, and a relay's clients on their lossy links.

use std::time::Duration;

use fastarray::{FastArray, Replicate, ReplicationId, SendState};
use fastarray_nats::NatsBus;
use fastarray_nats::dev::LocalCluster;
use fastarray_testkit::link::{Link, LinkProfile};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// An agent of the demos' 1 024 m square.
#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Agent {
    #[replicate(quantize(min = 0.0, max = 1024.0, bits = 16))]
    pub x: f32,
    #[replicate(quantize(min = 0.0, max = 1024.0, bits = 16))]
    pub y: f32,
    pub hp: u8,
}

/// The agents of a demo.
pub const AGENTS: usize = 2_000;
/// A tick at 30 Hz.
pub const TICK: Duration = Duration::from_millis(33);

/// One tick of a world's game: a tenth of the agents walk up to `reach`
/// metres each way, some get hurt; the dead, and a few others, go and
/// `spawn` makes new ones. Returns the ids that went.
pub fn step(
    world: &mut FastArray<Agent>,
    rng: &mut ChaCha8Rng,
    reach: f32,
    mut spawn: impl FnMut(&mut ChaCha8Rng) -> Agent,
) -> Vec<ReplicationId> {
    let ids: Vec<ReplicationId> = world.ids().collect();
    for &id in &ids {
        if rng.random_bool(0.1) {
            let mut agent = world.get_mut(id).expect("listed");
            agent.x = (agent.x + rng.random_range(-reach..reach)).clamp(0.0, 1023.0);
            agent.y = (agent.y + rng.random_range(-reach..reach)).clamp(0.0, 1023.0);
        }
        if rng.random_bool(0.01) {
            let mut agent = world.get_mut(id).expect("listed");
            agent.hp = agent.hp.saturating_sub(rng.random_range(1..20));
        }
    }
    let mut gone = Vec::new();
    for &id in &ids {
        if world.get(id).is_some_and(|agent| agent.hp == 0) || rng.random_bool(0.002) {
            world.remove(id);
            gone.push(id);
            world.push(spawn(rng));
        }
    }
    gone
}

/// The command line: `--clients N --relays N --ticks N --nats URL`.
pub struct Options {
    pub clients: usize,
    pub relays: usize,
    pub ticks: u32,
    pub nats: Option<String>,
}

/// Reads the command line.
pub fn options() -> Options {
    let mut options = Options {
        clients: 120,
        relays: 2,
        ticks: 300,
        nats: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--clients" => options.clients = value().parse().expect("--clients N"),
            "--relays" => options.relays = value().parse().expect("--relays N"),
            "--ticks" => options.ticks = value().parse().expect("--ticks N"),
            "--nats" => options.nats = Some(value()),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(options.relays > 0, "--relays must be at least 1");
    options
}

/// The NATS the demo runs on: the servers of `--nats`, or a 3-node
/// cluster of its own on free ports of 127.0.0.1; and a runtime.
pub struct Net {
    nats: Option<String>,
    cluster: Option<LocalCluster>,
    runtime: tokio::runtime::Runtime,
}

impl Net {
    /// Starts the cluster if `--nats` was not given; exits with status 2
    /// if it cannot.
    pub fn start(options: &Options) -> Self {
        let cluster = match &options.nats {
            Some(_) => None,
            None => Some(LocalCluster::start(3).unwrap_or_else(|error| {
                eprintln!("{error}");
                std::process::exit(2)
            })),
        };
        Self {
            nats: options.nats.clone(),
            cluster,
            runtime: tokio::runtime::Runtime::new().expect("a tokio runtime"),
        }
    }

    /// A connection named `name`, to node `node` of the cluster first.
    pub fn connect(&self, node: usize, name: &str) -> NatsBus {
        let urls = match (&self.nats, &self.cluster) {
            (Some(url), _) => vec![url.clone()],
            (None, Some(cluster)) => cluster.urls_from(node % 3),
            (None, None) => unreachable!("a cluster or --nats"),
        };
        NatsBus::connect(self.runtime.handle(), &urls, name).unwrap_or_else(|error| {
            eprintln!("{error}");
            std::process::exit(2)
        })
    }
}

/// A client of a relay: its state there, its mirror, its link.
pub struct Client {
    pub state: SendState,
    pub mirror: FastArray<Agent>,
    pub link: Link,
    pub packet: u32,
    /// Bytes it was sent while the game moved.
    pub bytes: u64,
}

/// Relay `r`'s share of `clients` clients over `relays` relays, on links
/// that lose 5% of the packets.
pub fn clients(r: usize, relays: usize, clients: usize) -> Vec<Client> {
    let profile = LinkProfile::lossy(0.05);
    (r..clients)
        .step_by(relays)
        .map(|c| Client {
            state: SendState::new(),
            mirror: FastArray::mirror(),
            link: Link::new(profile.clone(), c as u64),
            packet: 0,
            bytes: 0,
        })
        .collect()
}

/// Writes `relay`'s delta to each of its clients over its link (once the
/// game stands still, only to those not settled), counting the bytes
/// while the game `moving`.
pub fn write(relay: &mut FastArray<Agent>, clients: &mut [Client], now: u32, moving: bool) {
    for client in clients {
        if moving || !relay.is_settled(&client.state) {
            client.packet += 1;
            let mut bytes = Vec::new();
            relay
                .write_delta(&mut client.state, client.packet, &mut bytes)
                .expect("write");
            if moving {
                client.bytes += bytes.len() as u64;
            }
            client.link.send(now, client.packet, bytes);
        }
    }
}

/// Applies what each client's link delivers at `now`, and tells the
/// relay's side what was delivered.
pub fn deliver(clients: &mut [Client], now: u32) {
    for client in clients {
        for bytes in client.link.deliver(now) {
            client
                .mirror
                .apply_delta(&bytes, &mut ())
                .expect("a relay's delta applies");
        }
        for report in client.link.reports(now) {
            report.tell(&mut client.state);
        }
    }
}
