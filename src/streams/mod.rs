//! Stream capacity: paced viewers reading media, and the search for how many the storage can serve.
//!
//! `model` is the pure player (buffer, due times, stalls) driven by explicit instants; it imports nothing from
//! streamcap, and is tested with a manual clock. `driver` is run-level code: it schedules many viewers per
//! thread over the engine layer (or, for `http://` targets, the `http` source: keep-alive connections polled
//! with epoll, behind the same engine contract) and records lateness in `metrics` histograms.

pub mod capacity;
pub mod driver;
pub mod formats;
pub mod http;
pub mod http_wire;
pub mod limits;
pub mod model;
pub mod setup;

pub use capacity::{SearchOutcome, SearchSettings, search};
pub use driver::{DriveError, DriveOutcome, DrivePlan, MediaFile, ViewerPlan, drive};
pub use formats::{FORMATS, Format, Mix};
pub use http_wire::{HttpError, HttpUrl, probe_size};
pub use model::{Arrival, ChunkWant, Player, PlayerConfig, StreamStats};
pub use setup::{Assignment, ChunkSize, MediaKey, StreamsConfig, defaults};
