//! Setting up an io_uring: one [`setup`] for the `uring` stream, the `uring`
//! reader and the adaptive reader's direct read-ahead, so that every ring
//! is sized and every refusal reported the same way.
//!
//! If `io_uring_setup` fails with `ENOSYS` (no kernel support, or a seccomp
//! filter), `EPERM` or `EACCES` (`/proc/sys/kernel/io_uring_disabled`), the
//! error is [`ErrorKind::UringUnavailable`] naming the file, with the system
//! error as its source (so callers that fall back by errno still see it);
//! any other failure is an I/O error of `io_uring_setup`.

use std::path::Path;

use io_uring::IoUring;

use crate::{Error, ErrorKind, Result};

/// A ring with at least `entries` submission entries (rounded up to a power
/// of two, as the kernel would; at least 1), for I/O on `path`, which the
/// errors name.
pub(crate) fn setup(entries: u32, path: &Path) -> Result<IoUring> {
    // Past 2^31 there is no power of two in u32; the kernel refuses such a
    // ring (EINVAL) whatever is asked.
    let entries = entries.checked_next_power_of_two().unwrap_or(u32::MAX);
    IoUring::new(entries).map_err(|e| setup_error(path, e))
}

/// Whether this process may use io_uring: a ring of 2 entries set up once
/// and dropped (the answer is kept). `None` when it may, else why not (the
/// system error of `io_uring_setup`).
pub fn unavailable() -> Option<&'static str> {
    static WHY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    WHY.get_or_init(|| IoUring::new(2).err().map(|e| e.to_string())).as_deref()
}

/// The error for a failed `io_uring_setup` (see the module docs).
fn setup_error(path: &Path, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::ENOSYS | libc::EPERM | libc::EACCES) => {
            Error::with_source(ErrorKind::UringUnavailable, path, e)
        }
        _ => Error::from_io("io_uring_setup", path, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_uring_unavailable_with_the_errno() {
        for errno in [libc::ENOSYS, libc::EPERM, libc::EACCES] {
            let e = setup_error("f".as_ref(), std::io::Error::from_raw_os_error(errno));
            assert_eq!(*e.kind(), ErrorKind::UringUnavailable, "{errno}");
            assert_eq!(e.raw_os_error(), Some(errno));
            assert!(e.to_string().contains("io_uring is unavailable"), "{e}");
        }
        let e = setup_error("f".as_ref(), std::io::Error::from_raw_os_error(libc::ENOMEM));
        assert_eq!(*e.kind(), ErrorKind::Io("io_uring_setup"));
        assert_eq!(e.raw_os_error(), Some(libc::ENOMEM));
    }

    #[test]
    fn entries_round_up_to_a_power_of_two() {
        // io_uring works on the machines this runs on (ARCHITECTURE.md).
        for (asked, got) in [(0, 1), (1, 1), (3, 4), (32, 32), (33, 64)] {
            let ring = setup(asked, "f".as_ref()).unwrap();
            assert_eq!(ring.params().sq_entries(), got, "{asked}");
        }
    }
}
