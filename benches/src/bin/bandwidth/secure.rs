//! What protecting a connection's packets costs: the bytes a session adds
//! to each packet (measured by sealing one) and the CPU of sealing and
//! opening one (criterion's `seal/*` and `open/*`, `benches/secure.rs`).

use std::fmt::Write as _;

use fastarray::{AckHeader, Protection};
use fastarray_bench::secure::{SIZES, added_bytes};

use crate::format::time;
use crate::report::Results;

impl Results {
    /// The packet-protection section of `BENCHMARKS.md`.
    pub fn secure_markdown(&self, md: &mut String) {
        let _ = writeln!(
            md,
            "## Packet protection\n\n\
             The bytes each mode adds to a packet, measured by sealing one in a session from a real \
             handshake, and the CPU to seal a packet (after writing it) and to open one (before reading \
             it), criterion medians of `cargo bench -p fastarray-bench --bench secure`, for a {}-byte \
             reply and a {}-byte packet. `plain` is the unprotected path's share: appending the bytes, \
             reading the {}-byte ack header.\n\n\
             | mode | bytes added | with the ack header | seal {0} B | open {0} B | seal {1} B | open {1} B |\n\
             |---|---|---|---|---|---|---|",
            SIZES[0],
            SIZES[1],
            AckHeader::BYTES,
        );
        for (name, protection) in [
            ("plain", None),
            ("token", Some(Protection::Token)),
            ("sealed", Some(Protection::Encrypted)),
        ] {
            let added = added_bytes(protection, SIZES[0]);
            let cpu = |op: &str, size: usize| {
                self.cpu(&format!("{op}/{name}/{size}"))
                    .map_or_else(|| "not measured".to_string(), time)
            };
            let _ = writeln!(
                md,
                "| {name} | {added} | {} | {} | {} | {} | {} |",
                added + AckHeader::BYTES,
                cpu("seal", SIZES[0]),
                cpu("open", SIZES[0]),
                cpu("seal", SIZES[1]),
                cpu("open", SIZES[1]),
            );
        }
        let _ = writeln!(
            md,
            "\nToken mode refuses what an attacker off the path sends; sealed mode (ChaCha20-Poly1305, \
             feature `encryption`) also what anyone without the keys sends or changes, and hides the \
             content (`WIRE.md`, \"Secure connections\").\n"
        );
    }
}
