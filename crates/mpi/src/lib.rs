//! Multi-host runs on MPI (cargo feature `mpi`): the [`Transport`] that carries the run layer's messages between
//! ranks over MPI. (Whether a process is a rank at all is `app::cluster::launched_by`.)
//!
//! One service thread per process owns MPI: it initialises it (so it is MPI's "main thread", and MPI needs no
//! more than `MPI_THREAD_FUNNELED`), sends what the run asks to send with non-blocking sends, and while any send
//! is unfinished keeps receiving, so two ranks sending large messages to each other can never wait on each
//! other. Everything that arrives is filed in the rank's [`Mailbox`] by key. No collective MPI call is made:
//! agreements are exchanges through rank 0 (`run::cluster`), keyed by phase, so concurrent phases cannot mix
//! them up. The thread finalises MPI when the transport is dropped, unless the job is being torn down
//! (`skip_finalize`: after Ctrl-C on mpirun, MPI_Finalize waited about 2 s for mpirun, which SIGKILLs the ranks
//! a second after its SIGTERM), nor waits for it when a rank was lost (`abandon`: a send to a host behind a
//! broken link never finishes, and MPI_Finalize would wait for that host).
//!
//! What it must not do: decide anything about the run, or read the job; it only moves bytes.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::run;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use ::mpi::Threading;
use ::mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use ::mpi::topology::{Communicator, SimpleCommunicator};

use crate::run::Transport;
use crate::run::cluster::{Key, Mailbox};

#[derive(Debug, thiserror::Error)]
pub enum MpiError {
    #[error(
        "cannot start MPI (MPI_Init failed or MPI was already started): run streamcap under mpirun or srun from \
         the same MPI installation it was built against (Open MPI: openmpi-bin)"
    )]
    Init,
}

enum Command {
    Send(u32, Vec<u8>),
    /// Send what is queued, then stop; finalise MPI if `true`.
    Shutdown(bool),
}

/// MPI as a [`Transport`].
pub struct MpiTransport {
    rank: u32,
    size: u32,
    mailbox: Arc<Mailbox>,
    commands: Mutex<Sender<Command>>,
    service: Option<JoinHandle<()>>,
    /// Whether MPI is finalised when the transport is dropped.
    finalize: AtomicBool,
    /// A rank was lost: the service thread is left to the process's exit (it may wait for a send forever).
    abandoned: AtomicBool,
}

impl MpiTransport {
    /// Starts MPI on a service thread.
    pub fn start() -> Result<MpiTransport, MpiError> {
        let mailbox = Arc::new(Mailbox::new());
        let (commands, incoming) = mpsc::channel();
        let (said, hear) = mpsc::channel();
        let inbox = mailbox.clone();
        let service = std::thread::Builder::new()
            .name("streamcap-mpi".into())
            .spawn(move || serve(&inbox, &incoming, &said))
            .map_err(|_| MpiError::Init)?;
        let Ok(Some((rank, size))) = hear.recv() else {
            let _ = service.join();
            return Err(MpiError::Init);
        };
        let commands = Mutex::new(commands);
        Ok(MpiTransport {
            rank,
            size,
            mailbox,
            commands,
            service: Some(service),
            finalize: AtomicBool::new(true),
            abandoned: AtomicBool::new(false),
        })
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn send(&self, to: u32, key: Key, payload: Vec<u8>) {
        if to == self.rank {
            self.mailbox.deliver(to, key, payload);
            return;
        }
        let commands = self.commands.lock().unwrap_or_else(|p| p.into_inner());
        // The service thread ends only when the transport is dropped; a send after that has nowhere to go.
        let _ = commands.send(Command::Send(to, key.wrap(&payload)));
    }

    fn mailbox(&self) -> &Mailbox {
        &self.mailbox
    }

    fn skip_finalize(&self) {
        self.finalize.store(false, Ordering::Relaxed);
    }

    fn abandon(&self) {
        self.skip_finalize();
        self.abandoned.store(true, Ordering::Relaxed);
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        let finalize = self.finalize.load(Ordering::Relaxed);
        let _ = self.commands.lock().unwrap_or_else(|p| p.into_inner()).send(Command::Shutdown(finalize));
        if let Some(service) = self.service.take()
            && !self.abandoned.load(Ordering::Relaxed)
        {
            let _ = service.join();
        }
    }
}

/// The service thread: initialise MPI, then send and receive until told to stop; finalise on the way out unless
/// told not to.
fn serve(mailbox: &Mailbox, commands: &Receiver<Command>, said: &Sender<Option<(u32, u32)>>) {
    let Some((universe, _)) = ::mpi::initialize_with_threading(Threading::Funneled) else {
        let _ = said.send(None);
        return;
    };
    let world = universe.world();
    let _ = said.send(Some((world.rank() as u32, world.size() as u32)));
    let finalize = loop {
        let mut outgoing = Vec::new();
        let mut shutdown = None;
        // Wait a little for work; receive in between.
        match commands.recv_timeout(Duration::from_millis(1)) {
            Ok(command) => take(command, &mut outgoing, &mut shutdown),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => shutdown = Some(true),
        }
        while let Ok(command) = commands.try_recv() {
            take(command, &mut outgoing, &mut shutdown);
        }
        send_all(&world, &outgoing, mailbox);
        receive_all(&world, mailbox);
        if let Some(finalize) = shutdown {
            break finalize;
        }
    };
    if finalize {
        drop(universe); // MPI_Finalize
    } else {
        // The process is about to exit; the launcher cleans up after it.
        std::mem::forget(universe);
    }
}

/// Files a command: a message to send, or the order to stop (`Some(finalize)`).
fn take(command: Command, outgoing: &mut Vec<(u32, Vec<u8>)>, shutdown: &mut Option<bool>) {
    match command {
        Command::Send(to, bytes) => outgoing.push((to, bytes)),
        Command::Shutdown(finalize) => *shutdown = Some(finalize),
    }
}

/// Sends every message without blocking, receiving while any is unfinished (a large message waits for its
/// receiver to take it, and that receiver may be sending to us).
fn send_all(world: &SimpleCommunicator, outgoing: &[(u32, Vec<u8>)], mailbox: &Mailbox) {
    if outgoing.is_empty() {
        return;
    }
    ::mpi::request::scope(|scope| {
        let mut requests: Vec<_> = outgoing
            .iter()
            .map(|(to, bytes)| world.process_at_rank(*to as i32).immediate_send(scope, &bytes[..]))
            .collect();
        while !requests.is_empty() {
            requests = requests.into_iter().filter_map(|r| r.test().err()).collect();
            receive_all(world, mailbox);
            if !requests.is_empty() {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    });
}

/// Files every message that has arrived.
fn receive_all(world: &SimpleCommunicator, mailbox: &Mailbox) {
    while let Some(probed) = world.any_process().immediate_matched_probe() {
        let (bytes, status) = probed.matched_receive_vec::<u8>();
        if let Some((key, payload)) = Key::unwrap(&bytes) {
            mailbox.deliver(status.source_rank() as u32, key, payload.to_vec());
        }
    }
}
