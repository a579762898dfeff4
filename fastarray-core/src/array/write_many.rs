//! [`FastArray::write_deltas`]: the deltas of many connections in one
//! call, written on every core with the `parallel` feature.

use super::FastArray;
use crate::error::SendError;
use crate::replicate::Replicate;
use crate::send::sender::{DeltaWrite, Sender};
use crate::send_state::stats::DeltaStats;

impl<T: Replicate + Sync> FastArray<T> {
    /// [`write_delta`](Self::write_delta) (or, for a write with
    /// [`max_bits`](DeltaWrite::max_bits),
    /// [`write_delta_with_budget`](Self::write_delta_with_budget)) for each
    /// of `writes`, returning each one's result in their order. The bytes
    /// written, what each connection records and the results are exactly
    /// what the writes one after the other give.
    ///
    /// With the `parallel` feature, the connections that write messages of
    /// their own (every one but the caught-up connections, which copy the
    /// frame's shared message) are planned and written on every core
    /// (`std::thread::available_parallelism`), each thread a run of them
    /// with its own encodings of the frame's items. Without it, or for an
    /// item type with `#[replicate(array)]` fields, or with fewer than four
    /// such connections, they are written on this thread. Connections are
    /// independent, so this is the tick's one call that grows with the
    /// number of players; call it after [`commit`](Self::commit) and the
    /// scope changes of the tick.
    ///
    /// ```
    /// use fastarray_core::{DeltaWrite, FastArray, SendState};
    /// use fastarray_derive::Replicate;
    ///
    /// #[derive(Replicate, Clone, Debug, PartialEq)]
    /// #[replicate(crate = "fastarray_core")] // users of the `fastarray` crate omit this
    /// struct Unit { x: i32, hp: u8 }
    ///
    /// let mut server = FastArray::new();
    /// for x in 0..100 {
    ///     server.push(Unit { x, hp: 100 });
    /// }
    /// server.commit();
    /// let mut states: Vec<SendState> = (0..8).map(|_| SendState::new()).collect();
    /// let mut packets: Vec<Vec<u8>> = vec![Vec::new(); 8];
    /// let mut writes: Vec<DeltaWrite<'_>> = states
    ///     .iter_mut()
    ///     .zip(&mut packets)
    ///     .map(|(state, out)| DeltaWrite { state, packet: 1, out, max_bits: None })
    ///     .collect();
    /// let results = server.write_deltas(&mut writes);
    /// assert!(results.iter().all(|result| result.as_ref().unwrap().added == 100));
    ///
    /// let mut client = FastArray::<Unit>::mirror();
    /// client.apply_delta(&packets[3], &mut ()).unwrap();
    /// assert_eq!(client.len(), 100);
    /// ```
    pub fn write_deltas(
        &mut self,
        writes: &mut [DeltaWrite<'_>],
    ) -> Vec<Result<DeltaStats, SendError>> {
        if let Err(error) = self.expect_client_writer() {
            return writes.iter().map(|_| Err(error.clone())).collect();
        }
        let sender = Sender::made(&mut self.sender);
        sender.write_many(&mut self.store, writes, threads())
    }
}

/// The threads a tick's writes may take: every core with the `parallel`
/// feature, else this one.
fn threads() -> usize {
    if cfg!(feature = "parallel") {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        1
    }
}
