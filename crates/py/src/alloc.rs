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
//! [`LARGE`] bytes with `mmap` (zeroed, untouched pages not resident),
//! grows it with `mremap` and unmaps it when freed; smaller blocks and
//! alignments above a page go to the system allocator. Python's and
//! numpy's own allocations are untouched. Arrays made from sorted blocks
//! (`PyArray1::from_vec`) are freed through Rust's deallocator, so through
//! this one.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks of this many bytes or more are mapped on their own.
pub(crate) const LARGE: usize = 256 << 10;
/// The smallest page size (mappings are page-aligned).
const PAGE: usize = 4096;

/// System allocator below [`LARGE`], `mmap` at or above it.
pub(crate) struct Allocator;

fn mapped(size: usize, align: usize) -> bool {
    size >= LARGE && align <= PAGE
}

// SAFETY: every block is served and released by the same path, chosen
// from its layout alone (`mapped`), which `dealloc` and `realloc` receive
// unchanged: mappings are page-aligned (enough for any `align <= PAGE`)
// and zeroed; the rest is the system allocator's.
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
        if !mapped(layout.size(), layout.align()) {
            return System.dealloc(ptr, layout);
        }
        libc::munmap(ptr.cast(), layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (old, new) = (mapped(layout.size(), layout.align()), mapped(new_size, layout.align()));
        match (old, new) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => or_null(libc::mremap(ptr.cast(), layout.size(), new_size, libc::MREMAP_MAYMOVE)),
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

/// A private anonymous mapping of `size` bytes; null when refused.
unsafe fn map(size: usize) -> *mut u8 {
    or_null(libc::mmap(
        std::ptr::null_mut(),
        size,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    ))
}

/// A mapping's address, or null for `MAP_FAILED` (an allocator's failure).
fn or_null(p: *mut libc::c_void) -> *mut u8 {
    if p == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}
