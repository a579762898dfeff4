//! What `owner_only`, `skip_owner` and `initial_only` generate: the masks
//! of the fields (all of a flattened field's leaves, or its type's own),
//! and whole values that say which fields they carry.

use fastarray_core::{FieldMask, Replicate};
use fastarray_derive::Replicate;

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
#[replicate(crate = "fastarray_core")]
struct Stats {
    #[replicate(owner_only)]
    ammo: u8,
    hp: u8,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
#[replicate(crate = "fastarray_core")]
struct Player {
    #[replicate(skip_owner)]
    position: [f32; 2],
    #[replicate(initial_only)]
    name: String,
    #[replicate(flatten)]
    stats: Stats,
    #[replicate(flatten, owner_only)]
    quest: Stats,
    #[replicate(owner_only, initial_only)]
    secret: u32,
}

#[derive(Replicate, Clone, Debug, PartialEq, Default)]
#[replicate(crate = "fastarray_core")]
struct Plain {
    a: u8,
}

#[test]
fn the_masks_name_the_marked_leaves() {
    // Leaves: position 0, name 1, stats.ammo 2, stats.hp 3, quest.ammo 4,
    // quest.hp 5, secret 6.
    let bits = |list: &[u32]| list.iter().fold(FieldMask::EMPTY, |m, &i| m.with(i));
    assert_eq!(Stats::OWNER_ONLY, bits(&[0]));
    assert_eq!(Player::OWNER_ONLY, bits(&[2, 4, 5, 6]));
    assert_eq!(Player::SKIP_OWNER, bits(&[0]));
    assert_eq!(Player::INITIAL_ONLY, bits(&[1, 6]));
    const { assert!(Player::WITHHOLDS && Stats::WITHHOLDS && !Plain::WITHHOLDS) };
    assert_eq!(Plain::OWNER_ONLY, FieldMask::EMPTY);
}
