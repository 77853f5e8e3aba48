//! The result file's guard against a kill soon after Ctrl-C: the moment the interrupt flag is set, it rewrites
//! the last saved result marked `interrupted`, unless the recorder has saved since.
//!
//! Why: under mpirun, Ctrl-C gives each rank one second after its SIGTERM before SIGKILL (Open MPI 4.1's
//! `odls_base_sigkill_timeout`), and rank 0 marks the result interrupted only once every rank has agreed the
//! phase's end and sent its figures. On a loaded machine that took longer than the second (a CI run): the JSON
//! left behind still said `"status": "running"`, as if the run went on. With the guard, what a SIGKILL leaves
//! says the run was interrupted, with what had been measured when the flag was set; the recorder's own later
//! saves replace it with the merged figures whenever there is time for them.
//!
//! Both write under one lock, and the guard writes only a result older than any the recorder saves after the
//! flag, so the newest result is always the one left on disk.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::results::{ResultIoError, RunResult, RunStatus, write_result_atomically};
use crate::run::Interrupt;

/// How often the guard looks at the flag: a fraction of the second mpirun leaves.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// What the recorder and the guard share.
struct Saved {
    /// The result as last saved before the flag was set.
    last: Option<RunResult>,
    /// The recorder has saved since the flag was set: its file is newer than `last`.
    saved_after_flag: bool,
}

pub struct InterruptGuard {
    path: PathBuf,
    shared: Arc<Mutex<Saved>>,
    flag: Arc<AtomicBool>,
    over: Arc<AtomicBool>,
    watcher: Option<JoinHandle<()>>,
}

impl InterruptGuard {
    /// Watches `interrupt` for the result file at `path`.
    pub fn new(interrupt: &Interrupt, path: PathBuf) -> InterruptGuard {
        let shared = Arc::new(Mutex::new(Saved { last: None, saved_after_flag: false }));
        let over = Arc::new(AtomicBool::new(false));
        let (flag, watched, ended, file) = (interrupt.flag(), shared.clone(), over.clone(), path.clone());
        let watcher = std::thread::Builder::new()
            .name("result-guard".into())
            .spawn(move || {
                while !ended.load(Ordering::Relaxed) {
                    if flag.load(Ordering::Relaxed) {
                        save_interrupted(&watched, &file);
                        return;
                    }
                    std::thread::sleep(LOOK_EVERY);
                }
            })
            .ok();
        InterruptGuard { path, shared, flag: interrupt.flag(), over, watcher }
    }

    /// The recorder's save of `result` to the guarded file, under the guard's lock. After the flag, the result is
    /// marked interrupted whatever the phases said so far.
    pub fn save(&self, result: &mut RunResult) -> Result<(), ResultIoError> {
        let mut saved = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        if self.flag.load(Ordering::Relaxed) {
            result.status = RunStatus::Interrupted;
            saved.saved_after_flag = true;
            saved.last = None;
        } else {
            saved.last = Some(result.clone());
        }
        write_result_atomically(result, &self.path)
    }
}

/// The guard's one write: the last saved result, marked interrupted, unless the recorder saved since the flag.
fn save_interrupted(shared: &Mutex<Saved>, path: &std::path::Path) {
    let mut saved = shared.lock().unwrap_or_else(|p| p.into_inner());
    if saved.saved_after_flag {
        return;
    }
    if let Some(mut last) = saved.last.take() {
        last.status = RunStatus::Interrupted;
        // A failure here is the recorder's to report: its own next save meets it too.
        let _ = write_result_atomically(&last, path);
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        self.over.store(true, Ordering::Relaxed);
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: RunStatus, note: &str) -> RunResult {
        let text = include_str!("../../../tests/fixtures/check-v2.json");
        let mut result = crate::results::parse_result(std::path::Path::new("check-v2.json"), text).expect("a result");
        result.status = status;
        result.notices = vec![note.to_string()];
        result
    }

    fn written(path: &std::path::Path) -> RunResult {
        crate::results::read_result(path).expect("the guarded file")
    }

    fn wait_until(done: impl Fn() -> bool) {
        let give_up = std::time::Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(std::time::Instant::now() < give_up, "the guard did not write");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A guard of a file in a directory of its own, with its flag.
    fn guarded() -> (tempfile::TempDir, std::path::PathBuf, Interrupt, InterruptGuard) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("r.json");
        let interrupt = Interrupt::default();
        let guard = InterruptGuard::new(&interrupt, path.clone());
        (dir, path, interrupt, guard)
    }

    /// Guards the JSON that still said "running" after mpirun's SIGKILL: once the flag is set and the recorder
    /// does not save again, the file says interrupted, with what was saved before.
    #[test]
    fn the_last_saved_result_is_marked_interrupted_as_soon_as_the_flag_is_set() {
        let (_dir, path, interrupt, guard) = guarded();
        guard.save(&mut result(RunStatus::Running, "first phase started")).expect("saved");
        assert_eq!(written(&path).status, RunStatus::Running);
        interrupt.set();
        wait_until(|| written(&path).status == RunStatus::Interrupted);
        assert_eq!(written(&path).notices, ["first phase started"]);
        drop(guard);
    }

    /// The recorder's saves after the flag win: the guard never writes an older result over them.
    #[test]
    fn a_save_after_the_flag_is_never_replaced_by_the_older_one() {
        let (_dir, path, interrupt, guard) = guarded();
        guard.save(&mut result(RunStatus::Running, "older")).expect("saved");
        // The guard may write the older one before the newer save or not at all: either way the newer is left.
        interrupt.set();
        let mut newer = result(RunStatus::Running, "newer");
        guard.save(&mut newer).expect("saved");
        assert_eq!(newer.status, RunStatus::Interrupted, "a save after the flag is marked interrupted");
        drop(guard);
        let left = written(&path);
        assert_eq!((left.status, left.notices), (RunStatus::Interrupted, vec!["newer".to_string()]));
    }

    /// A run that ends without Ctrl-C: the guard's thread ends with the recorder and never writes.
    #[test]
    fn without_the_flag_the_guard_writes_nothing() {
        let (_dir, path, _interrupt, guard) = guarded();
        guard.save(&mut result(RunStatus::Completed, "done")).expect("saved");
        drop(guard);
        assert_eq!(written(&path).status, RunStatus::Completed);
    }
}
