//! One drive as the planner sees it — capacity, price, sequential rates and what one random operation costs —
//! and the arithmetic of one member operation on it. Pure: no I/O, no layouts (those are in `layout` and
//! `members`).
//!
//! Two cost models, chosen by `rotational` (docs/planning.md, "Drives"):
//! - a rotating disk does one thing at a time: a random operation positions the head (average seek plus half a
//!   turn, the access time) and then transfers, so its busy time is `access + bytes ÷ rate` (the first-order model
//!   of disk service time); sequential transfers cost `bytes ÷ rate` only;
//! - flash, or a cgroup-throttled device, has two separate limits, operations per second and bytes per second,
//!   and an operation costs a share of each: `1 ÷ IOPS` and `bytes ÷ rate` (the larger share binds).
//!
//! A transfer larger than the drive's largest request (`max_request`, the kernel's `max_sectors_kb` or the
//! segment limit of a loop device) is split into several requests, and each counts against the IOPS limit.

use std::time::Duration;

use crate::units::{ByteRate, Bytes};

/// Random reads at queue depth 16 over queue depth 1 of a 7200 rpm disk whose catalogue entry gives no
/// deep-queue figure: Seagate's Exos X18 datasheet gives 170 random 4 KiB reads/s at QD16, against about 80 at
/// QD1 (1 ÷ (8.5 ms + 4.17 ms)).
pub const QUEUE16_GAIN: f64 = 2.1;

/// One turn at 7200 rpm, the revolution assumed for a rotating drive whose rpm is not known.
pub const REVOLUTION_7200: Duration = Duration::from_nanos(8_333_333);

/// A price: an amount in a currency ("389 USD").
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    pub amount: f64,
    /// Upper-case currency code or symbol as the catalogue gave it ("USD", "EUR").
    pub currency: String,
}

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
}

/// How a drive spends time on random operations.
#[derive(Debug, Clone, PartialEq)]
pub enum RandomCost {
    /// A rotating disk: every random operation first positions the head.
    Positioning {
        /// Average seek plus average rotational latency, reads, with one request at a time.
        read: Duration,
        /// The same for writes (drives quote a slightly longer write seek).
        write: Duration,
        /// Read access time with a deep queue (command queueing shortens seeks); `read` when unknown.
        read_loaded: Duration,
        /// One turn of the platter (60 s ÷ rpm; a 7200 rpm turn, 8.33 ms, when the rpm is unknown): what a
        /// read/modify/write waits between reading sectors and writing them back.
        revolution: Duration,
    },
    /// Flash or a throttled device: operations per second is a limit of its own.
    OpLimit {
        /// Random reads per second with a deep queue (the datasheet's QD32 figure).
        read_iops: f64,
        /// Random writes per second with a deep queue.
        write_iops: f64,
        /// Random reads per second with one request in flight, when known (sets the latency of one read).
        read_iops_qd1: Option<f64>,
    },
}

/// One drive model.
#[derive(Debug, Clone, PartialEq)]
pub struct Drive {
    /// The catalogue key ("mg10-20tb").
    pub name: String,
    /// For people: the product and model number ("Toshiba MG10 20TB (MG10ACA20TE)").
    pub product: String,
    /// Where the figures come from ("datasheet …", "measured: r.json").
    pub source: String,
    pub capacity: Bytes,
    pub price: Option<Price>,
    /// Sequential read rate.
    pub read: ByteRate,
    /// Sequential write rate.
    pub write: ByteRate,
    pub rotational: bool,
    pub random: RandomCost,
    /// Largest single request; larger transfers are split (each part is one operation).
    pub max_request: Option<Bytes>,
    /// A cache on the drive (flash or DRAM) that serves reads of a working set it holds.
    pub cache: Option<DriveCache>,
    /// Neighbouring requests are merged before they count against the IOPS limit, as the block layer merges
    /// them for a real device. False for a cgroup blkio throttle, which counts every bio as it is submitted
    /// (so btrfs's per-stripe bios each count).
    pub merges: bool,
}

/// A drive's read cache (a hybrid drive's flash, a 10K "enhanced cache" drive's): while the working set it
/// holds fits, its reads cost the cache's limits instead of the platters' (docs/planning.md, "Caches").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriveCache {
    /// Bytes it holds.
    pub size: Bytes,
    /// Reads it serves per second, bytes.
    pub read: ByteRate,
    /// Random reads it serves per second (4 KiB).
    pub read_iops: f64,
}

impl DriveCache {
    /// `SIZE:READ:IOPS` (`4GiB:2000MB/s:50000`), as `plan --controller-cache` takes it.
    pub fn parse_spec(text: &str) -> Result<DriveCache, String> {
        const FORM: &str =
            "give SIZE:READ:IOPS, e.g. 4GiB:2000MB/s:50000 (the cache's size, its read rate and its 4 KiB reads/s)";
        let parts: Vec<&str> = text.split(':').map(str::trim).collect();
        let [size, read, iops] = parts[..] else { return Err(format!("'{text}': {FORM}")) };
        let size = Bytes::parse_positive(size).map_err(|e| format!("'{text}': {e}; {FORM}"))?;
        let read = ByteRate::parse(read).map_err(|e| format!("'{text}': {e}; {FORM}"))?;
        let read_iops = iops.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0);
        let read_iops =
            read_iops.ok_or_else(|| format!("'{text}': '{iops}' is not a number of reads/s above 0; {FORM}"))?;
        if read.bytes_per_sec() <= 0.0 {
            return Err(format!("'{text}': the read rate must be above 0; {FORM}"));
        }
        Ok(DriveCache { size, read, read_iops })
    }
}

/// Busy time one operation (or one workload) puts on a drive, as fractions of a second of each of its resources.
/// A drive is saturated when the largest of the three reaches 1.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// Rotating disks: time spent positioning the head, seconds.
    pub seek: f64,
    /// Rotating disks: time spent transferring, seconds.
    pub transfer: f64,
    /// Op-limited drives: share of a second of the IOPS limit.
    pub ops: f64,
    /// Op-limited drives: share of a second of the bandwidth limit.
    pub bytes: f64,
    /// Bookkeeping, not a resource: requests the drive serves (for rotating disks, positioned runs).
    pub requests: f64,
    /// Bookkeeping, not a resource: bytes the drive moves.
    pub moved: f64,
}

/// Which resource of a drive binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Head positioning dominates a rotating disk's time ("seek-bound").
    Seek,
    /// Transfers dominate a rotating disk's time, or the bandwidth limit of an op-limited drive.
    Bandwidth,
    /// The operations-per-second limit of an op-limited drive.
    Iops,
}

impl Cost {
    pub const ZERO: Cost = Cost { seek: 0.0, transfer: 0.0, ops: 0.0, bytes: 0.0, requests: 0.0, moved: 0.0 };

    pub fn scaled(self, k: f64) -> Cost {
        Cost {
            seek: self.seek * k,
            transfer: self.transfer * k,
            ops: self.ops * k,
            bytes: self.bytes * k,
            requests: self.requests * k,
            moved: self.moved * k,
        }
    }

    pub fn add(&mut self, other: Cost) {
        self.seek += other.seek;
        self.transfer += other.transfer;
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.requests += other.requests;
        self.moved += other.moved;
    }

    /// The largest share: utilisation of the drive.
    pub fn load(self) -> f64 {
        (self.seek + self.transfer).max(self.ops).max(self.bytes)
    }

    /// Which resource binds: positioning when it is most of a rotating disk's time.
    pub fn binding(self) -> Resource {
        let busy = self.seek + self.transfer;
        if busy >= self.ops && busy >= self.bytes {
            if self.seek >= self.transfer { Resource::Seek } else { Resource::Bandwidth }
        } else if self.ops >= self.bytes {
            Resource::Iops
        } else {
            Resource::Bandwidth
        }
    }
}

impl Drive {
    /// Number of requests a transfer of `bytes` is split into.
    pub fn requests(&self, bytes: f64) -> f64 {
        match self.max_request {
            Some(max) if max.0 > 0 => (bytes / max.0 as f64).ceil().max(1.0),
            _ => 1.0,
        }
    }

    fn rate(&self, dir: Dir) -> f64 {
        match dir {
            Dir::Read => self.read.bytes_per_sec(),
            Dir::Write => self.write.bytes_per_sec(),
        }
    }

    /// The cost of one random operation of `bytes` (positioned anew), with a deep queue.
    pub fn random_op(&self, dir: Dir, bytes: f64) -> Cost {
        self.run(dir, bytes, 1.0, true)
    }

    /// The cost of reading `bytes` in `requests` requests from the drive's cache (an op-limited cost, as flash).
    pub fn cached_read(&self, bytes: f64, requests: f64) -> Option<Cost> {
        let cache = self.cache?;
        let cost = Cost { ops: requests / cache.read_iops, bytes: bytes / cache.read.bytes_per_sec(), ..Cost::ZERO };
        Some(Cost { requests, moved: bytes, ..cost })
    }

    /// A rotating drive's read access time, seconds, with `queue` requests waiting on it (`None`: a deep queue
    /// of unknown depth, the catalogue's loaded figure). Command queueing (NCQ, TCQ) serves the waiting request
    /// whose positioning is shortest, so the access time is the least of `q` (docs/planning.md, "Queueing"):
    /// with positioning times spread evenly above a floor a∞, the least of q averages
    /// `a(q) = a∞ + (a(1) − a∞) × 2 ÷ (q + 1)`. a(1) is the unloaded access time; a∞ comes from the catalogue's
    /// deep-queue figure taken at queue depth 32, or, without one, from a 7200 rpm datasheet's 2.1× more random
    /// reads at queue depth 16 than at 1 (`QUEUE16_GAIN`). `None` for flash.
    pub fn read_access(&self, queue: Option<f64>) -> Option<f64> {
        let RandomCost::Positioning { read, read_loaded, .. } = self.random else { return None };
        let (one, loaded) = (read.as_secs_f64(), read_loaded.as_secs_f64());
        let Some(q) = queue else { return Some(loaded) };
        let share = |q: f64| 2.0 / (q + 1.0);
        let floor = if loaded < one * 0.999 {
            (loaded - one * share(32.0)) / (1.0 - share(32.0))
        } else {
            (one / QUEUE16_GAIN - one * share(16.0)) / (1.0 - share(16.0))
        };
        let floor = floor.clamp(0.0, one);
        Some(floor + (one - floor) * share(q.max(1.0)))
    }

    /// The cost of `bytes` that lie together on this drive, submitted as `pieces` requests (a layout may cut a
    /// transfer at its stripe units): `positioned` when the head must first move there (a random access), not
    /// when the bytes continue a sequential stream. A rotating disk positions once, whatever the pieces (the
    /// elevator merges them); an op-limited drive pays for every request, or for every piece when it does not
    /// merge neighbours (a throttle counting bios).
    pub fn run(&self, dir: Dir, bytes: f64, pieces: f64, positioned: bool) -> Cost {
        self.run_queued(dir, bytes, pieces, positioned, None)
    }

    /// `run` with `queue` requests waiting on the drive (`read_access`); writes keep their access time.
    pub fn run_queued(&self, dir: Dir, bytes: f64, pieces: f64, positioned: bool, queue: Option<f64>) -> Cost {
        let transfer = bytes / self.rate(dir);
        match &self.random {
            RandomCost::Positioning { write, .. } => {
                let access = match dir {
                    Dir::Read => self.read_access(queue).unwrap_or(0.0),
                    Dir::Write => write.as_secs_f64(),
                };
                let seek = if positioned { access } else { 0.0 };
                let requests = if positioned { 1.0 } else { self.requests(bytes) };
                Cost { seek, transfer, requests, moved: bytes, ..Cost::ZERO }
            }
            RandomCost::OpLimit { read_iops, write_iops, .. } => {
                let iops = if dir == Dir::Read { *read_iops } else { *write_iops };
                let pieces = pieces.max(1.0);
                let requests = if self.merges { self.requests(bytes) } else { pieces * self.requests(bytes / pieces) };
                Cost { ops: requests / iops, bytes: transfer, requests, moved: bytes, ..Cost::ZERO }
            }
        }
    }

    /// Random 4 KiB reads per second with a deep queue.
    pub fn random_read_iops(&self) -> f64 {
        1.0 / self.random_op(Dir::Read, 4096.0).load()
    }

    /// The IOPS limit in `dir` of an op-limited drive.
    pub fn iops_limit(&self, dir: Dir) -> Option<f64> {
        match self.random {
            RandomCost::OpLimit { read_iops, write_iops, .. } => {
                Some(if dir == Dir::Read { read_iops } else { write_iops })
            }
            RandomCost::Positioning { .. } => None,
        }
    }

    /// Sequential rate in `dir`, bytes per second.
    pub fn rate_of(&self, dir: Dir) -> f64 {
        self.rate(dir)
    }

    /// How long one random operation takes with nothing else queued; `None` for an op-limited drive without a
    /// queue-depth-1 figure (its latency is unknown, so no closed-loop bound is drawn from it).
    pub fn latency(&self, dir: Dir, bytes: f64) -> Option<f64> {
        let transfer = bytes / self.rate(dir);
        match &self.random {
            RandomCost::Positioning { read, write, .. } => {
                Some(if dir == Dir::Read { read } else { write }.as_secs_f64() + transfer)
            }
            RandomCost::OpLimit { read_iops_qd1, .. } => read_iops_qd1.map(|q| (1.0 / q).max(transfer)),
        }
    }

    /// One turn of a rotating drive's platter, seconds; `None` for flash.
    pub fn revolution(&self) -> Option<f64> {
        match self.random {
            RandomCost::Positioning { revolution, .. } => Some(revolution.as_secs_f64()),
            RandomCost::OpLimit { .. } => None,
        }
    }

    /// The price amount, or 0 when the catalogue gave none.
    pub fn price_amount(&self) -> f64 {
        self.price.as_ref().map_or(0.0, |p| p.amount)
    }
}

#[cfg(test)]
pub(crate) mod tests {

    #[test]
    fn a_controller_cache_is_size_read_rate_and_reads_per_second() {
        let cache = DriveCache::parse_spec("4GiB:2000MB/s:50000").unwrap();
        assert_eq!((cache.size, cache.read_iops), (Bytes(4 << 30), 50_000.0));
        assert!((cache.read.bytes_per_sec() - 2e9).abs() < 1.0);
        assert!(DriveCache::parse_spec("4GiB:2000MB/s").unwrap_err().contains("SIZE:READ:IOPS"));
        assert!(DriveCache::parse_spec("0:2000MB/s:5").unwrap_err().contains("above zero"));
        assert!(DriveCache::parse_spec("4GiB:2000MB/s:-5").unwrap_err().contains("above 0"));
    }
    use super::*;

    /// A 7200 rpm disk: 8.5 ms seek + 4.17 ms latency, 250 MB/s.
    pub fn hdd(tb: u64) -> Drive {
        let access = Duration::from_micros(12_670);
        Drive {
            name: format!("hdd-{tb}tb"),
            product: format!("test disk {tb} TB"),
            source: "test".into(),
            capacity: Bytes(tb * 1_000_000_000_000),
            price: Some(Price { amount: 20.0 * tb as f64, currency: "USD".into() }),
            read: ByteRate(250e6),
            write: ByteRate(250e6),
            rotational: true,
            random: RandomCost::Positioning {
                read: access,
                write: access,
                read_loaded: access,
                revolution: REVOLUTION_7200,
            },
            max_request: None,
            merges: true,
            cache: None,
        }
    }

    /// An emulated drive: a loop device throttled to `iops` and `mbps` (both directions).
    pub fn throttled(iops: f64, mbps: f64) -> Drive {
        Drive {
            name: "loop".into(),
            product: "throttled loop device".into(),
            source: "test".into(),
            capacity: Bytes(1 << 30),
            price: Some(Price { amount: 10.0, currency: "USD".into() }),
            read: ByteRate(mbps * 1e6),
            write: ByteRate(mbps * 1e6),
            rotational: false,
            random: RandomCost::OpLimit { read_iops: iops, write_iops: iops, read_iops_qd1: None },
            max_request: Some(Bytes(512 * 1024)),
            merges: false,
            cache: None,
        }
    }

    #[test]
    fn a_random_chunk_on_a_disk_costs_its_access_and_its_transfer() {
        let cost = hdd(8).random_op(Dir::Read, 1_048_576.0);
        // 12.67 ms + 1 MiB ÷ 250 MB/s (4.19 ms).
        assert!((cost.load() - 0.016864).abs() < 1e-5, "{cost:?}");
        assert_eq!(cost.binding(), Resource::Seek);
    }

    #[test]
    fn queued_reads_position_faster_and_the_gain_flattens() {
        // a(1) = 12.67 ms, no deep-queue figure: a(16) = a(1) ÷ 2.1 = 6.033 ms, so the floor a∞ solves
        // a∞ + (12.67 − a∞) × 2/17 = 6.033: a∞ = (6.033 − 1.491) ÷ (15/17) = 5.148 ms.
        let d = hdd(8);
        let a = |q: f64| d.read_access(Some(q)).unwrap() * 1e3;
        assert!((a(1.0) - 12.67).abs() < 1e-9);
        assert!((a(16.0) - 12.67 / 2.1).abs() < 1e-9, "{}", a(16.0));
        let floor = (12.67 / 2.1 - 12.67 * 2.0 / 17.0) / (15.0 / 17.0);
        // a(2) = a∞ + (a(1) − a∞) × 2/3; a(32) = a∞ + (a(1) − a∞) × 2/33.
        assert!((a(2.0) - (floor + (12.67 - floor) * 2.0 / 3.0)).abs() < 1e-9, "{}", a(2.0));
        assert!((a(32.0) - (floor + (12.67 - floor) * 2.0 / 33.0)).abs() < 1e-9, "{}", a(32.0));
        // Doubling the queue from 16 to 32 gains 7.7 %, from 1 to 2 gains 25 %.
        assert!((a(16.0) / a(32.0) - 1.0765).abs() < 0.001 && (a(1.0) / a(2.0) - 1.2467).abs() < 0.001);
        // Flash has no positioning to shorten; no queue given keeps the catalogue's loaded figure.
        assert_eq!(throttled(150.0, 150.0).read_access(Some(8.0)), None);
        assert_eq!(d.read_access(None), Some(0.01267));
    }

    #[test]
    fn an_op_limited_drive_pays_per_request_and_per_byte() {
        let drive = throttled(150.0, 150.0);
        // 1 MiB is two requests of 512 KiB: 2/150 of the op budget, 1 MiB/150 MB/s of the bandwidth.
        let cost = drive.random_op(Dir::Read, 1_048_576.0);
        assert!((cost.ops - 2.0 / 150.0).abs() < 1e-9 && (cost.bytes - 1_048_576.0 / 150e6).abs() < 1e-12);
        assert_eq!(cost.binding(), Resource::Iops);
        assert_eq!(drive.random_op(Dir::Read, 4096.0).load(), 1.0 / 150.0);
    }
}
