//! Comparing a mirror with its server as the wire sees them
//! ([`FastArray::wire_eq`]), since quantized fields make `==` fail.

use super::FastArray;
use crate::replicate::Replicate;

impl<T: Replicate> FastArray<T> {
    /// Whether both arrays hold the same ids, each item equal *as the wire
    /// sees it* ([`Replicate::wire_eq`]): what a mirror that applied every
    /// delta holds of its server. Order does not matter.
    ///
    /// Use it, not `==`, to check a mirror against its server when items
    /// have `#[replicate(quantize(...))]` or `#[replicate(skip)]` fields:
    /// the mirror holds each quantized value as the step it was sent as,
    /// and its own value in each skipped field, so `==` fails although
    /// nothing was lost. Arrays inside items are compared the same way, by
    /// id. The name says what is compared: the encodings, not the values.
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Ship {
    ///     #[replicate(quantize(min = -1000.0, max = 1000.0, bits = 16))]
    ///     x: f32,
    /// }
    ///
    /// let mut server = FastArray::new();
    /// let id = server.push(Ship { x: 12.345 });
    /// server.commit();
    /// let (mut state, mut client, mut packet) = (SendState::new(), FastArray::mirror(), Vec::new());
    /// server.write_delta(&mut state, 0, &mut packet).unwrap();
    /// client.apply_delta(&packet, &mut ()).unwrap();
    ///
    /// assert_ne!(client, server); // 12.344549 on the client: the nearest step
    /// assert!(client.wire_eq(&server));
    /// # assert!((client.get(id).unwrap().x - 12.345).abs() < 0.016);
    /// ```
    pub fn wire_eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(id, item)| other.get(id).is_some_and(|theirs| item.wire_eq(theirs)))
    }
}
