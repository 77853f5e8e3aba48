//! The table of fio options streamcap knows: each name (with fio's aliases), the kind of value it takes, and for
//! options that change nothing here or that streamcap refuses, the sentence the user reads.
//!
//! Three kinds of entry: options read into a phase (their meaning is in `mapping` and friends); options accepted
//! with a notice because they change nothing in streamcap (`NoEffect`, the notice says why); options fio has but
//! streamcap refuses (`Refused`, the message says why and what to do). An option missing from the table is
//! reported as unknown. Nothing here reads values.

use super::values::TimeUnit;

/// The kind of value an option takes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// 0 or 1; the bare name means 1.
    Bool,
    Int,
    Percent,
    Size,
    SizeOrPercent,
    /// Sizes per direction (`4k,64k`).
    Sizes,
    /// Whole numbers per direction (`rate_iops=100,50`).
    Ints,
    /// Percentages per direction (`percentage_random=50,20`).
    Percents,
    /// Size ranges per direction (`4k-16k,8k-64k`).
    Ranges,
    /// Weighted block-size splits per direction.
    Splits,
    Time(TimeUnit),
    /// Words read by the mapping (rw, ioengine, filename …).
    Text,
    /// A log-file prefix; the bare name means the job's name (given as an empty text).
    LogName,
    /// Accepted; the notice tells the user why it has no effect in streamcap.
    NoEffect(&'static str),
    /// Known to fio but not run by streamcap; the text says why and what to do.
    Refused(&'static str),
}

/// One entry of the table.
pub struct Opt {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: Kind,
}

const fn opt(name: &'static str, kind: Kind) -> Opt {
    Opt { name, aliases: &[], kind }
}

const fn alias(name: &'static str, aliases: &'static [&'static str], kind: Kind) -> Opt {
    Opt { name, aliases, kind }
}

const ZONES: Kind = Kind::Refused(
    "zoned block devices (zonemode=zbd) are not supported: streamcap does not drive their zones; remove \
     the zone options",
);
const PRIORITY: Kind = Kind::Refused(
    "I/O priority hints are not supported: streamcap sets a class and level (cmdprio_class, cmdprio) only; \
     remove the option",
);
const PINNING: Kind = Kind::NoEffect("streamcap does not pin its workers to CPUs or NUMA nodes");
const MEASURED: Kind = Kind::NoEffect("streamcap measures every latency anyway (about 20 ns per I/O)");
const BUFFERS: Kind = Kind::NoEffect("streamcap uses its own page-aligned buffers, filled with random data");
const SCRAMBLED: Kind = Kind::NoEffect(
    "streamcap stamps every 4 KiB it writes with its offset and a counter, as scramble_buffers does; for data no \
     compressor can shrink, use refill_buffers",
);

/// Every option streamcap knows from a fio job file.
pub static OPTIONS: &[Opt] = &[
    // What the job is.
    opt("name", Kind::Text),
    opt("description", Kind::Text),
    opt("kb_base", Kind::Text),
    opt("unit_base", Kind::NoEffect("streamcap reports bandwidth in bytes (MB/s = 10^6 bytes per second)")),
    alias("rw", &["readwrite"], Kind::Text),
    opt("rw_sequencer", Kind::Text),
    opt("rwmixread", Kind::Percent),
    opt("rwmixwrite", Kind::Percent),
    opt("percentage_random", Kind::Percents),
    opt("unified_rw_reporting", Kind::Text),
    alias("bs", &["blocksize"], Kind::Sizes),
    alias("bsrange", &["blocksize_range"], Kind::Ranges),
    opt("bssplit", Kind::Splits),
    alias("blockalign", &["ba"], Kind::Sizes),
    alias(
        "bs_unaligned",
        &["blocksize_unaligned"],
        Kind::NoEffect("streamcap's block-size ranges already step by the alignment, not by the smallest size"),
    ),
    opt("bs_is_seq_rand", Kind::Refused("separate block sizes for sequential and random operations are not supported")),
    // Where and how much.
    opt("size", Kind::SizeOrPercent),
    alias("io_size", &["io_limit"], Kind::Size),
    opt("filesize", Kind::Size),
    alias("fill_device", &["fill_fs"], Kind::Bool),
    alias("offset", &["fileoffset"], Kind::SizeOrPercent),
    opt("offset_increment", Kind::SizeOrPercent),
    opt("offset_align", Kind::NoEffect("streamcap aligns every offset to the block alignment")),
    opt("number_ios", Kind::Int),
    opt("file_append", Kind::Refused("appending to files is not supported; give an offset")),
    opt("filename", Kind::Text),
    opt("directory", Kind::Text),
    opt("filename_format", Kind::Text),
    opt("unique_filename", Kind::NoEffect("streamcap names files inside its own work directory")),
    alias("nrfiles", &["nr_files"], Kind::Int),
    alias("openfiles", &["open_files"], Kind::NoEffect("streamcap keeps each worker's files open for the whole phase")),
    opt("file_service_type", Kind::Text),
    opt("create_on_open", Kind::NoEffect("streamcap creates and fills its files before the phase starts")),
    opt("create_serialize", Kind::NoEffect("streamcap lays out its files one after another before the phase")),
    opt("create_fsync", Kind::NoEffect("streamcap flushes each file it lays out")),
    opt("create_only", Kind::Refused("laying out the files without I/O is not a phase of its own here")),
    opt(
        "overwrite",
        Kind::NoEffect(
            "streamcap lays out (writes) every data file before the phase, so writes always overwrite existing \
             data, as fio does with overwrite=1",
        ),
    ),
    opt("allow_file_create", Kind::NoEffect("streamcap creates the data files of a directory target itself")),
    opt("allow_mounted_write", Kind::NoEffect("streamcap never writes to a mounted device, whatever this says")),
    opt("unlink", Kind::NoEffect("streamcap removes its files after the run unless you pass --keep")),
    opt("unlink_each_loop", Kind::NoEffect("streamcap removes its files after the run unless you pass --keep")),
    opt("fallocate", Kind::NoEffect("streamcap lays out its files by writing them")),
    opt("lockfile", Kind::NoEffect("streamcap's workers never share an operation on a file")),
    opt("pre_read", Kind::Bool),
    // Engine.
    opt("ioengine", Kind::Text),
    opt("iodepth", Kind::Int),
    alias("iodepth_batch", &["iodepth_batch_submit"], Kind::Int),
    alias(
        "iodepth_batch_complete_min",
        &["iodepth_batch_complete"],
        Kind::NoEffect("streamcap reaps completions as they arrive"),
    ),
    opt("iodepth_batch_complete_max", Kind::NoEffect("streamcap reaps completions as they arrive")),
    opt("iodepth_low", Kind::NoEffect("streamcap refills the queue as soon as an operation completes")),
    opt("io_submit_mode", Kind::Text),
    opt("serialize_overlap", Kind::NoEffect("streamcap never has two writes to the same block in flight")),
    opt("fixedbufs", Kind::NoEffect("streamcap's io_uring engine always registers its buffers")),
    opt("registerfiles", Kind::NoEffect("streamcap's io_uring engine always registers its files")),
    opt("sqthread_poll", Kind::NoEffect("streamcap submits from the worker thread; no kernel polling thread")),
    opt("sqthread_poll_cpu", Kind::NoEffect("streamcap submits from the worker thread; no kernel polling thread")),
    opt("hipri", Kind::NoEffect("streamcap waits for completion interrupts; it does not poll for completions")),
    opt("nonvectored", Kind::NoEffect("streamcap's io_uring engine uses fixed-buffer reads and writes")),
    opt("uncached", Kind::NoEffect("streamcap's buffered I/O goes through the page cache as usual")),
    opt("nowait", Kind::NoEffect("streamcap lets requests wait for resources rather than fail them")),
    opt("force_async", Kind::NoEffect("streamcap leaves the kernel to decide when to go asynchronous")),
    opt("userspace_reap", Kind::NoEffect("streamcap reaps completions through the kernel")),
    opt("stat_type", Kind::Text),
    // Durability.
    opt("direct", Kind::Bool),
    opt("buffered", Kind::Bool),
    opt("sync", Kind::Text),
    opt("fsync", Kind::Int),
    opt("fdatasync", Kind::Int),
    opt("end_fsync", Kind::Bool),
    opt("fsync_on_close", Kind::Bool),
    opt("invalidate", Kind::Bool),
    opt("sync_file_range", Kind::Refused("sync_file_range is not supported; use fsync or fdatasync")),
    opt("write_barrier", Kind::Refused("barrier writes are not supported; use fsync")),
    opt("fadvise_hint", Kind::Text),
    opt("write_hint", Kind::NoEffect("streamcap sets no write lifetime hints")),
    // Concurrency and time.
    opt("numjobs", Kind::Int),
    opt("thread", Kind::NoEffect("streamcap always runs its workers as threads")),
    opt("threads", Kind::NoEffect("it is an option of fio's tiobench profile and changes nothing in a job file")),
    alias("runtime", &["timeout"], Kind::Time(TimeUnit::Seconds)),
    opt("time_based", Kind::Bool),
    opt("ramp_time", Kind::Time(TimeUnit::Seconds)),
    opt("startdelay", Kind::Time(TimeUnit::Seconds)),
    opt("loops", Kind::Int),
    opt("exitall", Kind::Bool),
    opt("exit_what", Kind::Text),
    opt("exitall_on_error", Kind::Bool),
    alias("stonewall", &["wait_for_previous"], Kind::Bool),
    opt("wait_for", Kind::Text),
    opt("new_group", Kind::Bool),
    opt("group_reporting", Kind::Bool),
    opt("flow_id", Kind::Int),
    opt("flow", Kind::Text),
    opt("flow_sleep", Kind::Time(TimeUnit::Micros)),
    alias("steadystate", &["ss"], Kind::Text),
    alias("steadystate_duration", &["ss_dur"], Kind::Time(TimeUnit::Seconds)),
    alias("steadystate_ramp_time", &["ss_ramp"], Kind::Time(TimeUnit::Seconds)),
    alias("steadystate_check_interval", &["ss_interval"], Kind::Time(TimeUnit::Seconds)),
    // Randomness.
    opt("randrepeat", Kind::Bool),
    opt("randseed", Kind::Int),
    opt("random_distribution", Kind::Text),
    opt("random_generator", Kind::Text),
    opt(
        "norandommap",
        Kind::NoEffect(
            "streamcap always visits each block of a uniform random workload once per pass, as fio does without \
             norandommap",
        ),
    ),
    opt("softrandommap", Kind::NoEffect("streamcap's random order never repeats a block within a pass")),
    // Pacing.
    opt("rate", Kind::Sizes),
    opt("rate_iops", Kind::Ints),
    alias("rate_min", &["ratemin"], Kind::Sizes),
    opt("rate_iops_min", Kind::Ints),
    opt("rate_process", Kind::Text),
    alias("rate_cycle", &["ratecycle"], Kind::NoEffect("streamcap checks rate_min over each reporting interval")),
    opt("rate_ignore_thinktime", Kind::NoEffect("streamcap's rate schedule already ignores think time")),
    opt("thinktime", Kind::Time(TimeUnit::Micros)),
    opt("thinktime_blocks", Kind::Int),
    opt("thinktime_spin", Kind::NoEffect("streamcap sleeps through think time")),
    opt("latency_target", Kind::Time(TimeUnit::Micros)),
    opt("latency_window", Kind::Time(TimeUnit::Micros)),
    opt("latency_percentile", Kind::Text),
    opt("latency_run", Kind::Bool),
    opt("max_latency", Kind::Refused("stopping a job at a latency limit is not supported")),
    // Reporting.
    opt("clat_percentiles", Kind::Bool),
    opt("lat_percentiles", Kind::Bool),
    opt("slat_percentiles", Kind::NoEffect("streamcap reports the percentiles of completion latency")),
    opt("percentile_list", Kind::Text),
    opt("disable_lat", MEASURED),
    opt("disable_clat", MEASURED),
    opt("disable_slat", MEASURED),
    alias("disable_bw_measurement", &["disable_bw"], MEASURED),
    opt("gtod_reduce", MEASURED),
    opt(
        "bwavgtime",
        Kind::NoEffect("streamcap averages bandwidth over each reporting interval (--interval, log_avg_msec)"),
    ),
    opt(
        "iopsavgtime",
        Kind::NoEffect("streamcap averages IOPS over each reporting interval (--interval, log_avg_msec)"),
    ),
    opt("clocksource", Kind::NoEffect("streamcap reads the monotonic clock")),
    opt("stats", Kind::NoEffect("streamcap always keeps statistics")),
    opt("write_bw_log", Kind::LogName),
    opt("write_iops_log", Kind::LogName),
    opt("write_lat_log", Kind::LogName),
    opt("write_hist_log", Kind::LogName),
    opt("log_hist_msec", Kind::Time(TimeUnit::Millis)),
    opt("log_hist_coarseness", Kind::Int),
    opt("log_avg_msec", Kind::Time(TimeUnit::Millis)),
    opt("log_max_value", Kind::NoEffect("streamcap's logs carry the mean of each interval")),
    opt("log_offset", Kind::NoEffect("streamcap's averaged logs carry offset 0, as fio's averaged logs do")),
    opt("log_prio", Kind::NoEffect("streamcap's logs carry priority 0: every request has the same priority")),
    opt("log_compression", Kind::NoEffect("streamcap writes its logs uncompressed")),
    opt("log_unix_epoch", Kind::NoEffect("streamcap's log times count from the start of measurement")),
    opt("per_job_logs", Kind::NoEffect("streamcap writes one log per phase")),
    opt("disk_util", Kind::NoEffect("streamcap always samples the devices beneath the target")),
    opt("continue_on_error", Kind::Text),
    opt("ignore_error", Kind::Refused("ignoring only some errors is not supported; use continue_on_error=all")),
    opt("error_dump", Kind::NoEffect("streamcap keeps the first failed operations in the result")),
    // Where the workers run.
    opt("cpus_allowed", PINNING),
    opt("cpus_allowed_policy", PINNING),
    opt("cpumask", PINNING),
    opt("numa_cpu_nodes", PINNING),
    opt("numa_mem_policy", PINNING),
    opt("nice", Kind::NoEffect("streamcap runs its workers at its own scheduling priority")),
    opt("prio", Kind::NoEffect("streamcap runs its workers at the default I/O priority")),
    opt("prioclass", Kind::NoEffect("streamcap runs its workers at the default I/O priority")),
    opt("cgroup", Kind::NoEffect("streamcap runs in the cgroup it was started in")),
    opt("cgroup_weight", Kind::NoEffect("streamcap runs in the cgroup it was started in")),
    opt("ioscheduler", Kind::NoEffect("streamcap never changes the device's I/O scheduler")),
    alias("mem", &["iomem"], BUFFERS),
    alias("mem_align", &["iomem_align"], BUFFERS),
    opt("lockmem", BUFFERS),
    opt("scramble_buffers", SCRAMBLED),
    opt("refill_buffers", Kind::Bool),
    opt("cmdprio_percentage", Kind::Percents),
    opt("cmdprio_class", Kind::Ints),
    opt("cmdprio", Kind::Ints),
    opt("cmdprio_bssplit", Kind::Text),
    opt("cmdprio_hint", PRIORITY),
    opt("buffer_pattern", Kind::Text),
    // The shape of written data (`data`).
    opt("zero_buffers", Kind::Bool),
    opt("buffer_compress_percentage", Kind::Percent),
    opt("buffer_compress_chunk", Kind::Size),
    opt("dedupe_percentage", Kind::Percent),
    opt("dedupe_mode", Kind::Text),
    opt("dedupe_working_set_percentage", Kind::Percent),
    opt("dedupe_global", Kind::Bool),
    opt("zonemode", Kind::Text),
    opt("zonesize", Kind::Size),
    opt("zonerange", Kind::Size),
    opt("zoneskip", Kind::Size),
    opt("zonecapacity", ZONES),
    opt("max_open_zones", ZONES),
    opt("read_beyond_wp", ZONES),
    opt("zone_reset_threshold", ZONES),
    opt("zone_reset_frequency", ZONES),
    opt("verify", Kind::Text),
    opt("do_verify", Kind::Bool),
    opt("verify_pattern", Kind::Text),
    opt("verify_only", Kind::Bool),
    opt("verify_backlog", Kind::Int),
    opt("verify_backlog_batch", Kind::NoEffect("streamcap reads back the whole backlog each time")),
    opt("verify_interval", Kind::NoEffect("streamcap verifies in blocks of the smallest write size")),
    opt("verify_offset", Kind::NoEffect("streamcap's block header is at the start of each block")),
    opt("verify_fatal", Kind::NoEffect("streamcap reports every bad block and exits with 1")),
    opt("verify_dump", Kind::NoEffect("streamcap reports what it expected and what it found for each bad block")),
    opt("verify_async", Kind::NoEffect("streamcap checks each read in the worker that completed it")),
    opt("verify_async_cpus", Kind::NoEffect("streamcap checks each read in the worker that completed it")),
    opt("verify_state_save", Kind::NoEffect("streamcap keeps its own verification manifest in runs kept with --keep")),
    opt("verify_state_load", Kind::NoEffect("streamcap keeps its own verification manifest in runs kept with --keep")),
    opt("verify_header_seed", Kind::NoEffect("streamcap's block header always carries the run's seed")),
    opt("experimental_verify", Kind::NoEffect("streamcap tracks every block's generation")),
    opt("trim_percentage", Kind::Refused("streamcap does not issue trims")),
    opt("trim_verify_zero", Kind::Refused("streamcap does not issue trims")),
    opt("trim_backlog", Kind::Refused("streamcap does not issue trims")),
    opt("read_iolog", Kind::Refused("replaying I/O logs is not supported")),
    opt("write_iolog", Kind::Refused("recording I/O logs is not supported")),
    opt("replay_no_stall", Kind::Refused("replaying I/O logs is not supported")),
    opt("exec_prerun", Kind::Refused("streamcap runs no commands before or after a job")),
    opt("exec_postrun", Kind::Refused("streamcap runs no commands before or after a job")),
    opt("profile", Kind::Refused("fio's built-in profiles are not supported; write the jobs out")),
];

/// Looks an option up by its name or one of its aliases.
pub fn find(name: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.name == name || o.aliases.contains(&name))
}

/// The closest known name within two edits, for "did you mean".
pub fn closest(name: &str) -> Option<&'static str> {
    // Option names are ASCII, so a key with other characters is nobody's typo, and bytes are characters.
    if !name.is_ascii() || name.len() + 1 > ROW {
        return None;
    }
    OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
        // Names whose lengths differ by more than two are more than two edits apart: skipping them keeps a long
        // unknown word from costing its length × every option's (the fuzzer's 1 KiB words spent 6 ms here).
        .filter(|n| n.len().abs_diff(name.len()) <= 2)
        .map(|n| (edit_distance(n.as_bytes(), name.as_bytes(), 2), n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

/// The longest word `closest` compares, plus one: the edit distance's row lives on the stack, so that a file
/// full of unknown words costs no allocation per comparison. Every option name is shorter (a unit test says so).
const ROW: usize = 64;

/// Levenshtein distance over bytes, for "did you mean"; anything above `most` comes back as `most + 1`, as soon
/// as every cell of a row is past it (a row's minimum never falls in later rows). `b` is shorter than [`ROW`].
fn edit_distance(a: &[u8], b: &[u8], most: usize) -> usize {
    let mut row = [0usize; ROW];
    for (j, cell) in row.iter_mut().enumerate().take(b.len() + 1) {
        *cell = j;
    }
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
        if row[..=b.len()].iter().all(|&d| d > most) {
            return most + 1;
        }
    }
    row[b.len()].min(most + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_name_is_unique() {
        let mut names: Vec<&str> =
            OPTIONS.iter().flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied())).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
    }

    #[test]
    fn aliases_find_their_option_and_near_misses_a_suggestion() {
        assert_eq!(find("ratemin").map(|o| o.name), Some("rate_min"));
        assert_eq!(find("ss_dur").map(|o| o.name), Some("steadystate_duration"));
        assert_eq!(closest("blocksiz"), Some("blocksize"));
        assert_eq!(closest("completely_different"), None);
    }

    #[test]
    fn the_edit_distance_is_exact_up_to_its_bound_and_one_past_it_beyond() {
        assert_eq!(edit_distance(b"kitten", b"sitting", 5), 3);
        assert_eq!(edit_distance(b"kitten", b"sitting", 2), 3);
        assert_eq!(edit_distance(b"iodepth", b"iodepth", 2), 0);
        assert_eq!(edit_distance(b"bs", b"bssplit", 9), 5);
        assert_eq!(edit_distance(b"bs", b"bssplit", 2), 3);
        assert_eq!(closest(&"x".repeat(1000)), None);
        assert_eq!(closest("blocksizé"), None);
    }

    #[test]
    fn every_option_name_is_ascii_and_fits_the_edit_distance_row() {
        for name in OPTIONS.iter().flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied())) {
            assert!(name.is_ascii() && name.len() + 3 < ROW, "{name}");
        }
    }
}
