//! `#[replicate(serde)]` fields, replicated end to end.
#![cfg(feature = "serde")]

use fastarray_core::{BitCodec, BitReader, BitWriter, FastArray, FieldMask, Replicate, SendState};
use fastarray_derive::Replicate;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
enum Slot {
    Empty,
    Weapon { name: String, ammo: u16 },
    Charm(u8),
}

#[derive(Replicate, Clone, Debug, PartialEq)]
#[replicate(crate = "fastarray_core")]
struct Player {
    hp: u8,
    #[replicate(serde)]
    loadout: Vec<Slot>,
}

#[test]
fn serde_fields_round_trip_and_diff() {
    let player = Player {
        hp: 3,
        loadout: vec![
            Slot::Empty,
            Slot::Weapon {
                name: "bow".into(),
                ammo: 12,
            },
            Slot::Charm(7),
        ],
    };
    let mut bytes = Vec::new();
    let mut writer = BitWriter::new(&mut bytes);
    player.encode(&mut writer).unwrap();
    let bits = writer.finish();
    let mut reader = BitReader::new(&bytes);
    assert_eq!(Player::decode(&mut reader).unwrap(), player);
    assert_eq!(reader.bit_offset(), bits);

    let mut changed = player.clone();
    changed.loadout[2] = Slot::Charm(8);
    assert_eq!(changed.diff(&player), FieldMask::single(1));
}

#[test]
fn serde_fields_replicate_as_changed_fields() {
    let mut server = FastArray::new();
    let id = server.push(Player {
        hp: 1,
        loadout: vec![Slot::Empty],
    });
    server.commit();
    let mut conn = SendState::new();
    let mut client = FastArray::new();
    for packet in 0..3u32 {
        if packet > 0 {
            server
                .get_mut(id)
                .unwrap()
                .loadout
                .push(Slot::Charm(packet as u8));
            server.commit();
        }
        let mut bytes = Vec::new();
        let stats = server.write_delta(&mut conn, packet, &mut bytes).unwrap();
        assert_eq!(stats.changed, usize::from(packet > 0));
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
    }
    assert_eq!(client, server);
}
