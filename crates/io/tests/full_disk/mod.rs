//! A full disk and a file size limit: every kind fails cleanly with the
//! right kind of error (and `mmap` never dies of `SIGBUS`).

use std::path::Path;

use emsort_io::{create_output, Error, ErrorKind, OutputStream, StreamConfig, StreamKind};

use crate::util::{data, is_child, mount_or_skip, run_child, test_name, tmp};

/// Writes `n` u32 one at a time until a write fails, then closes; returns
/// the first error (from `write` or `close`). Panics if nothing fails.
fn first_error(p: &Path, cfg: &StreamConfig, n: usize) -> Error {
    let xs = data::<u32>(n, 3);
    let mut out = create_output::<u32>(p, cfg).unwrap_or_else(|e| panic!("{}: create: {e}", cfg.kind));
    for (i, &x) in xs.iter().enumerate() {
        if let Err(e) = out.write(x) {
            // The stream is failed from now on.
            let again = out.write(x).unwrap_err();
            assert_eq!(*again.kind(), ErrorKind::Closed, "{}: write after error: {again}", cfg.kind);
            let close = out.close().unwrap_err();
            assert_eq!(*close.kind(), ErrorKind::Closed, "{}: close after error: {close}", cfg.kind);
            eprintln!("{}: write {i} failed: {e}", cfg.kind);
            return e;
        }
    }
    match out.close() {
        Err(e) => {
            eprintln!("{}: close failed: {e}", cfg.kind);
            out.close().unwrap();
            e
        }
        Ok(()) => panic!("{}: {n} elements written and closed without error", cfg.kind),
    }
}

fn configs() -> Vec<StreamConfig> {
    let mut v = Vec::new();
    for kind in StreamKind::ALL {
        for b in [4096, 65536, 1 << 20] {
            if kind.uses_block_size() || b == 4096 {
                v.push(StreamConfig::new(kind).block_size(b).queue_depth(4));
            }
        }
    }
    v
}

/// The file size limit `RLIMIT_FSIZE` in the child (a multiple of every
/// block size tried, so O_DIRECT writes stay aligned up to it).
const FSIZE_LIMIT: u64 = 256 << 10;

#[test]
fn rlimit_fsize_gives_file_too_large() {
    let name = test_name(module_path!(), "rlimit_fsize_gives_file_too_large");
    if is_child(&name) {
        let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: plain query into a local.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut rl) }, 0);
        assert_eq!(rl.rlim_cur, FSIZE_LIMIT, "the parent's pre_exec set the limit");
        let dir = tmp();
        for cfg in configs() {
            let p = dir.path().join(format!("{}-{}", cfg.kind, cfg.block_size));
            // 1 MiB, four times the limit.
            let e = first_error(&p, &cfg, 1 << 18);
            assert_eq!(*e.kind(), ErrorKind::FileTooLarge, "{} B={}: {e}", cfg.kind, cfg.block_size);
            assert!(e.to_string().contains("file size limit exceeded"), "{e}");
            assert!(e.to_string().contains(&p.display().to_string()), "{e}");
            assert!(std::fs::metadata(&p).unwrap().len() <= FSIZE_LIMIT);
            std::fs::remove_file(&p).unwrap();
        }
        return;
    }
    run_child(&name, &[], || {
        let rl = libc::rlimit { rlim_cur: FSIZE_LIMIT, rlim_max: FSIZE_LIMIT };
        // SAFETY: async-signal-safe calls between fork and exec. With SIGXFSZ
        // ignored, writing past the limit fails with EFBIG instead of killing.
        unsafe {
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        }
        Ok(())
    });
}

#[test]
fn small_tmpfs_gives_disk_full() {
    let dir = tmp();
    let mnt = dir.path().join("mnt");
    let Some(_m) = mount_or_skip(&mnt, "tmpfs", "size=1M", "small_tmpfs_gives_disk_full") else {
        return;
    };
    for cfg in configs() {
        let p = mnt.join("big.bin");
        // 2 MiB into a 1 MiB file system.
        let e = first_error(&p, &cfg, 1 << 19);
        assert_eq!(*e.kind(), ErrorKind::DiskFull, "{} B={}: {e}", cfg.kind, cfg.block_size);
        assert!(e.to_string().contains("no space left on device"), "{e}");
        std::fs::remove_file(&p).unwrap();
    }
}
