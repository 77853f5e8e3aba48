//! Where a rank's incoming messages wait until someone asks for them: filed by [`Key`] (what the message is
//! about), so that several threads — a phase's stop link, an exchange, the app's interval merger — can each wait
//! for their own without taking one another's. Also the envelope a key travels in, and when each rank was last
//! heard from (any message counts; heartbeats are only that and are never filed), for `Cluster`'s watch.

use std::collections::{HashMap, VecDeque};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// What a message is about: a kind and two numbers (a phase index and a step, say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub kind: u8,
    pub a: u64,
    pub b: u64,
}

impl Key {
    /// Host names, when the ranks join.
    pub const HOSTS: u8 = 1;
    /// A phase's start agreement (a = phase, b = step).
    pub const START: u8 = 2;
    /// A phase's end agreement.
    pub const END: u8 = 3;
    /// A rank's workers of a phase have all ended (to rank 0).
    pub const DONE: u8 = 4;
    /// Rank 0 tells a rank to stop a phase.
    pub const STOP: u8 = 5;
    /// A stream step's outcome, merged over ranks.
    pub const STEP: u8 = 6;
    /// Whether every rank goes on to a stage (a = the stage's first phase).
    pub const GATE: u8 = 7;
    /// What a phase measured over all ranks (a = phase).
    pub const MEASURED: u8 = 8;
    /// What a rank's members of a phase's held-shares flow issued and weigh (a = phase, b = step).
    pub const SHARES: u8 = 9;
    /// A sign of life, nothing else (`Cluster`'s watch): counted as heard, never filed.
    pub const HEARTBEAT: u8 = 10;
    /// Kinds from here up belong to the caller of the run layer (the app).
    pub const USER: u8 = 32;
    /// Set on the kind of rank 0's answer to an exchange.
    const REPLY: u8 = 0x80;

    pub const fn new(kind: u8, a: u64, b: u64) -> Key {
        Key { kind, a, b }
    }

    /// The key of rank 0's answer to an exchange under this key.
    pub fn reply(self) -> Key {
        Key { kind: self.kind | Key::REPLY, ..self }
    }

    /// Length of the envelope header.
    pub const HEADER: usize = 17;

    /// The envelope: key, then payload.
    pub fn wrap(self, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(Key::HEADER + payload.len());
        out.push(self.kind);
        out.extend_from_slice(&self.a.to_le_bytes());
        out.extend_from_slice(&self.b.to_le_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// Splits an envelope into its key and payload.
    pub fn unwrap(bytes: &[u8]) -> Option<(Key, &[u8])> {
        let header = bytes.get(..Key::HEADER)?;
        let a = u64::from_le_bytes(header[1..9].try_into().ok()?);
        let b = u64::from_le_bytes(header[9..17].try_into().ok()?);
        Some((Key { kind: header[0], a, b }, &bytes[Key::HEADER..]))
    }
}

/// Messages under one key, oldest first: (sender's rank, payload).
type Queue = VecDeque<(u32, Vec<u8>)>;

/// Messages that have arrived and not yet been taken, by key.
#[derive(Default)]
pub struct Mailbox {
    queues: Mutex<HashMap<Key, Queue>>,
    arrived: Condvar,
    /// When each rank's last message arrived.
    heard: Mutex<HashMap<u32, Instant>>,
}

impl Mailbox {
    pub fn new() -> Mailbox {
        Mailbox::default()
    }

    /// Files a message from rank `from`.
    pub fn deliver(&self, from: u32, key: Key, payload: Vec<u8>) {
        self.heard.lock().unwrap_or_else(|p| p.into_inner()).insert(from, Instant::now());
        if key.kind == Key::HEARTBEAT {
            return;
        }
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        queues.entry(key).or_default().push_back((from, payload));
        self.arrived.notify_all();
    }

    /// When a message from `rank` last arrived (`None`: never).
    pub fn heard(&self, rank: u32) -> Option<Instant> {
        self.heard.lock().unwrap_or_else(|p| p.into_inner()).get(&rank).copied()
    }

    /// Wakes every waiter, to look again at what it waits for (a rank was declared lost).
    pub fn wake(&self) {
        let _queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        self.arrived.notify_all();
    }

    /// The oldest message under `key`, waiting up to `timeout` for one.
    pub fn wait(&self, key: Key, timeout: Duration) -> Option<(u32, Vec<u8>)> {
        let until = Instant::now() + timeout;
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(queue) = queues.get_mut(&key)
                && let Some(message) = queue.pop_front()
            {
                if queue.is_empty() {
                    queues.remove(&key);
                }
                return Some(message);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            queues = self.arrived.wait_timeout(queues, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_round_trip() {
        let key = Key::new(Key::DONE, 7, u64::MAX);
        let wrapped = key.wrap(b"xyz");
        assert_eq!(Key::unwrap(&wrapped), Some((key, &b"xyz"[..])));
        assert_eq!(Key::unwrap(&wrapped[..5]), None);
        assert_ne!(key.reply(), key);
    }

    #[test]
    fn messages_wait_under_their_own_key_in_order() {
        let mailbox = Mailbox::new();
        let (a, b) = (Key::new(Key::DONE, 1, 0), Key::new(Key::DONE, 2, 0));
        mailbox.deliver(1, a, vec![1]);
        mailbox.deliver(2, b, vec![2]);
        mailbox.deliver(3, a, vec![3]);
        assert_eq!(mailbox.wait(b, Duration::ZERO), Some((2, vec![2])));
        assert_eq!(mailbox.wait(a, Duration::ZERO), Some((1, vec![1])));
        assert_eq!(mailbox.wait(a, Duration::ZERO), Some((3, vec![3])));
        assert_eq!(mailbox.wait(a, Duration::from_millis(1)), None);
    }

    #[test]
    fn heartbeats_count_as_heard_and_are_not_filed() {
        let mailbox = Mailbox::new();
        let beat = Key::new(Key::HEARTBEAT, 0, 0);
        assert_eq!(mailbox.heard(2), None);
        mailbox.deliver(2, beat, Vec::new());
        assert!(mailbox.heard(2).is_some());
        assert_eq!(mailbox.heard(1), None);
        assert_eq!(mailbox.wait(beat, Duration::ZERO), None);
    }
}
