//! The item and object types the targets replicate, and how the genuine
//! sessions and the scripts make and change them.

use std::fmt::Debug;
use std::sync::OnceLock;

use fastarray::{FastArray, Replicate, ReplicationId};

use super::{History, object_messages};

/// Plain fields only, one of them a 4-bit field, and a skipped field
/// (which `==` ignores: mirrors hold its default).
#[derive(Replicate, Clone, Debug)]
pub struct Unit {
    hp: u16,
    team: u8,
    #[replicate(bits = 4)]
    rank: u8,
    alive: bool,
    #[replicate(skip)]
    cache: u32,
}

impl PartialEq for Unit {
    fn eq(&self, other: &Self) -> bool {
        let key = |u: &Unit| (u.hp, u.team, u.rank, u.alive);
        key(self) == key(other)
    }
}

/// An enum with unit, struct and tuple variants.
#[derive(Replicate, Clone, Debug, PartialEq)]
pub enum Shape {
    Dot,
    Line { len: u16 },
    Rect { w: u8, h: u8 },
    Label(String),
}

/// A struct with a flattened enum (a variant change is structural).
#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Thing {
    hp: u16,
    #[replicate(flatten)]
    shape: Shape,
    #[replicate(varint)]
    score: u32,
}

/// Strings, vectors, options, tuples, chars, raw and quantized floats.
#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Named {
    name: String,
    tags: Vec<u8>,
    pos: Option<(i16, i16)>,
    glyph: char,
    // Steps of exactly 1.0, so that the values the scripts set arrive
    // unchanged.
    #[replicate(quantize(min = 0, max = 255, bits = 8))]
    x: f32,
    speed: f32,
    path: [u8; 3],
}

/// A place: the flattened field of [`Spawned`].
#[derive(Replicate, Clone, Debug, PartialEq, Default)]
pub struct Spot {
    x: i8,
    y: i8,
}

/// Whole values written against the type's default
/// (`#[replicate(default_baseline)]`): fields often at their default, a
/// flattened field, a skipped field (which `==` ignores).
#[derive(Replicate, Clone, Debug)]
#[replicate(default_baseline)]
pub struct Spawned {
    hp: u8,
    #[replicate(flatten)]
    at: Spot,
    name: String,
    #[replicate(bits = 3)]
    level: u8,
    #[replicate(skip)]
    cache: u32,
}

impl Default for Spawned {
    fn default() -> Self {
        Spawned {
            hp: 100,
            at: Spot::default(),
            name: "imp".to_owned(),
            level: 1,
            cache: 9,
        }
    }
}

impl PartialEq for Spawned {
    fn eq(&self, other: &Self) -> bool {
        let key = |s: &Spawned| (s.hp, s.at.clone(), s.name.clone(), s.level);
        key(self) == key(other)
    }
}

/// An item of an array inside an item.
#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Member {
    hp: u16,
    #[replicate(bits = 4)]
    rank: u8,
}

/// An item with one array field.
#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Squad {
    tag: u8,
    #[replicate(array)]
    members: FastArray<Member>,
}

/// An item with several array fields, one of them holding items with
/// arrays (two levels deep).
#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Platoon {
    name: String,
    #[replicate(array)]
    guards: FastArray<Member>,
    #[replicate(array)]
    squads: FastArray<Squad>,
}

/// A recursive type: every level costs 12 bits.
#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Node {
    pub id: u8,
    pub children: Vec<Node>,
}

/// A recursive type whose every level costs one bit.
#[derive(Replicate, Clone, Debug, PartialEq)]
pub struct Chain {
    pub next: Option<Box<Chain>>,
}

/// A replicated object with plain fields and two array fields.
#[derive(Replicate, Clone, Debug, PartialEq, Default)]
pub struct World {
    round: u16,
    #[replicate(array)]
    squads: FastArray<Squad>,
    clock: u32,
    #[replicate(array)]
    units: FastArray<Unit>,
}

/// A replicated object with an optional string and one array field.
#[derive(Replicate, Clone, Debug, PartialEq, Default)]
pub struct Lobby {
    host: Option<String>,
    #[replicate(array)]
    players: FastArray<Named>,
}

/// Caps that keep scripts' arrays small, so that healing ends in a bounded
/// number of rounds even with a bit budget.
pub(super) const MAX_ITEMS: usize = 16;
pub(super) const MAX_INNER: usize = 12;
pub(super) const MAX_SQUADS: usize = 4;

/// The id at position `n` (modulo the length), if any.
pub(super) fn pick<T>(array: &FastArray<T>, n: u8) -> Option<ReplicationId> {
    match array.len() {
        0 => None,
        len => array.ids().nth(usize::from(n) % len),
    }
}

/// A short ASCII string (at most 5 bytes) from a byte.
pub(super) fn word(n: u8) -> String {
    (0..n % 6)
        .map(|i| char::from(b'a' + n.wrapping_add(i) % 26))
        .collect()
}

pub(super) fn member(n: u8) -> Member {
    Member {
        hp: u16::from(n) * 3,
        rank: n % 16,
    }
}

/// Edits of a `FastArray<Member>`: push, remove, change a field, reorder.
fn edit_members(members: &mut FastArray<Member>, op: u8, arg: u8) {
    match op % 6 {
        0 | 1 if members.len() < MAX_INNER => {
            members.push(member(arg));
        }
        2 => {
            if let Some(id) = pick(members, arg) {
                members.remove(id);
            }
        }
        3 | 4 => {
            if let Some(id) = pick(members, arg) {
                if let Some(mut m) = members.get_mut(id) {
                    if op % 2 == 0 {
                        m.hp = m.hp.wrapping_add(u16::from(arg) + 1);
                    } else {
                        m.rank = (arg >> 4) % 16;
                    }
                }
            }
        }
        5 => members.sort_by(|a, b| b.hp.cmp(&a.hp)),
        _ => {}
    }
}

/// An item type the targets know how to make and change.
pub trait Fixture: Replicate + Clone + PartialEq + Debug + Send + Sync + 'static {
    /// A new item.
    fn make(seed: u8) -> Self;
    /// One change chosen by `op` (some change nothing, some only the
    /// arrays inside).
    fn edit(&mut self, op: u8, arg: u8);
    /// This type's genuine message history, built once.
    fn history() -> &'static History<Self>;
}

impl Fixture for Unit {
    fn make(seed: u8) -> Self {
        Unit {
            hp: u16::from(seed) * 7,
            team: seed % 3,
            rank: seed % 16,
            alive: seed % 2 == 0,
            cache: u32::from(seed),
        }
    }

    fn edit(&mut self, op: u8, arg: u8) {
        match op % 5 {
            0 => self.hp = u16::from(arg) << 4 | u16::from(op),
            1 => self.team = arg,
            2 => self.rank = arg % 16,
            3 => self.alive = !self.alive,
            _ => self.cache = u32::from(arg),
        }
    }

    fn history() -> &'static History<Self> {
        static CELL: OnceLock<History<Unit>> = OnceLock::new();
        CELL.get_or_init(History::build)
    }
}

impl Fixture for Spawned {
    fn make(seed: u8) -> Self {
        let mut spawned = Spawned::default();
        match seed % 4 {
            0 => {}
            1 => spawned.at.x = seed as i8,
            2 => {
                spawned.at.y = -(seed as i8);
                spawned.name = word(seed);
            }
            _ => {
                spawned.hp = seed;
                spawned.at = Spot { x: 1, y: 2 };
                spawned.name = word(seed);
                spawned.level = seed % 8;
            }
        }
        spawned
    }

    fn edit(&mut self, op: u8, arg: u8) {
        match op % 6 {
            0 => self.hp = if arg % 2 == 0 { 100 } else { arg },
            1 => self.at.x = arg as i8,
            2 => self.at.y = if arg % 2 == 0 { 0 } else { arg as i8 },
            3 => {
                self.name = if arg % 2 == 0 {
                    "imp".to_owned()
                } else {
                    word(arg)
                }
            }
            4 => self.level = arg % 8,
            _ => self.cache = u32::from(arg),
        }
    }

    fn history() -> &'static History<Self> {
        static CELL: OnceLock<History<Spawned>> = OnceLock::new();
        CELL.get_or_init(History::build)
    }
}

impl Fixture for Thing {
    fn make(seed: u8) -> Self {
        Thing {
            hp: u16::from(seed),
            shape: Shape::Dot,
            score: u32::from(seed) * 1000,
        }
    }

    fn edit(&mut self, op: u8, arg: u8) {
        match op % 6 {
            0 => self.hp = u16::from(arg) * 5,
            1 => self.score = u32::from(arg).pow(3),
            2 => {
                self.shape = match arg % 4 {
                    0 => Shape::Dot,
                    1 => Shape::Line {
                        len: u16::from(arg),
                    },
                    2 => Shape::Rect { w: arg, h: !arg },
                    _ => Shape::Label(word(arg)),
                }
            }
            3 => match &mut self.shape {
                Shape::Dot => {}
                Shape::Line { len } => *len = len.wrapping_add(u16::from(arg)),
                Shape::Rect { w, h } => {
                    if arg % 2 == 0 {
                        *w = arg;
                    } else {
                        *h = arg;
                    }
                }
                Shape::Label(text) => *text = word(arg),
            },
            4 => self.hp = self.hp.wrapping_add(1),
            _ => {} // written through the guard, unchanged
        }
    }

    fn history() -> &'static History<Self> {
        static CELL: OnceLock<History<Thing>> = OnceLock::new();
        CELL.get_or_init(History::build)
    }
}

impl Fixture for Named {
    fn make(seed: u8) -> Self {
        Named {
            name: word(seed),
            tags: vec![seed; usize::from(seed % 3)],
            pos: (seed % 2 == 1).then_some((i16::from(seed), -i16::from(seed))),
            glyph: char::from(b'A' + seed % 26),
            x: f32::from(seed),
            speed: f32::from(seed) * 0.5,
            path: [seed, 0, !seed],
        }
    }

    fn edit(&mut self, op: u8, arg: u8) {
        match op % 7 {
            0 => self.name = word(arg),
            1 => {
                if self.tags.len() < 4 {
                    self.tags.push(arg);
                } else {
                    self.tags.clear();
                }
            }
            2 => {
                self.pos = match self.pos {
                    Some(_) if arg % 3 == 0 => None,
                    _ => Some((i16::from(arg), 7)),
                }
            }
            3 => self.glyph = ['é', '∑', 'x', '🦀'][usize::from(arg % 4)],
            4 => self.x = f32::from(arg),
            5 => self.speed = -f32::from(arg),
            _ => self.path[usize::from(arg % 3)] = arg,
        }
    }

    fn history() -> &'static History<Self> {
        static CELL: OnceLock<History<Named>> = OnceLock::new();
        CELL.get_or_init(History::build)
    }
}

impl Fixture for Squad {
    fn make(seed: u8) -> Self {
        let mut members = FastArray::new();
        for n in 0..seed % 4 {
            members.push(member(seed.wrapping_add(n)));
        }
        Squad { tag: seed, members }
    }

    fn edit(&mut self, op: u8, arg: u8) {
        match op % 8 {
            0 => self.tag = arg,
            7 => self.members.clear(),
            _ => edit_members(&mut self.members, op.wrapping_add(op / 8), arg),
        }
    }

    fn history() -> &'static History<Self> {
        static CELL: OnceLock<History<Squad>> = OnceLock::new();
        CELL.get_or_init(History::build)
    }
}

impl Fixture for Platoon {
    fn make(seed: u8) -> Self {
        let mut platoon = Platoon {
            name: word(seed),
            guards: FastArray::new(),
            squads: FastArray::new(),
        };
        for n in 0..seed % 3 {
            platoon.guards.push(member(n));
            platoon.squads.push(Squad::make(seed.wrapping_add(n)));
        }
        platoon
    }

    fn edit(&mut self, op: u8, arg: u8) {
        match op % 6 {
            0 => self.name = word(arg),
            1 | 2 => edit_members(&mut self.guards, op / 6, arg),
            3 if self.squads.len() < MAX_SQUADS => {
                self.squads.push(Squad::make(arg));
            }
            4 => {
                if let Some(id) = pick(&self.squads, arg) {
                    self.squads.remove(id);
                }
            }
            _ => {
                if let Some(id) = pick(&self.squads, arg) {
                    if let Some(mut squad) = self.squads.get_mut(id) {
                        squad.edit(op / 6, arg.rotate_left(3));
                    }
                }
            }
        }
    }

    fn history() -> &'static History<Self> {
        static CELL: OnceLock<History<Platoon>> = OnceLock::new();
        CELL.get_or_init(History::build)
    }
}

/// A replicated object type the `object` target knows how to change.
pub trait ObjectFixture:
    Replicate + Clone + Default + PartialEq + Debug + Send + Sync + 'static
{
    /// The changes of step `step` of the genuine session.
    fn step(&mut self, step: u8);
    /// This type's genuine messages, built once.
    fn messages() -> &'static [Vec<u8>];
}

impl ObjectFixture for World {
    fn step(&mut self, step: u8) {
        match step % 6 {
            0 => self.round += 1,
            1 => self.clock = u32::from(step) * 1000,
            2 => {
                self.squads.push(Squad::make(step));
            }
            3 => {
                if let Some(id) = pick(&self.squads, step) {
                    if let Some(mut squad) = self.squads.get_mut(id) {
                        squad.edit(step, step.wrapping_mul(7));
                    }
                }
            }
            4 => {
                self.units.push(Unit::make(step));
            }
            _ => {
                if let Some(id) = pick(&self.units, step) {
                    if step % 4 == 1 {
                        self.units.remove(id);
                    } else if let Some(mut unit) = self.units.get_mut(id) {
                        unit.edit(step, step);
                    }
                }
            }
        }
    }

    fn messages() -> &'static [Vec<u8>] {
        static CELL: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
        CELL.get_or_init(object_messages::<World>)
    }
}

impl ObjectFixture for Lobby {
    fn step(&mut self, step: u8) {
        match step % 4 {
            0 => self.host = (step % 8 != 0).then(|| word(step)),
            1 => {
                self.players.push(Named::make(step));
            }
            2 => {
                if let Some(id) = pick(&self.players, step) {
                    if let Some(mut player) = self.players.get_mut(id) {
                        player.edit(step, step);
                    }
                }
            }
            _ => {
                if let Some(id) = pick(&self.players, step) {
                    self.players.remove(id);
                }
            }
        }
    }

    fn messages() -> &'static [Vec<u8>] {
        static CELL: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
        CELL.get_or_init(object_messages::<Lobby>)
    }
}
