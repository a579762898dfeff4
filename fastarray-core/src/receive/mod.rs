//! Receiving a message on a mirror: each message is decoded and checked
//! whole against the mirror and its limits (`decode`), then applied
//! (`apply`) with its events, in Unreal's order; a message of changed
//! fields only is checked, then applied, in place (`in_place`). What the
//! mirror keeps from message to message is `receive_state`'s.

pub(crate) mod apply;
pub(crate) mod decode;
pub(crate) mod in_place;
