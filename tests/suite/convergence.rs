//! Convergence over a lossy link: for random mutation scripts and every link
//! profile (loss, bursts, reordering, duplication, late delivery after a
//! loss report, outages longer than the history ring), once the link heals
//! and the pending work is acknowledged the mirror equals the server. Every
//! message must apply without error, and the callbacks must describe the
//! same contents as the mirror.

use std::collections::BTreeMap;

use fastarray::{Callbacks, FastArray, FieldMask, Replicate, ReplicationId};
use fastarray_testkit::drive;
use fastarray_testkit::link::LinkProfile;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Agent {
    position: [f32; 2],
    health: u8,
    ammo: u16,
    name: String,
    flags: Option<u32>,
}

fn spawn(rng: &mut ChaCha8Rng) -> Agent {
    Agent {
        position: [
            rng.random_range(-100.0..100.0),
            rng.random_range(-100.0..100.0),
        ],
        health: rng.random(),
        ammo: rng.random(),
        name: "x".repeat(rng.random_range(0..4)),
        flags: rng.random_bool(0.5).then(|| rng.random()),
    }
}

/// One tick of game logic on the server.
fn mutate(server: &mut FastArray<Agent>, rng: &mut ChaCha8Rng) {
    let ids: Vec<ReplicationId> = server.ids().collect();
    for _ in 0..rng.random_range(0..4) {
        if let Some(&id) = ids.get(rng.random_range(0..ids.len().max(1))) {
            let mut agent = server.get_mut(id).unwrap();
            match rng.random_range(0..5) {
                0 => agent.position[0] += 1.0,
                1 => agent.health = rng.random(),
                2 => agent.ammo = agent.ammo.wrapping_add(1),
                3 => agent.name.push('y'),
                _ => agent.flags = None,
            }
        }
    }
    if rng.random_bool(0.3) && !ids.is_empty() {
        server.remove(ids[rng.random_range(0..ids.len())]);
    }
    if rng.random_bool(0.3) || server.len() < 5 {
        server.push(spawn(rng));
    }
    if rng.random_bool(0.1) {
        server.sort_by(|a, b| a.ammo.cmp(&b.ammo));
    }
}

/// Rebuilds the mirror's contents from callbacks alone.
#[derive(Default)]
struct Shadow(BTreeMap<ReplicationId, Agent>);

impl Callbacks<Agent> for Shadow {
    fn pre_remove(&mut self, id: ReplicationId, item: &Agent) {
        assert_eq!(
            self.0.remove(&id).as_ref(),
            Some(item),
            "pre_remove of {id}"
        );
    }
    fn post_add(&mut self, id: ReplicationId, item: &Agent) {
        assert!(
            self.0.insert(id, item.clone()).is_none(),
            "post_add of a held {id}"
        );
    }
    fn post_change(&mut self, id: ReplicationId, item: &Agent, changed: FieldMask) {
        let old = self
            .0
            .insert(id, item.clone())
            .expect("post_change of an unknown id");
        assert!(!changed.is_empty());
        assert_eq!(
            changed,
            item.diff(&old),
            "the mask names exactly the changed fields"
        );
    }
}

fn contents(array: &FastArray<Agent>) -> BTreeMap<ReplicationId, Agent> {
    array.iter().map(|(id, a)| (id, a.clone())).collect()
}

/// Runs one script over one link; panics with the seed on any failure.
fn run(profile: &LinkProfile, seed: u64, script_ticks: u32) {
    let label = format!("{} seed {seed}", profile.name);
    let mut session = drive::ArraySession::new(
        FastArray::new(),
        seed,
        label.clone(),
        mutate,
        Shadow::default(),
    );
    drive::drive(profile, seed, script_ticks, &mut session);
    let (server, mirror) = (&session.server, &session.client);
    assert_eq!(
        contents(mirror),
        contents(server),
        "{label}: mirror differs from server"
    );
    assert_eq!(session.callbacks.0, contents(mirror), "{label}: callbacks");
}

#[test]
fn mirrors_converge_over_every_link_profile() {
    for profile in LinkProfile::all_for_tests() {
        for seed in 0..100 {
            run(&profile, seed, 120);
        }
    }
}

/// The long version of the above: more seeds and longer scripts.
/// Run with `cargo test --release --test suite convergence:: -- --ignored`.
#[test]
#[ignore = "soak: minutes of work"]
fn mirrors_converge_soak() {
    for profile in LinkProfile::all_for_tests() {
        for seed in 0..2_000 {
            run(&profile, seed, 400);
        }
    }
}
