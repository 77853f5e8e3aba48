//! One conformance body run over every real engine: write a known pattern with O_DIRECT, read it back through
//! the same engine, compare bytes; check that a misaligned O_DIRECT request fails with EINVAL rather than being
//! silently turned into buffered I/O; check fsync and errors per request.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

mod common;

use streamcap::engine::{AnyEngine, Completion, Engine, EngineKind, EngineSetup, OpKind, Request, Wait};

const BLOCK: usize = 64 * 1024;
const DEPTH: u32 = 8;

fn open_direct(path: &std::path::Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .expect("open with O_DIRECT on the temp filesystem")
}

fn engines_here() -> Vec<EngineKind> {
    let mut kinds = vec![EngineKind::Sync];
    match streamcap::engine::io_uring_available() {
        Ok(()) => kinds.push(EngineKind::IoUring),
        Err(e) => eprintln!("SKIPPING io_uring conformance: io_uring is not available here ({e})"),
    }
    kinds
}

fn build(kind: EngineKind, files: Vec<File>) -> AnyEngine {
    AnyEngine::build(EngineSetup { files, ..EngineSetup::new(kind, DEPTH, BLOCK) }).expect("engine builds")
}

/// Pattern byte for (block, position): differs per block so a read from the wrong offset is caught.
fn pattern(block: u64, i: usize) -> u8 {
    (block as usize * 31 + i * 7 + (i >> 8)) as u8
}

/// Issues `requests` keeping at most the engine's depth in flight; returns completions in arrival order.
fn run_all<E: Engine>(engine: &mut E, requests: &[Request]) -> Vec<Completion> {
    let depth = engine.caps().queue_depth as usize;
    let mut done = Vec::new();
    let mut next = 0;
    while done.len() < requests.len() {
        while next < requests.len() && engine.in_flight() < depth {
            let accepted = engine.submit(&requests[next..next + 1]).expect("submit");
            next += accepted;
            if accepted == 0 {
                break;
            }
        }
        engine.reap(1, Wait::Forever, &mut done).expect("reap");
    }
    done
}

fn conformance<E: Engine>(engine: &mut E, blocks: u64) {
    let depth = engine.caps().queue_depth;
    // Write every block with its own pattern, using slots round-robin (slot reuse only after completion).
    for chunk_start in (0..blocks).step_by(depth as usize) {
        let chunk_end = (chunk_start + u64::from(depth)).min(blocks);
        let mut batch = Vec::new();
        for (slot, block) in (chunk_start..chunk_end).enumerate() {
            let buffer = engine.buffer_mut(slot as u32);
            for (i, byte) in buffer[..BLOCK].iter_mut().enumerate() {
                *byte = pattern(block, i);
            }
            batch.push(Request {
                slot: slot as u32,
                kind: OpKind::Write,
                file: 0,
                offset: block * BLOCK as u64,
                len: BLOCK as u32,
                prio: 0,
            });
        }
        for c in run_all(engine, &batch) {
            assert_eq!(c.result, Ok(BLOCK as u32), "write slot {}", c.slot);
        }
    }
    let fsync = [Request { slot: 0, kind: OpKind::Fsync, file: 0, offset: 0, len: 0, prio: 0 }];
    assert_eq!(run_all(engine, &fsync)[0].result, Ok(0));
    // Read back in reverse order, clearing the buffers first so stale contents cannot pass.
    for chunk_start in (0..blocks).rev().step_by(depth as usize) {
        let chunk: Vec<u64> = (chunk_start.saturating_sub(u64::from(depth) - 1)..=chunk_start).collect();
        let mut batch = Vec::new();
        for (slot, &block) in chunk.iter().enumerate() {
            engine.buffer_mut(slot as u32).fill(0xEE);
            batch.push(Request {
                slot: slot as u32,
                kind: OpKind::Read,
                file: 0,
                offset: block * BLOCK as u64,
                len: BLOCK as u32,
                prio: 0,
            });
        }
        for c in run_all(engine, &batch) {
            assert_eq!(c.result, Ok(BLOCK as u32), "read slot {}", c.slot);
            let block = chunk[c.slot as usize];
            let buffer = engine.buffer_mut(c.slot);
            for (i, &byte) in buffer[..BLOCK].iter().enumerate() {
                assert_eq!(byte, pattern(block, i), "block {block} byte {i} differs");
            }
        }
    }
    // O_DIRECT alignment: an offset that is not a multiple of the logical block size must fail, not be faked.
    let misaligned = [Request { slot: 0, kind: OpKind::Read, file: 0, offset: 100, len: 4096, prio: 0 }];
    assert_eq!(run_all(engine, &misaligned)[0].result, Err(libc::EINVAL));

    // Reading past the end of the file transfers nothing (a short read), and is not an error.
    let past_end =
        [Request { slot: 0, kind: OpKind::Read, file: 0, offset: blocks * BLOCK as u64, len: 4096, prio: 0 }];
    assert_eq!(run_all(engine, &past_end)[0].result, Ok(0));
}

#[test]
fn every_engine_writes_and_reads_back_a_pattern_with_o_direct() {
    for kind in engines_here() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conformance.dat");
        let blocks = 48;
        let engine = build(kind, vec![open_direct(&path)]);
        match engine {
            AnyEngine::Sync(mut e) => conformance(&mut e, blocks),
            AnyEngine::IoUring(mut e) => conformance(&mut e, blocks),
            AnyEngine::Null(_) => unreachable!("the null engine stores nothing"),
            AnyEngine::Http(_) => unreachable!("not built here"),
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), blocks * BLOCK as u64, "{kind:?}");
    }
}

#[test]
fn every_engine_reports_a_bad_descriptor_per_request() {
    for kind in engines_here() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("readonly.dat");
        std::fs::write(&path, vec![0u8; 8192]).unwrap();
        // Opened read-only: a write must come back as EBADF in its completion, not as an engine failure.
        let file = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&path).unwrap();
        let write = [Request { slot: 0, kind: OpKind::Write, file: 0, offset: 0, len: 4096, prio: 0 }];
        let result = match build(kind, vec![file]) {
            AnyEngine::Sync(mut e) => run_all(&mut e, &write)[0].result,
            AnyEngine::IoUring(mut e) => run_all(&mut e, &write)[0].result,
            AnyEngine::Null(_) => unreachable!(),
            AnyEngine::Http(_) => unreachable!("not built here"),
        };
        assert_eq!(result, Err(libc::EBADF), "{kind:?}");
    }
}

#[test]
fn every_engine_reads_a_request_longer_than_its_buffer_through_the_buffer() {
    // The stream driver reads 1 MiB chunks through 256 KiB slot buffers (unpinned): one request, the whole
    // length transferred, the buffer holding the last piece.
    const PIECE: usize = 16 * 1024;
    for kind in engines_here() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("through.dat");
        let data: Vec<u8> = (0..BLOCK).map(|i| pattern(3, i)).collect();
        std::fs::write(&path, &data).unwrap();
        let file = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&path).unwrap();
        let setup = EngineSetup {
            max_transfer: BLOCK,
            pin_buffers: false,
            files: vec![file],
            ..EngineSetup::new(kind, 2, PIECE)
        };
        let read = [Request { slot: 0, kind: OpKind::Read, file: 0, offset: 0, len: BLOCK as u32, prio: 0 }];
        let (result, last) = match AnyEngine::build(setup).expect("engine builds") {
            AnyEngine::Sync(mut e) => (run_all(&mut e, &read)[0].result, e.buffer_mut(0).to_vec()),
            AnyEngine::IoUring(mut e) => (run_all(&mut e, &read)[0].result, e.buffer_mut(0).to_vec()),
            AnyEngine::Null(_) => unreachable!(),
            AnyEngine::Http(_) => unreachable!("not built here"),
        };
        assert_eq!(result, Ok(BLOCK as u32), "{kind:?}: the whole request is transferred");
        assert_eq!(last.len(), PIECE, "{kind:?}: the slot's buffer stays small");
        assert!(last == data[BLOCK - PIECE..], "{kind:?}: the buffer holds the last piece");
    }
}

#[test]
fn the_io_uring_engine_hands_each_request_s_priority_to_the_kernel() {
    if !engines_here().contains(&EngineKind::IoUring) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prio.dat");
    std::fs::write(&path, vec![0u8; 8192]).unwrap();
    let AnyEngine::IoUring(mut engine) = build(EngineKind::IoUring, vec![open_direct(&path)]) else { unreachable!() };
    let read = |prio| [Request { slot: 0, kind: OpKind::Read, file: 0, offset: 0, len: 4096, prio }];
    // Best effort level 7 and idle are any process's to use; class 7 does not exist, so the kernel refuses it:
    // the value reached the kernel.
    assert_eq!(run_all(&mut engine, &read(2 << 13 | 7))[0].result, Ok(4096));
    assert_eq!(run_all(&mut engine, &read(3 << 13))[0].result, Ok(4096));
    assert_eq!(run_all(&mut engine, &read(7 << 13))[0].result, Err(libc::EINVAL));
}

/// Sectors read by a block device so far (/sys/block/NAME/stat, field 3), in bytes.
fn device_read_bytes(name: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    stat.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap() * 512
}

/// On btrfs, a direct read longer than its slot's buffer reaches the device (issue 24): btrfs serves a vectored
/// direct read whose pieces share one buffer from the page cache, so io_uring reads it as linked pieces. The
/// whole chunk is transferred, the buffer holds its last piece, a chunk crossing the end of the file is short by
/// exactly what is missing, and the device read every byte, a chunk read twice twice. Root only (a btrfs over a
/// loop device).
#[test]
fn on_btrfs_a_direct_read_through_a_smaller_buffer_reaches_the_device() {
    let test = "io_uring reads through a buffer on btrfs";
    if !engines_here().contains(&EngineKind::IoUring) || !common::can_build_btrfs(test) {
        return;
    }
    const CHUNK: usize = 1 << 20;
    const PIECE: usize = 256 << 10;
    let dir = tempfile::tempdir().unwrap();
    let device = common::LoopDevice::new(&dir.path().join("disk.img"), 256 << 20);
    let mkfs = std::process::Command::new("mkfs.btrfs").args(["-f", "-q"]).arg(&device.device).output().unwrap();
    assert!(mkfs.status.success(), "mkfs.btrfs: {}", String::from_utf8_lossy(&mkfs.stderr));
    let mount = common::Mount::new(device.device.to_str().unwrap(), &dir.path().join("fs"), &[]);
    let path = mount.point.join("media.bin");
    let size = CHUNK + CHUNK / 2;
    let data: Vec<u8> = (0..size).map(|i| pattern(i as u64 / 4096, i)).collect();
    std::fs::write(&path, &data).unwrap();
    // Written data stays in the page cache: drop this file's, so a read that went buffered would be seen.
    let written = File::open(&path).unwrap();
    written.sync_all().unwrap();
    rustix::fs::fadvise(&written, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    let file = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&path).unwrap();
    let setup = EngineSetup {
        max_transfer: CHUNK,
        pin_buffers: false,
        files: vec![file],
        ..EngineSetup::new(EngineKind::IoUring, 2, PIECE)
    };
    let AnyEngine::IoUring(mut engine) = AnyEngine::build(setup).expect("engine builds") else { unreachable!() };
    let before = device_read_bytes(&device.name());
    let read = |offset: u64| [Request { slot: 0, kind: OpKind::Read, file: 0, offset, len: CHUNK as u32, prio: 0 }];
    // The first chunk twice: a read served from the page cache would leave the device idle the second time.
    for _ in 0..2 {
        assert_eq!(run_all(&mut engine, &read(0))[0].result, Ok(CHUNK as u32), "the whole chunk");
        assert!(engine.buffer_mut(0)[..PIECE] == data[CHUNK - PIECE..CHUNK], "the buffer holds the last piece");
    }
    assert_eq!(run_all(&mut engine, &read(CHUNK as u64))[0].result, Ok((size - CHUNK) as u32), "short at the end");
    let read_by_device = device_read_bytes(&device.name()) - before;
    let transferred = (size + CHUNK) as u64;
    assert!(read_by_device >= transferred, "the device read {read_by_device} B for {transferred} B transferred");
}
