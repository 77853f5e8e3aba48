//! The aligned buffer pool: one page-aligned buffer per in-flight slot, carved from a single anonymous mapping.
//!
//! O_DIRECT needs the buffer address, the length and the file offset aligned (statx DIOALIGN; 4096 is safe
//! everywhere). An anonymous `mmap` is page aligned, and every slot is a multiple of the page size, so every slot
//! is aligned too. The pool is allocated once per worker; the hot loop only indexes into it.

use memmap2::MmapMut;

use super::{EngineError, page_round_up};

pub struct BufferPool {
    map: MmapMut,
    slot_size: usize,
    slots: usize,
}

impl BufferPool {
    /// `slots` buffers of at least `size` bytes each (rounded up to whole pages).
    pub fn new(slots: usize, size: usize) -> Result<BufferPool, EngineError> {
        let slot_size = page_round_up(size.max(1));
        let bytes = slot_size * slots.max(1);
        let map = MmapMut::map_anon(bytes).map_err(|cause| EngineError::Buffers { bytes, cause })?;
        Ok(BufferPool { map, slot_size, slots: slots.max(1) })
    }

    /// Touches every page once, so none is faulted in by a later read (btrfs's direct reads take a fault as a
    /// reason to read through the page cache; `engine::btrfs_direct`). Writes zeros: the pool's contents are
    /// the engines' anyway.
    pub fn prefault(&mut self) {
        self.map.iter_mut().step_by(4096).for_each(|byte| *byte = 0);
    }

    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn slot(&self, slot: u32) -> &[u8] {
        let start = slot as usize * self.slot_size;
        &self.map[start..start + self.slot_size]
    }

    pub fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        let start = slot as usize * self.slot_size;
        &mut self.map[start..start + self.slot_size]
    }

    /// Start address of a slot, for engines that hand raw pointers to the kernel.
    pub fn slot_ptr(&mut self, slot: u32) -> *mut u8 {
        self.slot_mut(slot).as_mut_ptr()
    }

    /// One iovec per slot, for io_uring buffer registration.
    pub fn iovecs(&mut self) -> Vec<libc::iovec> {
        (0..self.slots as u32)
            .map(|slot| libc::iovec { iov_base: self.slot_ptr(slot).cast(), iov_len: self.slot_size })
            .collect()
    }
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BufferPool({} × {} bytes)", self.slots, self.slot_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_page_aligned_and_disjoint() {
        let mut pool = BufferPool::new(4, 5000).unwrap();
        assert_eq!(pool.slot_size(), 8192);
        for slot in 0..4 {
            assert_eq!(pool.slot_ptr(slot) as usize % 4096, 0);
        }
        pool.slot_mut(1).fill(7);
        assert!(pool.slot(0).iter().all(|&b| b == 0));
        assert!(pool.slot(1).iter().all(|&b| b == 7));
        assert!(pool.slot(2).iter().all(|&b| b == 0));
    }
}
