//! Bad input gets a clear error of the right kind, for every kind.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use emsort_io::{create_output, open_input, ErrorKind, OutputStream, StreamConfig, StreamKind};

use crate::util::{is_child, mount_or_skip, run_child, test_name, tmp};

fn cfg(kind: StreamKind) -> StreamConfig {
    StreamConfig::new(kind).block_size(4096)
}

#[test]
fn size_not_a_multiple_of_the_element() {
    let dir = tmp();
    let p = dir.path().join("odd.bin");
    std::fs::write(&p, vec![1u8; 43]).unwrap();
    for kind in StreamKind::ALL {
        let e = open_input::<u32>(&p, &cfg(kind)).err().unwrap_or_else(|| panic!("{kind}: opened"));
        assert_eq!(*e.kind(), ErrorKind::BadSize { size: 43, element_size: 4 }, "{kind}");
        let msg = e.to_string();
        for part in [&p.display().to_string(), "43", "4", "3 trailing bytes"] {
            assert!(msg.contains(part), "{kind}: '{msg}' lacks '{part}'");
        }
        assert_eq!(e.path(), p);
        let p8 = dir.path().join("odd8.bin");
        std::fs::write(&p8, vec![1u8; 44]).unwrap();
        let e = open_input::<u64>(&p8, &cfg(kind)).err().unwrap();
        assert_eq!(*e.kind(), ErrorKind::BadSize { size: 44, element_size: 8 }, "{kind}");
    }
}

#[test]
fn missing_file() {
    let dir = tmp();
    let p = dir.path().join("nope.bin");
    let q = dir.path().join("no-such-dir").join("out.bin");
    for kind in StreamKind::ALL {
        let e = open_input::<u32>(&p, &cfg(kind)).err().unwrap();
        assert_eq!(*e.kind(), ErrorKind::NotFound, "{kind}: {e}");
        assert!(e.to_string().contains("nope.bin"), "{kind}: {e}");
        let e = create_output::<u32>(&q, &cfg(kind)).err().unwrap();
        assert_eq!(*e.kind(), ErrorKind::NotFound, "{kind}: {e}");
        assert!(!q.exists());
    }
}

#[test]
fn directory_given_as_a_file() {
    let dir = tmp();
    for kind in StreamKind::ALL {
        let e = open_input::<u32>(dir.path(), &cfg(kind)).err().unwrap();
        assert_eq!(*e.kind(), ErrorKind::IsADirectory, "{kind}: {e}");
        assert!(e.to_string().contains("is a directory"), "{kind}: {e}");
        let e = create_output::<u32>(dir.path(), &cfg(kind)).err().unwrap();
        assert_eq!(*e.kind(), ErrorKind::IsADirectory, "{kind}: {e}");
    }
}

fn assert_unwritable(p: &Path, what: &str) {
    for kind in StreamKind::ALL {
        match create_output::<u32>(p, &cfg(kind)) {
            Err(e) => {
                assert_eq!(*e.kind(), ErrorKind::PermissionDenied, "{kind} {what}: {e}");
                assert!(e.to_string().contains(&p.display().to_string()), "{e}");
            }
            Ok(_) => panic!("{kind}: created {} ({what})", p.display()),
        }
    }
}

/// A read-only mount refuses the file even to root (`EROFS`).
#[test]
fn unwritable_read_only_mount() {
    let dir = tmp();
    let mnt = dir.path().join("ro");
    let Some(_m) = mount_or_skip(&mnt, "tmpfs", "ro,size=64k", "unwritable_read_only_mount") else {
        return;
    };
    assert_unwritable(&mnt.join("out.bin"), "read-only tmpfs");
}

/// sysfs does not let anyone create files.
#[test]
fn unwritable_sysfs() {
    if !Path::new("/sys/kernel").is_dir() {
        eprintln!("SKIPPED unwritable_sysfs: /sys is not mounted");
        return;
    }
    assert_unwritable(Path::new("/sys/kernel/emsort-test.bin"), "sysfs");
}

/// Permission bits, as an unprivileged user: root ignores them, so the
/// check runs in a child process that drops to `nobody` first.
#[test]
fn permission_bits_as_nobody() {
    let name = test_name(module_path!(), "permission_bits_as_nobody");
    if is_child(&name) {
        let base = std::path::PathBuf::from(std::env::var("EMSORT_IO_TEST_DIR").unwrap());
        // SAFETY: plain system calls; this process exists only for this test.
        unsafe {
            assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
            assert_eq!(libc::setgid(65534), 0);
            assert_eq!(libc::setuid(65534), 0);
        }
        for kind in StreamKind::ALL {
            let e = open_input::<u32>(&base.join("secret.bin"), &cfg(kind)).err().unwrap();
            assert_eq!(*e.kind(), ErrorKind::PermissionDenied, "{kind}: {e}");
            assert!(e.to_string().contains("permission denied"), "{kind}: {e}");
        }
        assert_unwritable(&base.join("locked").join("out.bin"), "mode 0o555 directory");
        return;
    }
    // SAFETY: plain query.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED permission_bits_as_nobody: needs root to switch to nobody");
        return;
    }
    let dir = tmp();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = dir.path().join("secret.bin");
    std::fs::write(&secret, [0u8; 16]).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    run_child(&name, &[("EMSORT_IO_TEST_DIR", dir.path().as_os_str())], || Ok(()));
}

/// After a failed write the stream accepts nothing more, and `close` says
/// so; the first error keeps its kind.
#[test]
fn closed_after_close_for_every_kind() {
    let dir = tmp();
    for kind in StreamKind::ALL {
        let p = dir.path().join(format!("c-{kind}"));
        let mut out = create_output::<u64>(&p, &cfg(kind)).unwrap();
        out.write(1).unwrap();
        out.close().unwrap();
        assert_eq!(*out.write(2).unwrap_err().kind(), ErrorKind::Closed, "{kind}");
        assert_eq!(*out.write_all(&[3, 4]).unwrap_err().kind(), ErrorKind::Closed, "{kind}");
        out.close().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), 1u64.to_ne_bytes());
    }
}
