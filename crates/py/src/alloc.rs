//! The extension's allocator: blocks of 256 KiB or more mapped on their
//! own, as the `emsort` binary has glibc do.
//!
//! The sort's memory budget holds only when freed large buffers go back to
//! the system (module `plan` of `emsort-sort`, "Where M goes"): the binary
//! sets glibc's `M_MMAP_THRESHOLD` to 256 KiB. An extension module cannot
//! do that without changing the allocator of the whole interpreter (numpy's
//! large temporaries would all be mapped and faulted in afresh), and with
//! glibc's default sliding threshold the threshold climbs to the size of
//! the largest block freed: chunk buffers, pushed blocks and merge blocks
//! then come from the heap, a zeroed one is written in full by `calloc`
//! (so its untouched pages count too) and freed ones stay resident. An
//! `emsort.Sorter` of M = 16 MiB fed 64 MiB peaked at M + 31 MiB that way,
//! M + 22 MiB with the binary's setting.
//!
//! So this global allocator (Rust allocations of this extension only:
//! the sort engine's and the bindings') maps every block of at least
//! [`MIN_LARGE`] bytes with `mmap` (zeroed, untouched pages not resident),
//! grows it with `mremap` and unmaps it when freed; smaller blocks and
//! alignments above a page go to the system allocator. Python's and
//! numpy's own allocations are untouched. Arrays made from sorted blocks
//! (`PyArray1::from_vec`) are freed through Rust's deallocator, so through
//! this one.
//!
//! A sort of tables raises the threshold while it runs
//! ([`table_blocks_to_heap`], as the binary does): Arrow and Parquet
//! allocate and free a batch's buffers (up to a few MiB) for every batch,
//! and mapping each afresh faulted in millions of pages (a 1 GiB Parquet
//! file took 23.8 s, 16.5 s of it in the kernel, where the binary took
//! 18 s). Since a block may be freed after the threshold changed, a freed
//! block's kind is read from the block, not from its size: a mapped block
//! starts a page into its mapping, whose last 16 bytes before the block
//! hold the mapping's length and [`MAGIC`]; in the system allocator's
//! blocks those 8 bytes are glibc's chunk size, which never has bit 63
//! set (so the raise is glibc's only).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Blocks of this many bytes or more are mapped on their own, unless a
/// sort of tables raised the threshold ([`LARGE`]).
pub(crate) const MIN_LARGE: usize = 256 << 10;
/// The threshold now: [`MIN_LARGE`], or more during a sort of tables.
static LARGE: AtomicUsize = AtomicUsize::new(MIN_LARGE);
/// The smallest page size (mappings are page-aligned).
const PAGE: usize = 4096;
/// The mark of a mapped block, in the 8 bytes before it (bit 63 set:
/// never a glibc chunk size).
const MAGIC: u64 = 0xE5E5_0A11_0C00_B10C;

/// System allocator below the threshold, `mmap` at or above it.
pub(crate) struct Allocator;

fn mapped(size: usize, align: usize) -> bool {
    size >= LARGE.load(Ordering::Relaxed) && align <= PAGE
}

/// While a sort of tables of budget `memory` runs (until the guard is
/// dropped): blocks under M/16 (at least 256 KiB, at most 8 MiB) from the
/// system allocator, whose heap keeps freed ones for reuse.
pub(crate) fn table_blocks_to_heap(memory: u64) -> HeapGuard {
    let threshold = if cfg!(all(target_os = "linux", target_env = "gnu")) {
        (memory / 16).clamp(MIN_LARGE as u64, 8 << 20) as usize
    } else {
        MIN_LARGE
    };
    HeapGuard(LARGE.swap(threshold, Ordering::Relaxed))
}

/// Restores the threshold [`table_blocks_to_heap`] raised.
pub(crate) struct HeapGuard(usize);

impl Drop for HeapGuard {
    fn drop(&mut self) {
        LARGE.store(self.0, Ordering::Relaxed);
    }
}

/// Whether `ptr`, a block of `layout`, was mapped here (see the module
/// docs: its mark, read only where a mapped block could be).
///
/// # Safety
/// `ptr` is a live block of this allocator with `layout`.
unsafe fn is_mapped(ptr: *mut u8, layout: Layout) -> bool {
    layout.size() >= MIN_LARGE
        && layout.align() <= PAGE
        && (ptr as usize).is_multiple_of(PAGE)
        // SAFETY: a mapped block has its header page before it; a system
        // block of this size has glibc's chunk header there.
        && unsafe { ptr.cast::<u64>().sub(1).read() } == MAGIC
}

// SAFETY: a mapped block is a private anonymous mapping of its size and a
// page, page-aligned (enough for any `align <= PAGE`) and zeroed, freed by
// `munmap` of the length its header holds; `dealloc` and `realloc` tell it
// from a system block by that header (`is_mapped`), whatever the threshold
// is when it is freed; the rest is the system allocator's.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !mapped(layout.size(), layout.align()) {
            return System.alloc(layout);
        }
        map(layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !mapped(layout.size(), layout.align()) {
            return System.alloc_zeroed(layout);
        }
        // Fresh anonymous mappings are zero-filled.
        map(layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !is_mapped(ptr, layout) {
            return System.dealloc(ptr, layout);
        }
        let (base, len) = header(ptr);
        libc::munmap(base.cast(), len);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (old, new) = (is_mapped(ptr, layout), mapped(new_size, layout.align()));
        match (old, new) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => {
                let (base, len) = header(ptr);
                let Some(total) = new_size.checked_add(PAGE) else { return std::ptr::null_mut() };
                let p = or_null(libc::mremap(base.cast(), len, total, libc::MREMAP_MAYMOVE));
                if p.is_null() {
                    return p;
                }
                set_header(p, total)
            }
            _ => {
                // SAFETY: the new layout is valid: same alignment, and
                // `new_size` was checked by the caller not to overflow.
                let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                let p = self.alloc(new_layout);
                if !p.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                p
            }
        }
    }
}

/// A block of `size` bytes a page into a private anonymous mapping, its
/// header written; null when refused.
unsafe fn map(size: usize) -> *mut u8 {
    let Some(total) = size.checked_add(PAGE) else { return std::ptr::null_mut() };
    let base = or_null(libc::mmap(
        std::ptr::null_mut(),
        total,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    ));
    if base.is_null() {
        return base;
    }
    set_header(base, total)
}

/// Writes the header of the mapping at `base` of `total` bytes; returns its
/// block.
unsafe fn set_header(base: *mut u8, total: usize) -> *mut u8 {
    let block = base.add(PAGE);
    block.cast::<u64>().sub(2).write(total as u64);
    block.cast::<u64>().sub(1).write(MAGIC);
    block
}

/// The mapping of a mapped block: its start and length.
unsafe fn header(block: *mut u8) -> (*mut u8, usize) {
    (block.sub(PAGE), block.cast::<u64>().sub(2).read() as usize)
}

/// A mapping's address, or null for `MAP_FAILED` (an allocator's failure).
fn or_null(p: *mut libc::c_void) -> *mut u8 {
    if p == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks made before and during a raise of the threshold, freed and
    /// grown after it moved, go back where they came from, their bytes
    /// kept (a wrong guess would crash: `free` of a mapping, `munmap` of a
    /// heap block).
    #[test]
    fn blocks_outlive_a_change_of_the_threshold() {
        let a = Allocator;
        let layout = |size: usize| Layout::from_size_align(size, 8).unwrap();
        let (mib, big) = (layout(1 << 20), layout(16 << 20));
        unsafe {
            let m = a.alloc(mib);
            assert!(is_mapped(m, mib), "1 MiB is mapped at the usual threshold");
            m.write_bytes(7, mib.size());
            let guard = table_blocks_to_heap(256 << 20);
            let h = a.alloc(mib);
            assert!(!is_mapped(h, mib), "1 MiB from the heap while a table sort runs");
            h.write_bytes(9, mib.size());
            a.dealloc(m, mib);
            // Heap to mapping (16 MiB is over the raised 8 MiB).
            let g = a.realloc(h, mib, big.size());
            assert!(is_mapped(g, big));
            assert!(std::slice::from_raw_parts(g, mib.size()).iter().all(|&b| b == 9));
            drop(guard);
            let z = a.alloc_zeroed(mib);
            assert!(is_mapped(z, mib));
            assert!(std::slice::from_raw_parts(z, mib.size()).iter().all(|&b| b == 0));
            // Mapping to mapping (mremap), then to the heap (below 256 KiB).
            let s = a.realloc(g, big, 2 << 20);
            assert!(is_mapped(s, layout(2 << 20)));
            let t = a.realloc(s, layout(2 << 20), 4096);
            assert!(!is_mapped(t, layout(4096)));
            assert!(std::slice::from_raw_parts(t, 4096).iter().all(|&b| b == 9));
            a.dealloc(t, layout(4096));
            a.dealloc(z, mib);
        }
    }
}
