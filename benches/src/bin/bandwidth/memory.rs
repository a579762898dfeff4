//! Memory per item: a counting global allocator, and the heap bytes of
//! each side after a steady sparse run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use fastarray_bench::naive::NaiveSender;
use fastarray_bench::{Agent, Script, Workload, apply_ours, caught_up, server_array};

use crate::SEED;

/// The system allocator, counting the bytes it has handed out and not yet
/// taken back.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments,
// so `System`'s guarantees hold; the counter has no effect on memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap bytes handed out and not yet taken back.
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Heap bytes owned by `value`: the live bytes its drop gives back.
fn owned_heap<T>(value: T) -> usize {
    let before = LIVE.load(Ordering::Relaxed);
    drop(value);
    before.saturating_sub(LIVE.load(Ordering::Relaxed))
}

// ---------------------------------------------------------------------------
// Heap bytes of each side.

/// Heap bytes of one structure: what dropping it gives back, and what a
/// clone of it holds (a clone allocates for its contents, not for the
/// capacity the original kept from earlier, larger frames).
#[derive(Clone, Copy, Debug, Default)]
pub struct Heap {
    pub owned: usize,
    pub clone: usize,
}

pub fn heap<T: Clone>(value: T) -> Heap {
    let clone = owned_heap(value.clone());
    Heap {
        owned: owned_heap(value),
        clone,
    }
}

/// Heap bytes of each side after a steady sparse run.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    pub items: usize,
    /// `size_of::<Agent>()` plus the items' name capacity, per item.
    pub item_bytes: f64,
    pub server: Heap,
    /// A server array that never wrote a delta (same commits).
    pub server_unsent: Heap,
    pub conn: Heap,
    pub conn_in_flight: Heap,
    pub in_flight_packets: usize,
    pub mirror: Heap,
    pub naive_shadow: Heap,
}

pub fn measure_memory(items: usize) -> Memory {
    let (mut script, agents) = Script::new(Workload::Sparse, items, SEED);
    let mut unsent = server_array(&agents);
    let mut server = server_array(&agents);
    let (mut conn, mut mirror) = caught_up(&mut server, 0);
    let (mut busy, _) = caught_up(&mut server, 0);
    let naive_shadow = NaiveSender::new(&agents);
    let item_heap: usize = agents.iter().map(|a| a.name.capacity()).sum();
    drop(agents);
    let mut ops = Vec::new();
    let mut out = Vec::new();
    let mut tick = 0;
    let in_flight_packets = 4;
    // Past the history ring, so it holds sparse changesets only.
    let ticks = fastarray::HISTORY_LEN as u32 + 6;
    for _ in 0..ticks {
        tick += 1;
        script.tick(&mut ops);
        apply_ours(&mut unsent, &ops);
        unsent.commit();
        apply_ours(&mut server, &ops);
        server.commit();
        out.clear();
        server
            .write_delta(&mut conn, tick, &mut out)
            .expect("write");
        mirror.apply_delta(&out, &mut ()).expect("apply");
        conn.on_ack(tick);
        out.clear();
        server
            .write_delta(&mut busy, tick, &mut out)
            .expect("write");
        if tick + in_flight_packets <= ticks {
            busy.on_ack(tick);
        }
    }
    assert_eq!(busy.packets_in_flight(), in_flight_packets as usize);
    Memory {
        items,
        item_bytes: size_of::<Agent>() as f64 + item_heap as f64 / items as f64,
        conn: heap(conn),
        conn_in_flight: heap(busy),
        in_flight_packets: in_flight_packets as usize,
        mirror: heap(mirror),
        server: heap(server),
        server_unsent: heap(unsent),
        naive_shadow: heap(naive_shadow),
    }
}
