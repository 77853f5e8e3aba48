//! vdbench's rate and placement keywords of raw wds run for real on files in a temporary directory, proved by
//! what streamcap stamps into the blocks it writes and by the result JSON: the Poisson seek crowds writes at the
//! start of the lun; a wd with `iorate=` of its own keeps its rate beside others at max or at the rd's rate;
//! `streams=` writes each part of the lun sequentially from its start.

mod common;

use common::vdbench::{run_file as run, stamps_of};

/// The blocks of lun1 that the raw rd `text` (with `MAXDATA` for its maxdata=) wrote: those whose stamp differs
/// from a run of the same rd that stopped after its first write (so the layout's own stamps are left out).
fn written_blocks(text: &str, maxdata: &str) -> Vec<u64> {
    let (laid_out, written) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    run(laid_out.path(), &text.replace("MAXDATA", "4k"), &["--keep", "--ramp", "0s"]);
    run(written.path(), &text.replace("MAXDATA", maxdata), &["--keep", "--ramp", "0s"]);
    let (before, after) = (stamps_of(laid_out.path(), "lun1"), stamps_of(written.path(), "lun1"));
    assert_eq!(before.len(), after.len());
    (0..before.len() as u64).filter(|&b| before[b as usize] != after[b as usize]).collect()
}

/// seekpct=poisson on a 64 MiB lun, 2,048 random 4 KiB writes: vdbench's exponential with a mean of a third of
/// the lun, folded, puts 47 % of the draws in the first fifth and 12 % in the last two fifths; counting each block
/// once, the first fifth holds about 45 % of the written blocks (uniform: 20 %) and is about 6 times as dense.
#[test]
fn poisson_seeks_crowd_the_writes_at_the_start_of_the_lun() {
    let text = "sd=sd1,lun=DIR/lun1,size=64m\nwd=wd1,sd=sd1,xfersize=4k,rdpct=0,seekpct=poisson\n\
                rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1,maxdata=MAXDATA\n";
    let blocks = written_blocks(text, "8m");
    let (fifth, all) = (64 * 256 / 5, 64 * 256);
    let count = |from: u64, to: u64| blocks.iter().filter(|b| (from..to).contains(*b)).count() as f64;
    let first_share = count(0, fifth) / blocks.len() as f64;
    assert!((0.35..0.6).contains(&first_share), "first fifth holds {first_share:.3} of {} blocks", blocks.len());
    let (first, last) = (count(0, fifth) / fifth as f64, count(all - 2 * fifth, all) / (2 * fifth) as f64);
    assert!(first > 4.0 * last, "first fifth {first:.3} of its blocks written, last two fifths {last:.3}");
    assert!(last > 0.01, "the folded tail reaches the end of the lun: {last:.3}");
}

/// Operations per second of `direction` over the measured time of the phase `phase`.
fn rate(phase: &serde_json::Value, direction: &str) -> f64 {
    phase[direction]["ops"].as_f64().unwrap() / phase["duration_s"].as_f64().unwrap()
}

/// wd1 reads at its own iorate=20 (priority 1) while wd2 writes at max (priority 2), with evenly spaced arrivals
/// (distribution=deterministic): the reads keep 20/s, the writes are not held to them; on two sds and sharing
/// one. The rates are low so that a loaded machine keeps them: due times do not slide, so a late worker catches
/// up within the phase.
#[test]
fn a_wd_with_its_own_iorate_keeps_it_beside_a_wd_at_max() {
    for wd2_sd in ["sd2", "sd1"] {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "sd=sd1,lun=DIR/lun1,size=16m,threads=8\nsd=sd2,lun=DIR/lun2,size=16m,threads=8\n\
             wd=wd1,sd=sd1,xfersize=4k,rdpct=100,iorate=20,priority=1\nwd=wd2,sd={wd2_sd},xfersize=4k,rdpct=0,priority=2\n\
             rd=rd1,wd=wd*,iorate=max,distribution=deterministic,elapsed=3,interval=1\n"
        );
        let phase = &run(dir.path(), &text, &[])["phases"][0];
        let reads = rate(phase, "read");
        assert!((reads - 20.0).abs() < 1.5, "wd2 on {wd2_sd}: wd1 read {reads:.1}/s, not its 20/s");
        assert!(rate(phase, "write") > reads, "wd2 on {wd2_sd}: writes at max held to {:.1}/s", rate(phase, "write"));
    }
}

/// rd iorate=60 with wd1 at its own iorate=20: wd2 gets what wd1 leaves, 40/s (vdbench's
/// WG_entry.wg_set_interarrival: the rd's rate less the wds' own, shared by skew).
#[test]
fn the_other_wds_share_what_a_wd_s_own_iorate_leaves_of_the_rd_s() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sd=sd1,lun=DIR/lun1,size=16m,threads=8\n\
                wd=wd1,sd=sd1,xfersize=4k,rdpct=100,iorate=20,priority=1\nwd=wd2,sd=sd1,xfersize=4k,rdpct=0,priority=2\n\
                rd=rd1,wd=wd*,iorate=60,distribution=deterministic,elapsed=3,interval=1\n";
    let phase = &run(dir.path(), text, &[])["phases"][0];
    let (reads, writes) = (rate(phase, "read"), rate(phase, "write"));
    assert!((reads - 20.0).abs() < 1.5, "wd1 read {reads:.1}/s, not its 20/s");
    assert!((writes - 40.0).abs() < 1.5, "wd2 wrote {writes:.1}/s, not the 40/s wd1 leaves of 60");
}

/// streams=4 on a 16 MiB lun, 64 KiB writes: four streams, each over its own 4 MiB, sequential from its start
/// whatever seekpct says. With seekpct=eof each does one pass (256 writes, every block once); with vdbench's
/// default random seeks and maxdata=8m, each writes the first half of its part in order and nothing else.
#[test]
fn streams_write_each_part_of_the_lun_sequentially_from_its_start() {
    for (seek, maxdata, written) in [(",seekpct=eof", "", 1024), ("", ",maxdata=8m", 512)] {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "sd=sd1,lun=DIR/lun1,size=16m,threads=6\nwd=wd1,sd=sd1,xfersize=64k,rdpct=0{seek},streams=4\n\
             rd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1{maxdata}\n"
        );
        let result = run(dir.path(), &text, &["--keep", "--ramp", "0s"]);
        assert_eq!(result["phases"][0]["write"]["ops"].as_u64(), Some(written / 16 * 4), "{seek}{maxdata}");
        let config = &result["config"]["phases"][0];
        assert_eq!((config["jobs"].as_u64(), config["iodepth"].as_u64()), (Some(4), Some(2)), "6 threads raised to 8");
        // Block b of stream k (its b-th 4 KiB) holds that stream's write b / 16 (each stream counts its own).
        for (block, &(offset, counter)) in stamps_of(dir.path(), "lun1").iter().enumerate() {
            let (stream, b) = (block / 1024, (block % 1024) as u64);
            if b < written {
                assert_eq!((offset, counter), (block as u64 * 4096, b / 16), "stream {stream}, block {b}");
            } else {
                assert_eq!((offset, counter), (0, 0), "stream {stream}, block {b}: written past maxdata");
            }
        }
    }
}

/// streams=2 on a wd over two 8 MiB sds: each sd is cut into its own two streams (four workers in all), and with
/// seekpct=eof each stream writes its 4 MiB once, in order.
#[test]
fn a_streamed_wd_on_two_sds_cuts_each_sd_into_its_streams() {
    let dir = tempfile::tempdir().unwrap();
    let text = "sd=sd1,lun=DIR/lun1,size=8m,threads=4\nsd=sd2,lun=DIR/lun2,size=8m,threads=4\n\
                wd=wd1,sd=sd*,xfersize=64k,rdpct=0,seekpct=eof,streams=2\nrd=rd1,wd=wd1,iorate=max,elapsed=600,interval=1\n";
    let result = run(dir.path(), text, &["--keep"]);
    let phase = &result["phases"][0];
    assert_eq!((phase["status"].as_str(), phase["write"]["ops"].as_u64()), (Some("completed"), Some(256)));
    assert_eq!(phase["jobs"].as_u64(), Some(4), "two streams on each of two sds");
    for lun in ["lun1", "lun2"] {
        for (block, &(offset, counter)) in stamps_of(dir.path(), lun).iter().enumerate() {
            assert_eq!((offset, counter), (block as u64 * 4096, (block as u64 % 1024) / 16), "{lun} block {block}");
        }
    }
}
