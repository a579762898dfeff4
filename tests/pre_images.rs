//! The pre-images guards make on an item's first write in a frame, and
//! which commit diffs it against: reused from frame to frame where the
//! derive can copy each field into an earlier one (`capture_into`), a
//! clone where it cannot. Either way the changes found are the same.
//! (That reuse allocates nothing is `tests/allocations.rs`.)

use fastarray::{FastArray, FieldMask, Replicate, ReplicationId};

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
