//! The pre-images guards make on an item's first write in a frame, and
//! which commit diffs it against: reused from frame to frame where the
//! derive can copy each field into an earlier one (`capture_into`), a
//! clone where it cannot. Either way the changes found are the same.
//! (That reuse allocates nothing is `tests/allocations.rs`.) Commit brings
//! each buffer up to its item's committed value, so an item written again
//! through the same buffer next frame costs no copy at all.

use std::collections::HashMap;

use fastarray::{FastArray, FieldMask, Replicate, ReplicationId};
use fastarray_testkit::counted::{self, Counted};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Not `Clone`: an item holding it cannot copy its fields one by one.
#[derive(Replicate, Debug, PartialEq)]
struct Tag {
    code: u16,
}

/// `Clone` by hand, over a field that is not.
#[derive(Replicate, Debug, PartialEq)]
struct Tagged {
    tag: Tag,
    name: String,
}

impl Clone for Tagged {
    fn clone(&self) -> Self {
        Self {
            tag: Tag {
                code: self.tag.code,
            },
            name: self.name.clone(),
        }
    }
}

/// Generic: whether `T` is `Clone` is not known where the derive expands.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Pair<T: fastarray::BitCodec> {
    left: T,
    right: T,
    #[replicate(skip)]
    local: u32,
}

/// Every field `Clone`: copied field by field into reused buffers.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Named {
    name: String,
    tags: Vec<u8>,
    hp: u8,
}

#[test]
fn the_derive_copies_into_a_buffer_only_when_every_field_is_clone() {
    let mut into = Named {
        name: String::with_capacity(64),
        tags: Vec::new(),
        hp: 0,
    };
    let buffer = into.name.as_ptr();
    let value = Named {
        name: "ann".into(),
        tags: vec![1, 2],
        hp: 9,
    };
    assert!(value.capture_into(&mut into));
    assert_eq!(into, value);
    assert_eq!(into.name.as_ptr(), buffer, "the name's buffer is reused");

    let tagged = Tagged {
        tag: Tag { code: 1 },
        name: "b".into(),
    };
    assert!(!tagged.capture_into(&mut tagged.clone()));
    let pair = Pair {
        left: 1u8,
        right: 2,
        local: 0,
    };
    assert!(!pair.capture_into(&mut pair.clone()));
}

/// Drives `frames` of writes through `get_mut` and `iter_mut` in turn and
/// checks each commit names exactly the items and fields written with a
/// new value, whichever buffers earlier frames left.
fn check_changes<T: Replicate + Clone + PartialEq + std::fmt::Debug>(
    make: impl Fn(u32) -> T,
    write: impl Fn(&mut T, u32),
    field: u32,
) {
    let mut array = FastArray::new();
    let ids: Vec<ReplicationId> = (0..40).map(|n| array.push(make(n))).collect();
    array.commit();
    for frame in 1..=12u32 {
        // A different subset each frame, so buffers move between items.
        let chosen: Vec<usize> = (0..ids.len())
            .filter(|n| (n * 7 + frame as usize) % (2 + frame as usize % 3) == 0)
            .collect();
        if frame % 2 == 0 {
            for &n in &chosen {
                write(&mut array.get_mut(ids[n]).unwrap(), frame);
            }
        } else {
            for (n, (_, mut item)) in array.iter_mut().enumerate() {
                if chosen.contains(&n) {
                    write(&mut item, frame);
                }
            }
        }
        // A write of the value already held is not a change.
        let unchanged = ids[(frame as usize * 5) % ids.len()];
        {
            let mut item = array.get_mut(unchanged).unwrap();
            let same = (*item).clone();
            *item = same;
        }
        let expected: Vec<_> = chosen
            .iter()
            .map(|&n| (ids[n], FieldMask::single(field)))
            .collect();
        assert_eq!(array.commit().changed(), expected, "frame {frame}");
    }
}

#[test]
fn reused_pre_images_find_the_same_changes_as_clones() {
    check_changes(
        |n| Named {
            name: format!("agent{n}"),
            tags: vec![n as u8],
            hp: 1,
        },
        |item, frame| item.name = format!("agent-{frame}-{}", item.name.len()),
        0,
    );
    check_changes(
        |n| Tagged {
            tag: Tag { code: n as u16 },
            name: "t".into(),
        },
        |item, frame| item.name = "t".repeat(frame as usize + 1),
        1,
    );
    check_changes(
        |n| Pair {
            left: n,
            right: 0u32,
            local: 0,
        },
        |item, frame| {
            item.right = frame;
            item.local += 1;
        },
        1,
    );
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Mover {
    step: u32,
    tag: Counted,
}

#[test]
fn items_written_again_through_the_same_buffers_are_not_copied_until_a_field_changes() {
    let mut array = FastArray::new();
    let ids: Vec<_> = (0..50)
        .map(|n| {
            array.push(Mover {
                step: 0,
                tag: Counted(n),
            })
        })
        .collect();
    array.commit();
    let moved: Vec<_> = ids.iter().map(|&id| (id, FieldMask::single(0))).collect();
    // The first frame makes the buffers: one copy of each tag.
    counted::take_copies();
    for (_, mut item) in array.iter_mut() {
        item.step += 1;
    }
    assert_eq!(array.commit().changed(), moved);
    assert_eq!(counted::take_copies(), 50);
    // The same loop again: every buffer already holds its item.
    for frame in 2..6 {
        counted::take_copies();
        for (_, mut item) in array.iter_mut() {
            item.step += 1;
        }
        assert_eq!(array.commit().changed(), moved);
        assert_eq!(counted::take_copies(), 0, "frame {frame}");
    }
    // `get_mut` in the same order takes the same buffers.
    counted::take_copies();
    for &id in &ids {
        array.get_mut(id).unwrap().step += 1;
    }
    array.commit();
    assert_eq!(counted::take_copies(), 0);
    // A changed tag is copied once, by the commit that finds it changed.
    counted::take_copies();
    for (n, (_, mut item)) in array.iter_mut().enumerate() {
        if n % 5 == 0 {
            item.tag.0 += 100;
        }
    }
    let expected: Vec<_> = ids
        .iter()
        .step_by(5)
        .map(|&id| (id, FieldMask::single(1)))
        .collect();
    assert_eq!(array.commit().changed(), expected);
    assert_eq!(counted::take_copies(), 10);
    // Another order meets other items' buffers: each is copied again.
    counted::take_copies();
    for &id in ids.iter().rev() {
        array.get_mut(id).unwrap().step += 1;
    }
    assert_eq!(array.commit().changed().len(), 50);
    assert_eq!(counted::take_copies(), 50);
}

/// An item of the model test: a plain field, a heap one, a quantized one.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Unit {
    hp: u8,
    name: String,
    #[replicate(quantize(min = -10.0, max = 10.0, bits = 8))]
    x: f32,
}

fn unit(rng: &mut ChaCha8Rng) -> Unit {
    Unit {
        hp: rng.random_range(0..4),
        name: ["a", "bb", "ccc"][rng.random_range(0..3)].to_string(),
        x: rng.random_range(-10.0..10.0),
    }
}

/// A write: often nothing new (the same value, or a change undone), a
/// drift below the quantization's step, or a new value.
fn touch(rng: &mut ChaCha8Rng, item: &mut Unit) {
    match rng.random_range(0..6) {
        0 => {}
        1 => item.hp = rng.random_range(0..4),
        2 => item.name = ["a", "bb", "ccc"][rng.random_range(0..3)].to_string(),
        3 => item.x += rng.random_range(-0.02..0.02),
        4 => {
            let old = item.hp;
            item.hp = old.wrapping_add(1);
            item.hp = old;
        }
        _ => *item = unit(rng),
    }
}

/// Flattened leaves: a field's copy covers every leaf it holds.
#[derive(Replicate, Clone, Debug, PartialEq)]
struct Pose {
    x: i16,
    y: i16,
}

#[derive(Replicate, Clone, Debug, PartialEq)]
enum Mode {
    Idle,
    Busy(u8),
}

#[derive(Replicate, Clone, Debug, PartialEq)]
struct Walker {
    #[replicate(flatten)]
    pose: Pose,
    #[replicate(flatten)]
    mode: Mode,
    tag: String,
}

fn walker(rng: &mut ChaCha8Rng) -> Walker {
    Walker {
        pose: Pose {
            x: rng.random_range(0..3),
            y: rng.random_range(0..3),
        },
        mode: match rng.random_range(0..3) {
            0 => Mode::Idle,
            n => Mode::Busy(n),
        },
        tag: "w".repeat(rng.random_range(1..3)),
    }
}

fn step(rng: &mut ChaCha8Rng, item: &mut Walker) {
    match rng.random_range(0..5) {
        0 => {}
        1 => item.pose.x = rng.random_range(0..3),
        2 => item.pose.y = rng.random_range(0..3),
        3 => item.mode = walker(rng).mode,
        _ => *item = walker(rng),
    }
}

/// Drives random frames of writes (loops in order, the buffers' fast
/// case; loops twice in a frame; lookups in another order) with the array
/// reshaped between them, and checks each commit against a diff of every
/// item with its value at the last commit.
fn check_against_snapshots<T: Replicate + Clone + PartialEq + std::fmt::Debug>(
    make: fn(&mut ChaCha8Rng) -> T,
    touch: fn(&mut ChaCha8Rng, &mut T),
    order: fn(&T, &T) -> std::cmp::Ordering,
) {
    for seed in 0..12 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut array = FastArray::new();
        for _ in 0..30 {
            array.push(make(&mut rng));
        }
        array.commit();
        let mut last: HashMap<ReplicationId, T> =
            array.iter().map(|(id, item)| (id, item.clone())).collect();
        for frame in 0..80 {
            for _ in 0..rng.random_range(1..4) {
                match rng.random_range(0..7) {
                    0 | 1 => {
                        let odds = rng.random_range(0.2..1.0);
                        for (_, mut item) in array.iter_mut() {
                            if rng.random_bool(odds) {
                                touch(&mut rng, &mut item);
                            }
                        }
                    }
                    2 => {
                        let mut ids: Vec<_> = array.ids().collect();
                        if rng.random_bool(0.5) {
                            ids.reverse();
                        }
                        for id in ids {
                            if rng.random_bool(0.5) {
                                touch(&mut rng, &mut array.get_mut(id).unwrap());
                            }
                        }
                    }
                    3 => {
                        if let Some(id) = array.ids().nth(rng.random_range(0..array.len().max(1))) {
                            array.remove(id);
                        }
                    }
                    4 => {
                        array.push(make(&mut rng));
                    }
                    5 => {
                        let ids: Vec<_> = array.ids().collect();
                        if ids.len() > 1 {
                            array.swap(ids[0], ids[ids.len() - 1]);
                        }
                    }
                    _ => array.sort_by(order),
                }
            }
            let mut expected: Vec<_> = array
                .iter()
                .filter_map(|(id, item)| {
                    let mask = item.diff(last.get(&id)?);
                    (!mask.is_empty()).then_some((id, mask))
                })
                .collect();
            expected.sort_by_key(|&(id, _)| id);
            assert_eq!(
                array.commit().changed(),
                expected,
                "seed {seed}, frame {frame}"
            );
            last = array.iter().map(|(id, item)| (id, item.clone())).collect();
        }
    }
}

#[test]
fn commits_name_exactly_the_fields_that_differ_from_the_last_commit() {
    check_against_snapshots(unit, touch, |a, b| a.hp.cmp(&b.hp));
    check_against_snapshots(walker, step, |a, b| a.pose.x.cmp(&b.pose.x));
}
