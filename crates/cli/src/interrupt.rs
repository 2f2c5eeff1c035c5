//! Signals, as GNU sort takes them: SIGHUP, SIGINT, SIGQUIT, SIGTERM,
//! SIGPIPE, SIGALRM, SIGVTALRM, SIGPROF, SIGIO (SIGPOLL) and SIGXCPU ask the
//! work to stop, so it can remove its temporary files; then the process
//! dies of the same signal (default action restored, signal raised again),
//! so its parent sees what GNU sort's sees — a shell's `$?` of 128 + the
//! number, `WIFSIGNALED` for a program.
//!
//! - A signal the parent set to be ignored stays ignored (a script's
//!   background job ignores SIGINT; `nohup` ignores SIGHUP), as GNU does.
//!   SIGPIPE's disposition is recorded before the Rust runtime sets it to
//!   "ignore" (an `.init_array` entry that runs before `main`).
//! - SIGPIPE raised by the process's own write to a pipe nobody reads (the
//!   output `| head -1`, a FIFO whose reader left) does not set the flag:
//!   that write fails with `EPIPE`, the sort stops with an error and
//!   removes what it made, and then [`broken_pipe`] dies of SIGPIPE (exit
//!   status 141 in a shell) — never 0 for a truncated output (issue 37). If
//!   SIGPIPE was inherited as ignored, GNU's "write failed" message and
//!   exit 2 instead. A SIGPIPE sent by another process stops the sort as
//!   SIGTERM does.
//! - SIGXFSZ is ignored, so a write past `ulimit -f` fails with `EFBIG` and
//!   becomes a clear error naming the file instead of a kill with nothing
//!   removed.
//!
//! The handler only sets a flag and counts (all a signal handler may
//! safely do); the libraries poll the flag between chunks of work and
//! return an `Interrupted` error, and the unwinding drops remove temporary
//! files. Some waits poll nothing: a system call blocked on a pipe nobody
//! reads, a phase that has not started polling yet. A watchdog thread
//! ([`arm_watchdog`], for `emsort sort`) therefore ends the process itself
//! when the work has not stopped [`GRACE`] after the first signal, or at
//! once on a second one: it removes every temporary file and directory the
//! process still holds (`emsort_io::temp::remove_registered`) and dies of
//! the signal. It never does so while a commit is under way
//! (`emsort_io::temp::exit_held`: the rename of a complete output, the copy
//! of a result into a file rewritten in place): it waits for it. Whatever a
//! SIGKILL leaves, the next run removes (`emsort_io::temp`).

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(libc::SIGINT);
static COUNT: AtomicU32 = AtomicU32::new(0);
/// This process's ID, for the SIGPIPE handler to tell its own writes' pipe
/// signals from another process's `kill`.
static PID: AtomicI32 = AtomicI32::new(0);
/// Whether SIGPIPE was ignored when the process started (before the Rust
/// runtime ignored it).
static PIPE_IGNORED: AtomicBool = AtomicBool::new(false);

/// The signals GNU sort catches to remove its temporary files (but
/// SIGXFSZ, which emsort ignores, see the module docs).
pub const CAUGHT: [libc::c_int; 10] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGPIPE,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGIO,
    libc::SIGXCPU,
];

/// How long the work has to stop by itself after the first signal.
pub const GRACE: Duration = Duration::from_secs(3);

/// Records SIGPIPE's inherited disposition. Runs before `main`, from the
/// `.init_array`, before the Rust runtime sets SIGPIPE to "ignore".
extern "C" fn record_sigpipe() {
    // SAFETY: reading the current disposition only.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
        {
            PIPE_IGNORED.store(true, Ordering::SeqCst);
        }
    }
}

#[used]
#[link_section = ".init_array"]
static RECORD_SIGPIPE: extern "C" fn() = record_sigpipe;

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    if sig == libc::SIGPIPE && !info.is_null() {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
        let from = unsafe { (*info).si_pid() };
        if from == PID.load(Ordering::Relaxed) {
            // Raised by our own write: it returns EPIPE (see broken_pipe).
            return;
        }
    }
    SIGNAL.store(sig, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
    COUNT.fetch_add(1, Ordering::SeqCst);
}

/// Installs the handler for the [`CAUGHT`] signals the parent did not set
/// to be ignored, ignores SIGXFSZ, and sets SIGCHLD to its default as GNU
/// sort does (inherited as ignored, the kernel would reap
/// `--compress-program`'s children before the sort could learn how they
/// ended).
pub fn install() {
    PID.store(std::process::id() as i32, Ordering::SeqCst);
    // SAFETY: sigaction with a handler that only stores to atomics; SIG_IGN
    // for SIGXFSZ.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        for sig in CAUGHT {
            let ignored = if sig == libc::SIGPIPE {
                PIPE_IGNORED.load(Ordering::SeqCst)
            } else {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
            };
            if !ignored {
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
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
/// does not in time (never during a commit).
fn watchdog() {
    let tick = Duration::from_millis(50);
    while !interrupted() {
        std::thread::sleep(tick);
    }
    let first = Instant::now();
    while (first.elapsed() < GRACE && COUNT.load(Ordering::SeqCst) < 2) || emsort_io::temp::exit_held() {
        std::thread::sleep(tick);
    }
    let removed = emsort_io::temp::remove_registered();
    if signal() != libc::SIGPIPE {
        eprintln!(
            "emsort: interrupted; stopped without waiting for the work to finish, {removed} temporary \
             entr{} removed",
            if removed == 1 { "y" } else { "ies" }
        );
    }
    die()
}

/// The flag the libraries poll.
pub fn flag() -> &'static AtomicBool {
    &INTERRUPTED
}

/// The signal that arrived (SIGINT if none did).
pub fn signal() -> libc::c_int {
    SIGNAL.load(Ordering::SeqCst)
}

/// Whether a signal arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Dies of the signal that arrived, as GNU sort does once it has cleaned
/// up: its default action restored, the signal unblocked and raised again.
pub fn die() -> ! {
    die_of(signal())
}

fn die_of(sig: libc::c_int) -> ! {
    // SAFETY: plain signal-state calls; raise delivers to this thread, whose
    // default action ends the whole process.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    // Only if the signal did not end the process (it does).
    std::process::exit(128 + sig)
}

/// The end of a sort whose output's reader went away (`EPIPE` on standard
/// output or a FIFO), once its temporary files are removed: death by
/// SIGPIPE, as GNU sort; or, when SIGPIPE was inherited as ignored, GNU's
/// message and exit status 2.
pub fn broken_pipe(output: &str) -> ExitCode {
    if PIPE_IGNORED.load(Ordering::SeqCst) {
        eprintln!("emsort: write failed: '{output}': Broken pipe");
        return ExitCode::from(2);
    }
    die_of(libc::SIGPIPE)
}
