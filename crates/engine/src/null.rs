//! The null engine: completes every request without touching storage.
//!
//! Two uses: measuring streamcap's own cost per I/O (like fio's `ioengine=null`), and deterministic tests of the
//! layers above, which can program a delay per batch and faults (an errno for requests touching a byte range) to
//! check how errors are recorded and whether a phase stops or goes on.

use std::time::Duration;

use super::finished::Finished;
use super::{BufferPool, Caps, Completion, Engine, EngineError, EngineKind, FileTable, OpKind, Request, Wait};

/// A fault to inject: requests of `kind` (any kind when None) on `file` that overlap `[from, to)` fail with
/// `errno`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NullFault {
    pub file: u32,
    pub from: u64,
    pub to: u64,
    pub kind: Option<OpKind>,
    pub errno: i32,
}

impl NullFault {
    fn hits(&self, request: &Request) -> bool {
        let end = request.offset + u64::from(request.len.max(1));
        self.file == request.file
            && self.kind.is_none_or(|k| k == request.kind)
            && request.offset < self.to
            && end > self.from
    }
}

pub struct NullEngine {
    buffers: BufferPool,
    latency: Duration,
    faults: Vec<NullFault>,
    finished: Finished,
}

impl NullEngine {
    pub fn new(buffers: BufferPool, latency: Duration, faults: Vec<NullFault>) -> NullEngine {
        let finished = Finished::new(buffers.slots());
        NullEngine { buffers, latency, faults, finished }
    }
}

impl Engine for NullEngine {
    fn caps(&self) -> Caps {
        Caps {
            kind: EngineKind::Null,
            queue_depth: self.buffers.slots() as u32,
            registered_buffers: false,
            registered_files: false,
        }
    }

    fn submit(&mut self, requests: &[Request]) -> Result<usize, EngineError> {
        let faults = &self.faults;
        Ok(self.finished.complete_each(requests, |request| match faults.iter().find(|f| f.hits(request)) {
            Some(fault) => Err(fault.errno),
            None if matches!(request.kind, OpKind::Fsync | OpKind::Fdatasync) => Ok(0),
            None => Ok(request.len),
        }))
    }

    fn reap(&mut self, _min: usize, _wait: Wait, out: &mut Vec<Completion>) -> Result<usize, EngineError> {
        if !self.latency.is_zero() && !self.finished.is_empty() {
            std::thread::sleep(self.latency);
        }
        Ok(self.finished.hand_over(out))
    }

    fn buffer_mut(&mut self, slot: u32) -> &mut [u8] {
        self.buffers.slot_mut(slot)
    }

    fn in_flight(&self) -> usize {
        self.finished.len()
    }

    fn file_table(&mut self) -> &mut dyn FileTable {
        self
    }
}

/// The null engine touches no file: what it is given is closed at once.
impl FileTable for NullEngine {
    fn put(&mut self, _index: u32, _file: Option<std::fs::File>) -> Result<Option<std::fs::File>, EngineError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_hit_only_their_range_and_kind() {
        let fault = NullFault { file: 0, from: 8192, to: 12288, kind: Some(OpKind::Write), errno: libc::EIO };
        let mut engine = NullEngine::new(BufferPool::new(4, 4096).unwrap(), Duration::ZERO, vec![fault]);
        let req = |slot, kind, offset| Request { slot, kind, file: 0, offset, len: 4096, prio: 0 };
        let batch = [
            req(0, OpKind::Write, 8192),
            req(1, OpKind::Read, 8192),
            req(2, OpKind::Write, 4096),
            req(3, OpKind::Write, 12288),
        ];
        assert_eq!(engine.submit(&batch).unwrap(), 4);
        let mut out = Vec::new();
        engine.reap(4, Wait::Forever, &mut out).unwrap();
        let results: Vec<_> = out.iter().map(|c| c.result).collect();
        assert_eq!(results, vec![Err(libc::EIO), Ok(4096), Ok(4096), Ok(4096)]);
    }
}
