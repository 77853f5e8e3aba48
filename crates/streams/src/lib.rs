//! Stream viewers as a model, without clocks or I/O: the player (buffer, due times, steady state, stalls), the
//! audience's arrivals, the viewer scheduler the I/O core runs as a schedule and the judge that says when a
//! step's judged playback begins and ends, how a count of viewers is laid out over media files and the titles
//! of a library, the capacity search, and the estimate from raw rates. Tested with manual clocks and made-up
//! devices.
//!
//! How stream phases are planned is in `plan::streams`; how they run on the I/O core (steps, the search's
//! driver, ingest writers, media) in `run::streams`.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::engine;
pub(crate) use ::metrics;
pub(crate) use ::spec;
pub(crate) use ::units;
pub(crate) use ::workload;
// This crate, as `crate::streams::…` names it.
#[cfg(test)]
use crate as streams;

pub mod arrivals;
pub mod background;
pub mod capacity;
pub mod delivery;
pub mod estimate;
pub mod judge;
pub mod library;
pub mod model;
pub mod outcome;
pub mod players;
pub mod playlist;
pub mod segmented;
pub mod setup;
pub mod viewers;

pub use crate::spec::{Assignment, ChunkSize, Delivery, FORMATS, Format, Household, IngestSpec, Mix};
pub use background::BackgroundFigures;
pub use capacity::{SearchOutcome, SearchSettings, search};
pub use estimate::{CapacityEstimate, RawRates, compare, estimate};
pub use judge::{Judging, StepJudge};
pub use library::{HotSet, KeptInfo, LibraryFile, LibraryInfo, LibrarySource, Titles};
pub use model::{Arrival, ChunkWant, JudgedBuffer, Player, PlayerConfig, StreamStats};
pub use outcome::{BufferDrain, ClientStep, DRAIN_SHARE, IngestOutcome, StepOutcome};
pub use segmented::{SegmentSource, SegmentedTitle, TitleSegment};
pub use setup::{MediaFile, MediaKey, StepLength, StreamsConfig, ViewerPlan, defaults};
pub use viewers::{Chunk, ViewerNext, Viewers};
