//! [`AlignedBuf`]: the crate's one aligned byte buffer (for `O_DIRECT`
//! blocks, the D-disk layer's blocks and the sort's buffers).

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;

/// A zeroed byte buffer whose start is aligned to a chosen power of two,
/// growable keeping its contents.
///
/// One type serves every buffer that needs more alignment than `Vec<u8>`
/// gives:
///
/// - the `direct` stream's block, aligned to what the device asks of
///   `O_DIRECT` transfers (`STATX_DIOALIGN`, 4096 when unknown);
/// - the D-disk layer's [`Block`](crate::disks::Block)s, aligned to 4096;
/// - the sort's run and merge buffers ([`AlignedBuf::new`]: alignment 8), so
///   any part of them that starts at a multiple of 4 or 8 can be viewed as
///   `u32`s or `u64`s.
///
/// The capacity is always a whole number of alignment units (a request is
/// rounded up), so a transfer of the whole buffer has an aligned length. The
/// memory comes from `std::alloc::alloc_zeroed`. With an alignment the C
/// allocator gives by itself (up to 16, so the sort's 8) that is `calloc`,
/// whose large buffers are fresh zero pages from the kernel, touched (made
/// resident) only when written; a larger alignment is zeroed when allocated
/// (std writes the zeros), as the `O_DIRECT` buffers always were. A buffer
/// of capacity 0 (and [`AlignedBuf::default`]) allocates nothing.
///
/// ```
/// use emsort_io::AlignedBuf;
/// let mut b = AlignedBuf::with_align(5000, 4096);
/// assert_eq!(b.capacity(), 8192);
/// assert_eq!(b.bytes().as_ptr() as usize % 4096, 0);
/// b.bytes_mut()[..3].copy_from_slice(b"abc");
/// b.grow_to(10_000);
/// assert_eq!(b.capacity(), 12288);
/// assert_eq!(&b.bytes()[..4], b"abc\0");
/// ```
pub struct AlignedBuf {
    /// The allocation, or a dangling pointer with the alignment when
    /// `allocated` is 0.
    ptr: NonNull<u8>,
    /// Bytes in use and initialised (zeroed or written), a multiple of
    /// `align`.
    capacity: usize,
    /// Bytes allocated (0: nothing allocated), at least `capacity`, a
    /// multiple of `align`; past `capacity` they are not initialised.
    allocated: usize,
    align: usize,
}

// SAFETY: an `AlignedBuf` owns its memory exclusively, as a `Vec<u8>` does,
// and has no interior mutability: moving it to another thread moves that
// ownership.
unsafe impl Send for AlignedBuf {}
// SAFETY: through `&AlignedBuf` only `&[u8]` is handed out; writing needs
// `&mut AlignedBuf`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of at least `bytes` bytes (rounded up to a multiple
    /// of 8), aligned to 8: parts of it that start at a multiple of 8 can be
    /// viewed as `u64`s.
    pub fn new(bytes: usize) -> AlignedBuf {
        AlignedBuf::with_align(bytes, 8)
    }

    /// A zeroed buffer of at least `bytes` bytes (rounded up to a multiple
    /// of `align`) whose start is aligned to `align`.
    ///
    /// # Panics
    ///
    /// If `align` is not a power of two, or the size overflows `isize`.
    pub fn with_align(bytes: usize, align: usize) -> AlignedBuf {
        assert!(align.is_power_of_two(), "alignment {align} is not a power of two");
        let capacity = round_up(bytes, align);
        if capacity == 0 {
            return AlignedBuf {
                ptr: NonNull::new(std::ptr::without_provenance_mut(align)).expect("align > 0"),
                capacity: 0,
                allocated: 0,
                align,
            };
        }
        let layout = layout(capacity, align);
        // SAFETY: `layout` has a non-zero size (`capacity` > 0).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, capacity, allocated: capacity, align }
    }

    /// Capacity in bytes (a multiple of [`AlignedBuf::align`]).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The alignment of the buffer's start, in bytes.
    pub fn align(&self) -> usize {
        self.align
    }

    /// Grows the buffer to at least `bytes` bytes (rounded up to a multiple
    /// of the alignment), keeping its contents; the new bytes are zero. Does
    /// nothing when the buffer is already as large.
    ///
    /// As a `Vec` grows: when the allocation is too small it at least
    /// doubles, through `realloc` (which moves a large allocation's pages
    /// instead of copying them, and never holds two copies resident), so a
    /// buffer grown a block at a time is reallocated O(log n) times; the
    /// bytes that join the capacity are zeroed.
    pub fn grow_to(&mut self, bytes: usize) {
        if bytes <= self.capacity {
            return;
        }
        if self.allocated == 0 {
            // Nothing to keep: a fresh zeroed allocation.
            *self = AlignedBuf::with_align(bytes, self.align);
            return;
        }
        let capacity = round_up(bytes, self.align);
        if capacity > self.allocated {
            // Both multiples of the alignment (`allocated` is).
            let allocated = capacity.max(self.allocated.saturating_mul(2));
            let old = layout(self.allocated, self.align);
            let new = layout(allocated, self.align);
            // SAFETY: `ptr` was allocated with `old` (by `with_align` or an
            // earlier `realloc` here), `allocated` is non-zero and `new`
            // checked that it rounds up to at most `isize::MAX`.
            let ptr = unsafe { std::alloc::realloc(self.ptr.as_ptr(), old, allocated) };
            self.ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(new));
            self.allocated = allocated;
        }
        // SAFETY: `capacity` ≤ `allocated`, so the range written is inside
        // the allocation; zeroing it initialises the bytes that join.
        unsafe { self.ptr.as_ptr().add(self.capacity).write_bytes(0, capacity - self.capacity) };
        self.capacity = capacity;
    }

    /// The whole buffer, [`capacity`](AlignedBuf::capacity) bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `capacity` bytes, all initialised
        // (zeroed at allocation), and aligned (a dangling but aligned,
        // non-null pointer when `capacity` is 0, which a slice allows).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.capacity) }
    }

    /// The whole buffer, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.capacity) }
    }
}

/// `bytes` rounded up to a multiple of `align`.
fn round_up(bytes: usize, align: usize) -> usize {
    bytes.div_ceil(align).checked_mul(align).expect("buffer size fits in usize")
}

/// The layout of an allocation of `capacity` bytes aligned to `align`.
fn layout(capacity: usize, align: usize) -> Layout {
    Layout::from_size_align(capacity, align).expect("buffer size fits in isize")
}

impl Default for AlignedBuf {
    /// An empty buffer (nothing allocated), aligned to 8.
    fn default() -> AlignedBuf {
        AlignedBuf::new(0)
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.allocated > 0 {
            // SAFETY: allocated (by `with_align` or `grow_to`'s `realloc`)
            // with this very layout, and not freed before.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout(self.allocated, self.align)) }
        }
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf").field("capacity", &self.capacity).field("align", &self.align).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_aligned(b: &AlignedBuf, align: usize) -> bool {
        (b.bytes().as_ptr() as usize).is_multiple_of(align)
    }

    #[test]
    fn aligned_zeroed_and_rounded() {
        for align in [1, 8, 512, 4096, 65536] {
            for bytes in [1, 7, 8, 4095, 4096, 4097, align * 2, 1 << 20] {
                let b = AlignedBuf::with_align(bytes, align);
                assert!(is_aligned(&b, align), "{bytes} {align}");
                assert_eq!(b.align(), align);
                assert_eq!(b.capacity() % align, 0);
                assert!(b.capacity() >= bytes && b.capacity() < bytes + align);
                assert_eq!(b.bytes().len(), b.capacity());
                assert!(b.bytes().iter().all(|&x| x == 0));
            }
        }
    }

    #[test]
    fn new_is_whole_words() {
        assert_eq!(AlignedBuf::new(1).capacity(), 8);
        assert_eq!(AlignedBuf::new(16).capacity(), 16);
        assert_eq!(AlignedBuf::new(17).capacity(), 24);
        let b = AlignedBuf::new(100);
        assert!(is_aligned(&b, 8));
        let _: &[u64] = bytemuck::cast_slice(b.bytes());
    }

    #[test]
    fn zero_size_allocates_nothing_and_stays_aligned() {
        for b in [AlignedBuf::default(), AlignedBuf::new(0), AlignedBuf::with_align(0, 4096)] {
            assert_eq!(b.capacity(), 0);
            assert!(b.bytes().is_empty());
            assert!(is_aligned(&b, b.align()));
        }
        // An empty word buffer still casts to an (empty) `u64` slice.
        let mut b = AlignedBuf::default();
        let words: &mut [u64] = bytemuck::cast_slice_mut(b.bytes_mut());
        assert!(words.is_empty());
    }

    #[test]
    fn growth_keeps_bytes_and_zeroes_the_rest() {
        for align in [8, 4096] {
            let mut b = AlignedBuf::with_align(0, align);
            b.grow_to(10);
            let n = b.capacity();
            for (i, x) in b.bytes_mut().iter_mut().enumerate() {
                *x = (i % 251) as u8 + 1;
            }
            b.grow_to(5); // smaller: nothing happens
            assert_eq!(b.capacity(), n);
            b.grow_to(3 * align + 1);
            assert_eq!(b.capacity(), 4 * align);
            assert!(is_aligned(&b, align));
            assert!(b.bytes()[..n].iter().enumerate().all(|(i, &x)| x == (i % 251) as u8 + 1));
            assert!(b.bytes()[n..].iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn growth_a_block_at_a_time_reallocates_rarely_and_keeps_everything() {
        for align in [8, 4096] {
            let mut b = AlignedBuf::with_align(1, align);
            let (mut reallocs, mut allocated) = (0, b.allocated);
            let mut len = 0;
            while len < 1 << 20 {
                b.grow_to(len + 1000);
                if b.allocated != allocated {
                    (reallocs, allocated) = (reallocs + 1, b.allocated);
                }
                assert!(is_aligned(&b, align));
                assert_eq!(b.capacity(), (len + 1000).div_ceil(align) * align);
                assert!(b.allocated >= b.capacity() && b.allocated.is_multiple_of(align));
                assert!(b.bytes()[len..].iter().all(|&x| x == 0), "{align} {len}");
                for i in len..len + 1000 {
                    b.bytes_mut()[i] = (i % 253) as u8;
                }
                len += 1000;
            }
            assert!(b.bytes()[..len].iter().enumerate().all(|(i, &x)| x == (i % 253) as u8));
            // Doubling: about log2(2^20 / 1000) reallocations, not 1000.
            assert!(reallocs <= 15, "{align}: {reallocs}");
        }
    }

    #[test]
    fn send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<AlignedBuf>();
        let mut b = AlignedBuf::new(64);
        b.bytes_mut()[63] = 9;
        let b = std::thread::spawn(move || b).join().unwrap();
        assert_eq!(b.bytes()[63], 9);
    }

    #[test]
    #[should_panic(expected = "not a power of two")]
    fn alignment_must_be_a_power_of_two() {
        AlignedBuf::with_align(16, 24);
    }
}
