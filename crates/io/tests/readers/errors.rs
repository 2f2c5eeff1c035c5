//! Readers' errors: closed readers, missing files, directories, permission
//! bits, io_uring refused by a seccomp filter.

use std::os::unix::fs::PermissionsExt;

use emsort_io::{
    open_reader, AccessHint, AnyReader, Calibration, ErrorKind, ReadRequest, Reader, ReaderConfig,
    ReaderKind, Rule,
};

use super::{check_random_reads, configs, file};
#[cfg(target_arch = "x86_64")]
use crate::util::deny_io_uring_setup;
use crate::util::{is_child, run_child, test_name, tmp};

#[test]
fn reading_a_closed_reader_is_an_error() {
    let dir = tmp();
    let (p, _) = file(dir.path(), "f", 10_000, 1);
    for cfg in configs() {
        let mut rd = open_reader(&p, &cfg).unwrap();
        rd.close().unwrap();
        let mut buf = [0u8; 16];
        let e = rd.read_bytes(0, 16, &mut buf).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::Closed, "{}: {e}", cfg.kind);
        assert_eq!(e.path(), p, "{}", cfg.kind);
        assert!(e.to_string().contains(&p.display().to_string()), "{}: {e}", cfg.kind);
        let mut reqs = [ReadRequest::new(0, &mut buf)];
        let e = rd.read_batch(&mut reqs, &mut |_| panic!("no completion when closed")).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::Closed, "{}: {e}", cfg.kind);
        assert_eq!(rd.len(), 0);
        // Never opened: also Closed.
        let mut fresh = AnyReader::new(&cfg);
        assert_eq!(*fresh.read_bytes(0, 1, &mut buf).unwrap_err().kind(), ErrorKind::Closed, "{}", cfg.kind);
    }
}

#[test]
fn missing_file_and_directory() {
    let dir = tmp();
    let missing = dir.path().join("no-such-file");
    for cfg in configs() {
        let e = open_reader(&missing, &cfg).err().expect("missing file");
        assert_eq!(*e.kind(), ErrorKind::NotFound, "{}: {e}", cfg.kind);
        assert_eq!(e.to_string(), format!("{}: no such file", missing.display()));
        let e = open_reader(dir.path(), &cfg).err().expect("a directory");
        assert_eq!(*e.kind(), ErrorKind::IsADirectory, "{}: {e}", cfg.kind);
        assert!(e.to_string().contains("is a directory"), "{}: {e}", cfg.kind);
        // A failed open leaves the reader closed, naming the file it tried.
        let mut rd = AnyReader::new(&cfg);
        assert!(rd.open(&missing).is_err());
        assert!(!rd.is_open());
        let e = rd.read_bytes(0, 1, &mut [0]).unwrap_err();
        assert_eq!((e.kind(), e.path()), (&ErrorKind::Closed, missing.as_path()), "{}", cfg.kind);
    }
}

/// Root ignores permission bits: the check runs in a child that drops to
/// `nobody` first.
#[test]
fn permission_denied_as_nobody() {
    let name = test_name(module_path!(), "permission_denied_as_nobody");
    if is_child(&name) {
        let p = std::path::PathBuf::from(std::env::var("EMSORT_IO_TEST_FILE").unwrap());
        // SAFETY: plain system calls; this process exists only for this test.
        unsafe {
            assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
            assert_eq!(libc::setgid(65534), 0);
            assert_eq!(libc::setuid(65534), 0);
        }
        for cfg in configs() {
            let e = open_reader(&p, &cfg).err().expect("unreadable file");
            assert_eq!(*e.kind(), ErrorKind::PermissionDenied, "{}: {e}", cfg.kind);
            assert!(e.to_string().contains("permission denied"), "{}: {e}", cfg.kind);
        }
        let e = Calibration::load(&p).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    // SAFETY: plain query.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED permission_denied_as_nobody: needs root to switch to nobody");
        return;
    }
    let dir = tmp();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (p, _) = file(dir.path(), "secret", 100, 1);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    run_child(&name, &[("EMSORT_IO_TEST_FILE", p.as_os_str())], || Ok(()));
}

/// Under the filter: the `uring` reader fails to open with a clear
/// `UringUnavailable` naming the file; the `adaptive` reader uses `pread`
/// for its large requests instead and says so.
#[cfg(target_arch = "x86_64")]
#[test]
fn uring_unavailable() {
    let name = test_name(module_path!(), "uring_unavailable");
    if !is_child(&name) {
        run_child(&name, &[], || Ok(()));
        return;
    }
    let dir = tmp();
    let (p, bytes) = file(dir.path(), "f", 300_000, 4);
    let cfg = ReaderConfig::new(ReaderKind::Uring).block_size(4096);
    open_reader(&p, &cfg).expect("io_uring works before the filter");

    deny_io_uring_setup();

    let e = open_reader(&p, &cfg).err().expect("uring must fail under the filter");
    assert_eq!(*e.kind(), ErrorKind::UringUnavailable, "{e}");
    let msg = e.to_string();
    assert!(msg.contains("io_uring is unavailable"), "{msg}");
    assert!(msg.contains(&p.display().to_string()), "{msg}");

    let cal = Calibration {
        mmap_max_request: 1000,
        uring_min_request: 50_000,
        max_block: 8192,
        ..Default::default()
    };
    let cfg = ReaderConfig::new(ReaderKind::Adaptive).access(AccessHint::Random).calibration(cal);
    let mut rd = open_reader(&p, &cfg).unwrap();
    let mut buf = vec![0u8; 100_000];
    assert_eq!(rd.read_bytes(1000, 100_000, &mut buf).unwrap(), 100_000);
    assert!(buf[..] == bytes[1000..101_000]);
    let c = rd.last_choice().unwrap();
    assert_eq!((c.kind, c.rule), (ReaderKind::Pread, Rule::UringUnavailable));
    let why = rd.as_adaptive().unwrap().fallback().expect("the fallback is reported");
    assert!(why.contains("io_uring is unavailable") && why.contains("using pread"), "{why}");
    check_random_reads(&mut rd, &bytes, 100, 3, "adaptive without io_uring");
    let reqs = super::batch::requests(bytes.len(), 50, 8);
    super::batch::check_batch(&mut rd, &bytes, &reqs, "adaptive batch without io_uring");
}
