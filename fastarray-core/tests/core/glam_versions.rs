#![cfg(all(feature = "glam-0_32", feature = "glam-0_33", feature = "glam-0_34"))]
//! glam at the versions Bevy uses: features `glam-0_32` (Bevy 0.19),
//! `glam-0_33` (Bevy 0.20) and `glam-0_34` (`glam`), on together here. Each
//! version's vectors and quaternions replicate plain, quantized and in
//! smallest three; the versions encode alike (same bits, same schema), so
//! a server and a client on different glam versions understand each other.

use fastarray_core::{BitCodec, BitReader, BitWriter, FastArray, Replicate, SendState};

/// A unit of each glam version: the same struct, in a module per version.
macro_rules! unit_of {
    ($module:ident, $glam:ident) => {
        mod $module {
            use fastarray_core::$glam::{DVec2, Quat, Vec3, Vec3A};

            #[derive(fastarray_derive::Replicate, Clone, Debug, PartialEq)]
            #[replicate(crate = "fastarray_core")]
            pub struct Unit {
                pub exact: Vec3,
                #[replicate(quantize(min = -512.0, max = 512.0, bits = 16))]
                pub position: Vec3A,
                #[replicate(quantize(min = [-1.0, 0.0], max = [1.0, 10.0], bits = 12))]
                pub heading: DVec2,
                #[replicate(quantize(bits = 10))]
                pub rotation: Quat,
            }

            pub fn unit(x: f32) -> Unit {
                Unit {
                    exact: Vec3::new(x, -0.0, 1e-7),
                    position: Vec3A::new(x * 10.0, 3.25, -100.0),
                    heading: DVec2::new(0.5, 2.0),
                    rotation: Quat::from_rotation_y(x),
                }
            }

            pub fn turn(unit: &mut Unit) {
                unit.rotation *= Quat::from_rotation_x(0.5);
            }
        }
    };
}

unit_of!(v0_32, glam_0_32);
unit_of!(v0_33, glam_0_33);
unit_of!(v0_34, glam);

fn bits<T: BitCodec>(value: &T) -> Vec<u8> {
    let mut bytes = Vec::new();
    value.encode(&mut BitWriter::new(&mut bytes)).unwrap();
    bytes
}

/// One server, one client of `T`: a delta after an add, then a turn.
fn replicate<T: Replicate + Clone + PartialEq + std::fmt::Debug>(
    unit: T,
    turn: fn(&mut T),
) -> FastArray<T> {
    let mut server = FastArray::new();
    let id = server.push(unit);
    server.commit();
    let (mut conn, mut client) = (SendState::new(), FastArray::<T>::mirror());
    for packet in 0..2 {
        if packet == 1 {
            turn(&mut server.get_mut(id).unwrap());
            let changes = server.commit();
            assert_eq!(changes.changed().len(), 1, "a turn is a change");
        }
        let mut bytes = Vec::new();
        server.write_delta(&mut conn, packet, &mut bytes).unwrap();
        client.apply_delta(&bytes, &mut ()).unwrap();
        conn.on_ack(packet);
    }
    assert!(client.wire_eq(&server));
    client
}

#[test]
fn every_glam_version_replicates() {
    replicate(v0_32::unit(1.0), v0_32::turn);
    replicate(v0_33::unit(1.0), v0_33::turn);
    replicate(v0_34::unit(1.0), v0_34::turn);
}

#[test]
fn the_versions_encode_alike() {
    for x in [0.0, 1.0, -3.5] {
        let old = bits(&v0_32::unit(x));
        assert_eq!(old, bits(&v0_33::unit(x)));
        assert_eq!(old, bits(&v0_34::unit(x)));
    }
    let hash = <v0_32::Unit as Replicate>::SCHEMA_HASH;
    assert_eq!(hash, <v0_33::Unit as Replicate>::SCHEMA_HASH);
    assert_eq!(hash, <v0_34::Unit as Replicate>::SCHEMA_HASH);
    // So a Bevy 0.19 server's value reads as a Bevy 0.20 client's.
    let sent = v0_32::unit(2.0);
    let bytes = bits(&sent);
    let read = v0_33::Unit::decode(&mut BitReader::new(&bytes)).unwrap();
    assert_eq!(bits(&read), bytes);
    assert_eq!(read.exact.to_array(), sent.exact.to_array());
}
