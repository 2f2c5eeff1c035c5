//! Errors of the D-disk layer name the file (or directory) concerned.

use std::sync::Arc;

use emsort_io::disks::{Block, DiskIo, DiskSet, StripedReader, StripedRun, StripedWriter};
use emsort_io::ErrorKind;

use super::{bytes, disk_dirs, start, write_run};

#[test]
fn disk_set_checks_its_directories() {
    let (root, mut dirs) = disk_dirs(2, None);
    let missing = root.path().join("nope");
    let e = DiskSet::new(vec![dirs[0].clone(), missing.clone()], 4096, false, None).unwrap_err();
    assert_eq!((e.kind(), e.path()), (&ErrorKind::NotFound, missing.as_path()));
    assert!(e.to_string().contains("nope"), "{e}");

    let file = root.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let e = DiskSet::new(vec![file.clone()], 4096, false, None).unwrap_err();
    assert_eq!(e.path(), file);
    assert!(e.to_string().contains("not a directory"), "{e}");

    let e = DiskSet::new(dirs.clone(), 1000, true, None).unwrap_err();
    assert!(e.to_string().contains("4096"), "{e}");
    assert!(DiskSet::new(dirs.clone(), 0, false, None).is_err());
    assert!(DiskSet::new(vec![], 4096, false, None).is_err());
    dirs.push(dirs[0].clone()); // the same directory twice is allowed
    assert_eq!(DiskSet::new(dirs, 1000, false, None).unwrap().disks(), 3);
}

#[test]
fn write_into_a_removed_directory_names_the_file() {
    let (_root, io) = start(2, 256, false, None, None);
    let gone = io.set().dir(1).to_path_buf();
    std::fs::remove_dir(&gone).unwrap();
    let mut w = StripedWriter::new(&io, 1, 0, 2);
    // Block 1 goes to the missing disk; the error shows up at the latest
    // in `finish`.
    let r = w.write_all(&bytes(256 * 4, 1)).and_then(|()| w.finish());
    let e = r.unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::NotFound, "{e}");
    assert_eq!(e.path(), gone.join("run-000001.s"));
    assert!(e.to_string().contains("run-000001.s"), "{e}");
}

#[test]
fn writer_refuses_use_after_an_error() {
    let (_root, io) = start(1, 256, false, None, None);
    std::fs::remove_dir(io.set().dir(0)).unwrap();
    let mut w = StripedWriter::new(&io, 3, 0, 1);
    let data = bytes(256, 1);
    let mut errors = 0;
    for _ in 0..4 {
        if w.write_all(&data).is_err() {
            errors += 1;
        }
    }
    // depth 1: the third block waits for the first one's (failed) write.
    assert!(errors >= 1);
    assert!(w.write_all(&data).is_err(), "a failed writer stays failed");
    assert!(w.finish().is_err());
}

#[test]
fn reading_a_missing_or_short_run_names_the_file() {
    let (_root, io) = start(2, 128, false, None, None);
    let data = bytes(128 * 5, 1);
    let run = write_run(&io, 4, 0, 2, &data, 1000);

    // A run that was never written.
    let ghost = StripedRun { id: 99, ..run.clone() };
    let c = io.client();
    c.read(&ghost, 1, Block::new(128), 0);
    let e = c.wait().unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::NotFound);
    assert_eq!(e.path(), io.set().dir(1).join("run-000099.s"));

    // A file cut short: the reader's io::Error carries the crate's error.
    let victim = run.path(io.set(), 0); // blocks 0, 2, 4
    std::fs::OpenOptions::new().write(true).open(&victim).unwrap().set_len(128 + 10).unwrap();
    let mut out = Vec::new();
    let e = std::io::Read::read_to_end(&mut StripedReader::new(&io, run, 2), &mut out).unwrap_err();
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<emsort_io::Error>()).expect("an emsort_io::Error");
    assert_eq!(inner.path(), victim);
    assert_eq!(*inner.kind(), ErrorKind::Io("pread"));
    assert!(out.len() <= 128 * 2, "only the blocks before the cut were delivered");
    assert!(data.starts_with(&out));
}

#[test]
fn requests_after_the_disks_stopped_fail_instead_of_hanging() {
    let (_root, dirs) = disk_dirs(2, None);
    let io = DiskIo::start(Arc::new(DiskSet::new(dirs.clone(), 64, false, None).unwrap())).unwrap();
    let c = io.client();
    let run = StripedRun { id: 1, start_disk: 0, bytes: 64, disks: 2, block: 64 };
    drop(io); // the threads end here
    c.write(&run, 0, Block::new(64), 64, 7);
    let e = c.wait().unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::Closed);
    assert_eq!(e.path(), dirs[0].join("run-000001.s"));
    assert_eq!(c.in_flight(), 0);
}
