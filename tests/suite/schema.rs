//! The schema handshake refuses a peer built with a different definition.

use fastarray::{FastArray, SchemaMismatch};

mod server {
    use fastarray::Replicate;
    #[derive(Replicate)]
    pub struct Agent {
        pub hp: u16,
        pub name: String,
        #[replicate(quantize(min = 0, max = 100, bits = 10))]
        pub speed: f32,
    }
}

mod same {
    use fastarray::Replicate;
    #[derive(Replicate)]
    pub struct Agent {
        pub hp: u16,
        pub name: String,
        #[replicate(quantize(min = 0, max = 100, bits = 10))]
        pub speed: f32,
        #[replicate(skip)]
        #[allow(dead_code)] // only its (absent) part in the schema matters
        pub local_only: Vec<u8>, // skipped fields are not part of the schema
    }
}

mod reordered {
    use fastarray::Replicate;
    #[derive(Replicate)]
    pub struct Agent {
        pub name: String,
        pub hp: u16,
        #[replicate(quantize(min = 0, max = 100, bits = 10))]
        pub speed: f32,
    }
}

mod retyped {
    use fastarray::Replicate;
    #[derive(Replicate)]
    pub struct Agent {
        pub hp: u32,
        pub name: String,
        #[replicate(quantize(min = 0, max = 100, bits = 10))]
        pub speed: f32,
    }
}

mod requantized {
    use fastarray::Replicate;
    #[derive(Replicate)]
    pub struct Agent {
        pub hp: u16,
        pub name: String,
        #[replicate(quantize(min = 0, max = 100, bits = 12))]
        pub speed: f32,
    }
}

mod renamed {
    use fastarray::Replicate;
    #[derive(Replicate)]
    pub struct Agent {
        pub health: u16,
        pub name: String,
        #[replicate(quantize(min = 0, max = 100, bits = 10))]
        pub speed: f32,
    }
}

#[test]
fn the_same_definition_is_accepted() {
    let hello = FastArray::<server::Agent>::schema_handshake();
    assert_eq!(FastArray::<server::Agent>::check_schema(&hello), Ok(()));
    assert_eq!(FastArray::<same::Agent>::check_schema(&hello), Ok(()));
}

fn refused<F: Fn(&[u8]) -> Result<(), SchemaMismatch>>(check: F) -> SchemaMismatch {
    check(&FastArray::<server::Agent>::schema_handshake()).unwrap_err()
}

#[test]
fn a_reordered_retyped_requantized_or_renamed_field_is_refused_by_name() {
    for error in [
        refused(FastArray::<reordered::Agent>::check_schema),
        refused(FastArray::<retyped::Agent>::check_schema),
        refused(FastArray::<requantized::Agent>::check_schema),
        refused(FastArray::<renamed::Agent>::check_schema),
    ] {
        match &error {
            SchemaMismatch::Different {
                local,
                remote,
                local_hash,
                remote_hash,
            } => {
                assert_eq!((*local, remote.as_str()), ("Agent", "Agent"));
                assert_ne!(local_hash, remote_hash);
            }
            other => panic!("expected a mismatch, got {other:?}"),
        }
        assert!(error.to_string().contains("`Agent`"), "{error}");
    }
}

#[test]
fn a_malformed_handshake_is_refused_without_panicking() {
    let hello = FastArray::<server::Agent>::schema_handshake();
    for len in 0..hello.len() {
        assert!(matches!(
            FastArray::<server::Agent>::check_schema(&hello[..len]),
            Err(SchemaMismatch::Malformed { local: "Agent", .. })
        ));
    }
    let mut longer = hello.clone();
    longer.push(1);
    assert!(FastArray::<server::Agent>::check_schema(&longer).is_err());
    assert!(FastArray::<server::Agent>::check_schema(&[0xff; 40]).is_err());
}
