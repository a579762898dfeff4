//! Bevy 0.20's facade, as published (see `Cargo.toml`).
#![no_std]

pub use bevy_internal::*;
