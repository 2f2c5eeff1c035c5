//! Running out of memory is an error, not an abort.
//!
//! Rust's default answer to a failed allocation is to print "memory
//! allocation of N bytes failed" and abort (SIGABRT, a core, temporary files
//! left: issue 37 met it under `ulimit -v`). The binary's allocator
//! ([`Guard`], the system allocator underneath) answers instead as GNU sort
//! does ("memory exhausted", exit 2), after removing every temporary file
//! and directory the process holds. The sort sizes its memory from the
//! process's limits first (`emsort_sort::budget::limit_cap`), so this is
//! the last resort, not the plan.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// The system allocator, with a clear exit when it fails.
pub struct Guard;

// SAFETY: every call forwards to the system allocator with the same
// arguments; a null result (failure) ends the process instead of being
// returned.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            exhausted(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            exhausted(layout.size());
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            exhausted(new_size);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Removes the temporary entries, says so and exits 2. Writes with
/// `write(2)` from the stack: the message must not need memory.
fn exhausted(bytes: usize) -> ! {
    static ONCE: AtomicBool = AtomicBool::new(false);
    // A failure inside the cleanup itself exits at once.
    if !ONCE.swap(true, Ordering::SeqCst) {
        emsort_io::temp::remove_registered();
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut n = bytes;
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let program: &[u8] = if crate::program() == "sort" { b"sort" } else { b"emsort" };
        for part in [
            program,
            &b": memory exhausted (an allocation of "[..],
            &digits[i..],
            &b" bytes failed; a smaller -S or higher limits, ulimit -v and -d, would help); temporary files removed\n"[..],
        ] {
            // SAFETY: writing a readable buffer to standard error.
            unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
        }
    }
    // SAFETY: ends the process without unwinding (no allocation).
    unsafe { libc::_exit(2) }
}
