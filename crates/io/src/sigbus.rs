//! Reading a mapping whose file shrank: an error, not a `SIGBUS`.
//!
//! When another process truncates a file while it is mapped, touching a
//! page past the file's new end raises `SIGBUS`, which kills the process
//! with nothing cleaned up (issue 37: `--io mmap` and an input truncated
//! during the sort). A read-only mapping made through [`Guarded::map`] is
//! listed in a small process-wide table; a `SIGBUS` handler (installed once,
//! keeping the handler that was there before for every other address) maps
//! a page of zeros over the faulting page of a listed mapping and marks the
//! mapping, so the access completes. The reader checks the mark after each
//! copy ([`Guarded::faulted`]) and reports that the file shrank; the zeros
//! are never used. A fault outside the listed mappings goes to the previous
//! handler (Rust's stack-overflow check, or the default action) as before.
//!
//! At most [`SLOTS`] mappings are guarded at once; beyond that a mapping
//! is made unguarded (as before this module).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// How many mappings may be guarded at the same time.
pub const SLOTS: usize = 64;

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicUsize = AtomicUsize::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const CLEAR: AtomicBool = AtomicBool::new(false);
static STARTS: [AtomicUsize; SLOTS] = [ZERO; SLOTS];
static LENS: [AtomicUsize; SLOTS] = [ZERO; SLOTS];
static FAULTED: [AtomicBool; SLOTS] = [CLEAR; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();
/// The handler that was installed before ours (a `libc::sigaction`,
/// written once before ours is installed).
static mut PREVIOUS: Option<libc::sigaction> = None;

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = if info.is_null() { 0 } else { unsafe { (*info).si_addr() as usize } };
    for i in 0..SLOTS {
        let start = STARTS[i].load(Ordering::Acquire);
        let len = LENS[i].load(Ordering::Acquire);
        if start != 0 && addr >= start && addr < start + len {
            let page = addr & !(PAGE.load(Ordering::Relaxed) - 1);
            // SAFETY: replaces one page inside a mapping this process made
            // and still holds (listed) with a private zero page; mmap is
            // async-signal-safe.
            unsafe {
                libc::mmap(
                    page as *mut c_void,
                    PAGE.load(Ordering::Relaxed),
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                );
            }
            FAULTED[i].store(true, Ordering::Release);
            return;
        }
    }
    // Not ours: whatever handled SIGBUS before.
    // SAFETY: PREVIOUS was written once, before this handler was installed.
    let prev = unsafe { *std::ptr::addr_of!(PREVIOUS) };
    match prev {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            // SAFETY: calling the previous handler as it was installed.
            unsafe {
                if p.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
                        std::mem::transmute(p.sa_sigaction);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(p.sa_sigaction);
                    f(sig);
                }
            }
        }
        _ => {
            // The default action: restored, and the faulting access, run
            // again on return, raises it.
            // SAFETY: resetting a disposition.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
        }
    }
}

fn install() {
    INSTALL.call_once(|| {
        PAGE.store(rustix::param::page_size(), Ordering::Relaxed);
        // SAFETY: reads the current handler, stores it once, then installs
        // ours; no other thread writes PREVIOUS.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old);
            *std::ptr::addr_of_mut!(PREVIOUS) = Some(old);
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        }
    });
}

/// A read-only mapping listed for the `SIGBUS` handler while it lives (see
/// the module docs). Unlists itself when dropped; the caller unmaps.
#[derive(Debug)]
pub struct Guarded {
    slot: Option<usize>,
}

impl Guarded {
    /// Lists the mapping `[ptr, ptr + len)`.
    pub fn map(ptr: *const u8, len: usize) -> Guarded {
        install();
        for i in 0..SLOTS {
            if STARTS[i].compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                FAULTED[i].store(false, Ordering::Release);
                LENS[i].store(len, Ordering::Release);
                STARTS[i].store(ptr as usize, Ordering::Release);
                return Guarded { slot: Some(i) };
            }
        }
        Guarded { slot: None }
    }

    /// Whether a page of the mapping was past the file's end when touched
    /// (its bytes read as zeros: the file shrank).
    pub fn faulted(&self) -> bool {
        self.slot.is_some_and(|i| FAULTED[i].load(Ordering::Acquire))
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            STARTS[i].store(usize::MAX, Ordering::Release);
            LENS[i].store(0, Ordering::Release);
            STARTS[i].store(0, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file truncated under a mapping: reading the lost pages faults,
    /// the guard answers, and the mark says so.
    #[test]
    fn a_shrunk_file_under_a_mapping_is_a_mark_not_a_crash() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&vec![7u8; 64 << 10]).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        // SAFETY: a fresh read-only shared mapping of the file.
        let map = unsafe { memmap2::Mmap::map(&f).unwrap() };
        let g = Guarded::map(map.as_ptr(), map.len());
        assert_eq!(map[100], 7);
        assert!(!g.faulted());
        std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(4096).unwrap();
        let tail: u64 = map[8192..].iter().map(|&b| u64::from(b)).sum();
        assert_eq!(tail, 0, "the lost pages read as zeros");
        assert!(g.faulted());
        drop(g);
        drop(map);
    }
}
