//! Ctrl-C, SIGTERM and SIGHUP: the first asks the run to stop cleanly (workers drain what is in flight, the
//! partial result is written, data files are removed); the second exits at once with status 130. SIGHUP (the
//! terminal or SSH session went away) is a request to stop like the others: by default it would kill the run as
//! SIGKILL does, leaving its data files behind.
//!
//! SIGXFSZ (a write past the file size limit, `ulimit -f`) would kill the process without a word and leave its
//! data files: it is caught instead, so the write fails with EFBIG and is reported like any failed write (with
//! the limit's figure, `limits::errno_hint`), and the run stops cleanly.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGXFSZ};
use signal_hook::flag;

/// Exit status after an interruption (128 + SIGINT), as shells report it.
pub const INTERRUPTED_EXIT: i32 = 130;

/// Catches SIGXFSZ for the rest of the process's life, so a write past `ulimit -f` returns EFBIG instead of
/// killing the process. Called once, first thing, by every command (they all write files).
pub fn survive_file_size_limit() -> io::Result<()> {
    // A caught signal is not the default action (terminate): the kernel then fails the write with EFBIG. The
    // flag itself is not read; the failed write carries everything there is to say.
    flag::register(SIGXFSZ, Arc::new(AtomicBool::new(false))).map(drop)
}

/// The run-wide stop flag.
#[derive(Clone, Debug, Default)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
}

impl Interrupt {
    /// Installs the handlers. Order matters: the conditional exit is registered first, so it sees the flag as it
    /// was before this signal set it — false the first time (stop cleanly), true the second (exit now).
    pub fn install() -> io::Result<Interrupt> {
        let interrupt = Interrupt::default();
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            flag::register_conditional_shutdown(signal, INTERRUPTED_EXIT, interrupt.flag.clone())?;
            flag::register(signal, interrupt.flag.clone())?;
        }
        Ok(interrupt)
    }

    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    pub fn set(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }
}
