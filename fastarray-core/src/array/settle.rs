//! Whether a connection has settled: its client holds everything the
//! array committed, every packet that carried it acknowledged.

use super::FastArray;
use crate::history::History;
use crate::replicate::Replicate;
use crate::send_state::SendState;

impl<T: Replicate> FastArray<T> {
    /// Whether `state`'s client holds what this array holds: nothing is
    /// uncommitted, every change of every [`commit`](Self::commit) is
    /// written, and every packet that carried one is acknowledged (arrays
    /// inside items included). Then the mirror that applied those packets
    /// equals this array on the wire ([`wire_eq`](Self::wire_eq)).
    ///
    /// It is false for a new [`SendState`] while the array holds items,
    /// after a change until it is committed and a write carries it, after
    /// a write until its packet is acknowledged, and after a loss until
    /// the repair is written and acknowledged. Commits that change nothing
    /// do not unsettle a connection.
    ///
    /// The question needs the array: a [`SendState`] alone does not know
    /// what was committed since its last write. Costs O(1) for items
    /// without `#[replicate(array)]` fields, else O(items with arrays the
    /// client holds).
    ///
    /// ```
    /// use fastarray_core::{FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { hp: u16 }
    ///
    /// let mut server = FastArray::new();
    /// server.push(Unit { hp: 1 });
    /// server.commit();
    /// let (mut state, mut client) = (SendState::new(), FastArray::mirror());
    /// assert!(!server.is_settled(&state)); // the item is not written yet
    ///
    /// // Write until settled: every packet lost but the third.
    /// let mut packet = 0;
    /// while !server.is_settled(&state) {
    ///     let mut bytes = Vec::new();
    ///     server.write_delta(&mut state, packet, &mut bytes).unwrap();
    ///     if packet == 2 {
    ///         client.apply_delta(&bytes, &mut ()).unwrap();
    ///         state.on_ack(packet);
    ///     } else {
    ///         state.on_loss(packet);
    ///     }
    ///     packet += 1;
    /// }
    /// assert_eq!(packet, 3);
    /// assert!(client.wire_eq(&server));
    /// ```
    pub fn is_settled(&self, state: &SendState) -> bool {
        let history = self.sender.as_deref().map(|sender| &sender.history);
        let last_change = history.map_or(0, History::last_change);
        !self.has_uncommitted_work()
            && state.has_delivered(last_change)
            && self.inner_settled(state)
    }

    /// Whether the arrays inside the items of `state`'s client are settled
    /// on their own connection states. (Their work also keeps the outer
    /// connection busy — a loss of their delta makes the item due again —
    /// so this holds whenever the outer connection has delivered; it is
    /// checked all the same, as the inner states are what carry it.)
    fn inner_settled(&self, state: &SendState) -> bool {
        if T::ARRAY_FIELDS == 0 {
            return true;
        }
        state.each_inner().all(|(id, states)| {
            // An item gone from the array is the outer connection's work;
            // a frozen copy's arrays catch up when it comes back.
            let Some(item) = self.get(id).filter(|_| !state.is_frozen(id)) else {
                return true;
            };
            let mut states = states.iter();
            let mut settled = true;
            item.for_each_array(&mut |array| {
                if let Some(inner) = states.next() {
                    settled &= array.is_settled_for(inner);
                }
            });
            settled
        })
    }
}
