//! [`Block`]: a buffer aligned for `O_DIRECT`, an [`AlignedBuf`] with
//! alignment 4096 that remembers the length it was asked for.

use std::fmt;

use super::layout::DIRECT_ALIGN;
use crate::AlignedBuf;

/// A buffer of `capacity` bytes aligned to 4096, usable with `O_DIRECT`.
///
/// The allocation is rounded up to a whole number of 4096-byte units (at
/// least one), so a short last block of a run can be padded for an
/// `O_DIRECT` transfer inside the allocation. New blocks are zeroed.
///
/// A thin wrapper of [`AlignedBuf`]: what it adds is the usable length
/// (`capacity`, the stripe block B), shorter than the padded allocation.
pub struct Block {
    buf: AlignedBuf,
    capacity: usize,
}

impl Block {
    /// A zeroed buffer of `capacity` bytes, aligned to 4096.
    pub fn new(capacity: usize) -> Block {
        Block { buf: AlignedBuf::with_align(capacity.max(1), DIRECT_ALIGN), capacity }
    }

    /// The usable length in bytes (as asked of [`Block::new`]).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The whole buffer, `capacity` bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf.bytes()[..self.capacity]
    }

    /// The whole buffer, `capacity` bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf.bytes_mut()[..self.capacity]
    }

    /// The whole allocation (`capacity` rounded up to 4096), for padded
    /// `O_DIRECT` transfers.
    pub(crate) fn allocation_mut(&mut self) -> &mut [u8] {
        self.buf.bytes_mut()
    }
}

impl fmt::Debug for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Block").field("capacity", &self.capacity).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_zeroed_and_padded() {
        for cap in [0, 1, 4095, 4096, 4097, 1 << 20] {
            let mut b = Block::new(cap);
            assert_eq!(b.capacity(), cap);
            assert_eq!(b.as_slice().len(), cap);
            assert_eq!(b.as_slice().as_ptr() as usize % DIRECT_ALIGN, 0);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice().fill(7);
            let a = b.allocation_mut();
            assert_eq!(a.len() % DIRECT_ALIGN, 0);
            assert!(a.len() >= cap.max(1));
        }
    }
}
