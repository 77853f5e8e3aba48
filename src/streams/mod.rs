//! Stream capacity: paced viewers reading media, and the search for how many the storage can serve.
//!
//! `model` is the pure player (buffer, due times, stalls) driven by explicit instants; it imports nothing from
//! streamcap but `units`-level std types, and is tested with a manual clock.

pub mod model;

pub use model::{Arrival, ChunkWant, Player, PlayerConfig, StreamStats};
