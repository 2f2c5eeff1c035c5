//! Ctrl-C and SIGTERM: ask the work to stop, so it can remove its temporary
//! files and exit with status 128 + the signal (130, 143).
//!
//! The handler only sets a flag and counts (all a signal handler may
//! safely do); the libraries poll the flag between chunks of work and
//! return an `Interrupted` error, and the unwinding drops remove temporary
//! files. Some waits poll nothing: a system call blocked on a pipe nobody
//! reads, a phase that has not started polling yet. A watchdog thread
//! ([`arm_watchdog`], for `emsort sort`) therefore ends the process itself
//! when the work has not stopped
//! [`GRACE`] after the first signal, or at once on a second one: it removes
//! every temporary file and directory the process still holds
//! (`emsort_io::temp::remove_registered`) and exits with the same status.
//! Whatever a SIGKILL leaves, the next run removes (`emsort_io::temp`).
//!
//! SIGXFSZ is ignored, so a write past `ulimit -f` fails with `EFBIG` and
//! becomes a clear error (exit 3) instead of killing the process with
//! nothing removed.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(libc::SIGINT);
static COUNT: AtomicU32 = AtomicU32::new(0);

/// How long the work has to stop by itself after the first signal.
pub const GRACE: Duration = Duration::from_secs(3);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
    COUNT.fetch_add(1, Ordering::SeqCst);
}

/// Installs the handler for SIGINT and SIGTERM and ignores SIGXFSZ.
pub fn install() {
    // SAFETY: sigaction with a handler that only stores to atomics; SIG_IGN
    // for SIGXFSZ.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Starts the watchdog (see the module docs), for commands whose every
/// temporary entry is registered with `emsort_io::temp`.
pub fn arm_watchdog() {
    std::thread::Builder::new()
        .name("emsort-watchdog".into())
        .spawn(watchdog)
        .expect("start the interrupt watchdog");
}

/// Waits for a signal, then for the work to stop; ends the process if it
/// does not in time.
fn watchdog() {
    let tick = Duration::from_millis(50);
    while !interrupted() {
        std::thread::sleep(tick);
    }
    let first = Instant::now();
    while first.elapsed() < GRACE && COUNT.load(Ordering::SeqCst) < 2 {
        std::thread::sleep(tick);
    }
    let removed = emsort_io::temp::remove_registered();
    eprintln!(
        "emsort: interrupted; stopped without waiting for the work to finish, {removed} temporary \
         entr{} removed",
        if removed == 1 { "y" } else { "ies" }
    );
    // SAFETY: _exit ends the process without running destructors or
    // flushing buffers, which may block on the very pipe that stalled.
    unsafe { libc::_exit(i32::from(exit_code())) }
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
