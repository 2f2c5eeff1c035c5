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
/// rounded up), so a transfer of the whole buffer has an aligned length. A
/// buffer of 256 KiB or more (`MAP_MIN`; with an alignment of at most a
/// page) is an anonymous mapping of its own: fresh zero pages from the
/// kernel, made resident only when written, grown by `mremap` — which
/// neither copies nor touches the pages that join, so a buffer grown to
/// hold one long line costs that line's size in memory, not the doubled
/// capacity zeroed (issue 37: a 3 GB line took 4.2 GB). Smaller buffers
/// come from `std::alloc::alloc_zeroed` (`calloc` for alignments up to 16;
/// a larger alignment is zeroed when allocated), and a mapping that cannot
/// be made falls back to it. A buffer of capacity 0 (and
/// [`AlignedBuf::default`]) allocates nothing.
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
    /// multiple of `align`; past `capacity` they are not initialised
    /// (zero, in a mapping, never written).
    allocated: usize,
    align: usize,
    /// An anonymous mapping of its own (else the global allocator's).
    mapped: bool,
}

/// The smallest buffer that gets a mapping of its own (as the binary's
/// `M_MMAP_THRESHOLD`).
pub(crate) const MAP_MIN: usize = 256 << 10;

/// A fresh anonymous mapping of `bytes` (a multiple of the page size), or
/// `None` where the kernel refuses it.
fn map_anonymous(bytes: usize) -> Option<NonNull<u8>> {
    // SAFETY: a new private anonymous mapping at an address the kernel
    // chooses; nothing else refers to it.
    let p = unsafe {
        rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            bytes,
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
            rustix::mm::MapFlags::PRIVATE,
        )
    };
    p.ok().and_then(|p| NonNull::new(p.cast()))
}

/// Whether a buffer of `bytes` aligned to `align` gets its own mapping.
fn mappable(bytes: usize, align: usize) -> bool {
    bytes >= MAP_MIN && align <= rustix::param::page_size()
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
                mapped: false,
            };
        }
        if mappable(capacity, align) {
            let allocated = round_up(capacity, rustix::param::page_size());
            if let Some(ptr) = map_anonymous(allocated) {
                return AlignedBuf { ptr, capacity, allocated, align, mapped: true };
            }
        }
        let layout = layout(capacity, align);
        // SAFETY: `layout` has a non-zero size (`capacity` > 0).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, capacity, allocated: capacity, align, mapped: false }
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
            if self.mapped || mappable(allocated, self.align) {
                let allocated = round_up(allocated, rustix::param::page_size());
                if self.remap(allocated) {
                    // The pages that join are the kernel's zero pages.
                    self.capacity = capacity;
                    return;
                }
            }
            let old = layout(self.allocated, self.align);
            let new = layout(allocated, self.align);
            // SAFETY: `ptr` was allocated with `old` (by `with_align` or an
            // earlier `realloc` here), `allocated` is non-zero and `new`
            // checked that it rounds up to at most `isize::MAX`.
            let ptr = unsafe { std::alloc::realloc(self.ptr.as_ptr(), old, allocated) };
            self.ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(new));
            self.allocated = allocated;
        }
        if !self.mapped {
            // SAFETY: `capacity` ≤ `allocated`, so the range written is
            // inside the allocation; zeroing it initialises the bytes that
            // join (a mapping's are zero, never written).
            unsafe { self.ptr.as_ptr().add(self.capacity).write_bytes(0, capacity - self.capacity) };
        }
        self.capacity = capacity;
    }

    /// Grows the buffer to `allocated` bytes (a multiple of the page size)
    /// in a mapping, keeping its contents: `mremap` of its own mapping, or
    /// a new mapping and one copy of a heap buffer. A mapping the kernel
    /// will not grow is copied into a zeroed heap allocation instead (true
    /// either way); a heap buffer the kernel will not map stays as it is
    /// (false: the caller reallocates it).
    fn remap(&mut self, allocated: usize) -> bool {
        if self.mapped {
            // SAFETY: `ptr`/`allocated` are this buffer's own mapping; MAYMOVE
            // lets the kernel move it (no other pointer to it exists).
            let moved = unsafe {
                rustix::mm::mremap(
                    self.ptr.as_ptr().cast(),
                    self.allocated,
                    allocated,
                    rustix::mm::MremapFlags::MAYMOVE,
                )
            };
            if let Some(p) = moved.ok().and_then(|p| NonNull::new(p.cast::<u8>())) {
                self.ptr = p;
                self.allocated = allocated;
                return true;
            }
            // The kernel refused: a heap copy, through the global allocator
            // (which reports exhaustion its own way).
            let new = layout(allocated, self.align);
            // SAFETY: `new` has a non-zero size.
            let p = unsafe { std::alloc::alloc_zeroed(new) };
            let p = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(new));
            // SAFETY: both ranges are valid for `capacity` bytes and distinct.
            unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), p.as_ptr(), self.capacity) };
            // SAFETY: the old mapping, no longer referred to.
            let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.allocated) };
            self.ptr = p;
            self.allocated = allocated;
            self.mapped = false;
            return true;
        }
        let Some(p) = map_anonymous(allocated) else { return false };
        // SAFETY: both ranges are valid for `capacity` bytes and distinct;
        // the old allocation was made with this layout and is freed once.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), p.as_ptr(), self.capacity);
            std::alloc::dealloc(self.ptr.as_ptr(), layout(self.allocated, self.align));
        }
        self.ptr = p;
        self.allocated = allocated;
        self.mapped = true;
        true
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
            if self.mapped {
                // SAFETY: this buffer's own mapping, unmapped once.
                let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.allocated) };
                return;
            }
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

    /// Pages of `b` from byte `from` on that are resident (`mincore`).
    fn resident_pages(b: &AlignedBuf, from: usize) -> usize {
        let page = rustix::param::page_size();
        let start = (b.bytes().as_ptr() as usize + from).div_ceil(page) * page;
        let end = (b.bytes().as_ptr() as usize + b.capacity()) / page * page;
        let mut vec = vec![0u8; (end - start) / page];
        // SAFETY: `[start, end)` lies inside the buffer's mapping.
        let r = unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
        assert_eq!(r, 0);
        vec.iter().filter(|&&v| v & 1 != 0).count()
    }

    /// A large buffer grown to hold one long line touches no page it was
    /// not given data for (issue 37: the zeroing of a doubled buffer took
    /// 1.4 x the line's size).
    #[test]
    fn a_grown_mapping_touches_only_what_is_written() {
        let mut b = AlignedBuf::new(1 << 20);
        assert!(b.mapped);
        b.bytes_mut().fill(7);
        for _ in 0..6 {
            let n = b.capacity();
            b.grow_to(2 * n);
            assert!(b.mapped);
            assert_eq!(resident_pages(&b, n), 0, "growth to {} touched the new pages", b.capacity());
            assert!(b.bytes()[..n].iter().all(|&x| x == 7));
            assert!(b.bytes()[n..].iter().all(|&x| x == 0));
            b.bytes_mut()[n..].fill(7);
        }
        assert!(b.capacity() >= 64 << 20);
        // A small heap buffer that grows past MAP_MIN moves into a mapping.
        let mut h = AlignedBuf::new(100);
        assert!(!h.mapped);
        h.bytes_mut()[..3].copy_from_slice(b"abc");
        h.grow_to(MAP_MIN * 4);
        assert!(h.mapped);
        assert_eq!(&h.bytes()[..4], b"abc\0");
    }
}
