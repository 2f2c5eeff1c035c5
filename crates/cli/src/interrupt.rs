//! Ctrl-C and SIGTERM: ask the work to stop, so it can remove its temporary
//! files and exit with status 128 + the signal (130, 143).
//!
//! The handler only sets a flag (all a signal handler may safely do); the
//! libraries poll it between chunks of work and return an `Interrupted`
//! error, and the unwinding drops remove temporary files. The handler is
//! installed with `SA_RESETHAND`, so a second Ctrl-C kills at once.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(libc::SIGINT);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT and SIGTERM.
pub fn install() {
    // SAFETY: sigaction with a handler that only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// The flag the libraries poll.
pub fn flag() -> &'static AtomicBool {
    &INTERRUPTED
}

/// The shell's exit status for the signal that arrived: 128 + its number
/// (130 for SIGINT, 143 for SIGTERM).
pub fn exit_code() -> u8 {
    (128 + SIGNAL.load(Ordering::SeqCst)) as u8
}

/// Whether a signal arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
