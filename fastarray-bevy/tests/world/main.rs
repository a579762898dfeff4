//! Real Bevy `App`s over real UDP sockets on 127.0.0.1: a server and
//! clients, the links conditioned (loss, duplication, reordering), the
//! clients' Worlds checked against the server's. One test binary (each
//! links Bevy: one link, not five).

mod convergence;
mod events;
mod hostile;
mod owner;
mod readme;
mod scope;
mod support;
