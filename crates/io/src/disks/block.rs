//! [`Block`]: a buffer aligned for `O_DIRECT`.

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;

use super::layout::DIRECT_ALIGN;

/// A buffer of `capacity` bytes aligned to 4096, usable with `O_DIRECT`.
///
/// The allocation is rounded up to a whole number of 4096-byte units (at
/// least one), so a short last block of a run can be padded for an
/// `O_DIRECT` transfer inside the allocation. New blocks are zeroed.
pub struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
    capacity: usize,
}

// SAFETY: a `Block` owns its memory exclusively, like a `Vec<u8>`.
unsafe impl Send for Block {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for Block {}

impl Block {
    /// A zeroed buffer of `capacity` bytes, aligned to 4096.
    pub fn new(capacity: usize) -> Block {
        let size = capacity.max(1).div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        let layout = Layout::from_size_align(size, DIRECT_ALIGN).expect("block size fits in memory");
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Block { ptr, layout, capacity }
    }

    /// The usable length in bytes (as asked of [`Block::new`]).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The whole buffer, `capacity` bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the allocation holds at least `capacity` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.capacity) }
    }

    /// The whole buffer, `capacity` bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.capacity) }
    }

    /// The whole allocation (`capacity` rounded up to 4096), for padded
    /// `O_DIRECT` transfers.
    pub(crate) fn allocation_mut(&mut self) -> &mut [u8] {
        // SAFETY: the allocation is `layout.size()` initialised bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
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
