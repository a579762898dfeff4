//! The crowd over simulated links (`--simulated`): the server and the
//! clients in one loop, each client behind a seeded `Link` of the test kit
//! that knows every packet's fate (loss, reordering, duplication, delay,
//! packets arriving after the sender gave up on them).

use std::process::ExitCode;
use std::time::Instant;

use fastarray::{FastArray, InterestGrid, Relevance, SendState};
use fastarray_testkit::link::{Link, LinkProfile};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::{Agent, SPAWNS_PER_TICK, START_AGENTS, ground, mirrors_scope, simulate, spawn};

/// One client: its link, the server's send state for it, its mirror, and
/// where its player stands and how far it sees.
struct Client {
    link: Link,
    conn: SendState,
    mirror: FastArray<Agent>,
    bytes: u64,
    packets: u64,
    home: [f32; 2],
    radius: f32,
    /// Agents in scope, summed over the ticks (for the average).
    in_scope: u64,
}

impl Client {
    /// Where the player stands at tick `now`: walking a circle of 80 around
    /// its home, one lap every 600 ticks.
    fn position(&self, now: u32) -> [f32; 2] {
        let angle = now as f32 / 600.0 * std::f32::consts::TAU;
        [
            self.home[0] + 80.0 * angle.cos(),
            self.home[1] + 80.0 * angle.sin(),
        ]
    }
}

fn profile(name: &'static str, loss: f64) -> LinkProfile {
    LinkProfile {
        name,
        loss,
        burst: None,
        duplicate: 0.02,
        delay: (1, 4),
        ack_delay: (1, 3),
        late_after_loss: 0.1,
        outage: None,
    }
}

/// Runs `ticks` ticks over simulated links.
pub fn run(ticks: u32) -> ExitCode {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let mut server = FastArray::with_capacity(START_AGENTS + SPAWNS_PER_TICK * ticks as usize);
    let mut grid = InterestGrid::new(100.0);
    grid.set_leave_margin(10.0); // agents on the rim do not flicker
    let mut serial = 0;
    for _ in 0..START_AGENTS {
        let agent = spawn(&mut rng, serial);
        let position = ground(&agent);
        grid.set_item(server.push(agent), position);
        serial += 1;
    }
    server.commit();
    // Everything to everyone, for comparison: one connection without a
    // scope, over a perfect link.
    let mut everyone = SendState::new();
    let mut everyone_bytes = 0u64;

    let profiles = [
        profile("0% loss", 0.0),
        profile("0% loss", 0.0),
        profile("5% loss", 0.05),
        profile("5% loss", 0.05),
        profile("20% loss", 0.20),
        profile("20% loss", 0.20),
        profile("50% loss", 0.50),
        profile("50% loss", 0.50),
    ];
    // Players spread over the map, seeing from 60 to 250 units around them.
    let radii = [60.0, 250.0, 100.0, 150.0, 60.0, 200.0, 100.0, 250.0];
    let mut clients: Vec<Client> = profiles
        .into_iter()
        .zip(1..)
        .map(|(profile, seed)| {
            let angle = seed as f32 * 0.785;
            let radius = radii[(seed - 1) as usize % radii.len()];
            Client {
                link: Link::new(profile, seed),
                conn: SendState::new(),
                mirror: FastArray::mirror(),
                bytes: 0,
                packets: 0,
                home: [300.0 * angle.cos(), 300.0 * angle.sin()],
                radius,
                in_scope: 0,
            }
        })
        .collect();
    for client in &mut clients {
        server.scope(&mut client.conn).expect("the server's array");
    }

    let started = Instant::now();
    let mut sequence: u16 = 0; // a wrapping u16 transport sequence
    let mut changes_sent = 0;
    let drain_limit = ticks + 500;
    for now in 0.. {
        let live = now < ticks;
        if now == ticks {
            clients.iter_mut().for_each(|c| c.link.heal());
        }
        let touched = if live {
            simulate(&mut server, &mut grid, &mut rng, &mut serial, now)
        } else {
            0
        };
        let changes = server.commit();
        let (changed, added, removed) = (
            changes.changed().len(),
            changes.added().len(),
            changes.removed().len(),
        );
        changes_sent += changed + added + removed;

        // Area of interest: the players walk on while the game runs; each
        // connection's scope follows what its player sees.
        if live {
            for (n, client) in clients.iter().enumerate() {
                grid.set_viewer(n as u64, client.position(now), client.radius);
            }
        }
        grid.update(|viewer, id, relevance| {
            let mut scope = server
                .scope(&mut clients[viewer as usize].conn)
                .expect("the server's array");
            match relevance {
                Relevance::Enter => scope.include(id),
                Relevance::Leave => scope.exclude(id),
            };
        });
        if live {
            let mut packet = Vec::new();
            if let Err(error) = server.write_delta(&mut everyone, u32::from(sequence), &mut packet)
            {
                eprintln!("write failed: {error}");
                return ExitCode::FAILURE;
            }
            everyone.on_ack(u32::from(sequence));
            everyone_bytes += packet.len() as u64;
        }

        let mut tick_bytes = Vec::with_capacity(clients.len());
        for client in &mut clients {
            if live {
                client.in_scope += server.scope(&mut client.conn).map_or(0, |s| s.len()) as u64;
            }
            if live || !server.is_settled(&client.conn) {
                let mut packet = Vec::new();
                if let Err(error) =
                    server.write_delta(&mut client.conn, u32::from(sequence), &mut packet)
                {
                    eprintln!("write failed: {error}");
                    return ExitCode::FAILURE;
                }
                tick_bytes.push(packet.len());
                client.bytes += packet.len() as u64;
                client.packets += 1;
                client.link.send(now, u32::from(sequence), packet);
            }
            for bytes in client.link.deliver(now) {
                if let Err(error) = client.mirror.apply_delta(&bytes, &mut ()) {
                    eprintln!("a client rejected a delta: {error}");
                    return ExitCode::FAILURE;
                }
            }
            for report in client.link.reports(now) {
                report.tell(&mut client.conn);
            }
        }
        sequence = sequence.wrapping_add(1);

        if live && (now % 20 == 0 || now + 1 == ticks) {
            println!(
                "tick {now:>4}  items {:>5}  touched {touched:>5}  changed {changed:>5}  added {added:>3}  removed {removed:>3}  bytes/client {tick_bytes:?}",
                server.len(),
            );
        }
        let settled = clients
            .iter()
            .all(|c| server.is_settled(&c.conn) && c.link.idle());
        if !live && settled {
            println!(
                "links healed; all clients settled {} ticks later",
                now - ticks
            );
            break;
        }
        if now >= drain_limit {
            eprintln!(
                "clients did not settle within {} ticks of healing",
                drain_limit - ticks
            );
            return ExitCode::FAILURE;
        }
    }
    let elapsed = started.elapsed();

    let mut snapshot = Vec::new();
    server.write_snapshot(&mut snapshot).expect("agents encode");
    println!(
        "\n{ticks} ticks, {} agents at the end, {changes_sent} adds/changes/removals committed, {:.1} ms in all",
        server.len(),
        elapsed.as_secs_f64() * 1e3
    );
    println!(
        "a full snapshot would be {} bytes per tick per client\n",
        snapshot.len()
    );
    let per_tick = |bytes: u64| bytes as f64 / f64::from(ticks.max(1));
    println!(
        "everything to everyone: {:.0} bytes/tick per client\n",
        per_tick(everyone_bytes)
    );
    println!(
        "client  link       radius  in scope  bytes/tick  vs all  packets  acked  lost  late  matches"
    );
    let mut all_match = true;
    for (n, client) in clients.iter_mut().enumerate() {
        let stats = client.link.stats();
        let matches = mirrors_scope(&mut server, &mut client.conn, &client.mirror);
        all_match &= matches;
        println!(
            "{n:>6}  {:<9}  {:>6.0}  {:>8.0}  {:>10.0}  {:>5.1}%  {:>7}  {:>5}  {:>4}  {:>4}  {}",
            client.link.profile().name,
            client.radius,
            client.in_scope as f64 / f64::from(ticks.max(1)),
            per_tick(client.bytes),
            100.0 * client.bytes as f64 / everyone_bytes.max(1) as f64,
            client.packets,
            stats.acked,
            stats.lost,
            stats.late_after_loss,
            if matches { "yes" } else { "NO" },
        );
    }
    println!(
        "\nradius: how far the player sees; in scope: agents it saw, on average; bytes/tick: \
         sent to it, on average;\nvs all: that against sending everything to everyone; \
         packets, acked, lost: what its link did with them;\nlate: lost packets that arrived \
         anyway, after the sender gave up on them; matches: its mirror holds exactly the \
         server's\nagents in its scope, equal on the wire."
    );
    if !all_match {
        eprintln!("MISMATCH: a client differs from the server's agents in its scope");
        return ExitCode::FAILURE;
    }
    println!(
        "\nevery client matches the server's agents in its scope ({} agents in all)",
        server.len()
    );
    ExitCode::SUCCESS
}
