//! Runs of every kind of length written and read back, buffered and
//! `O_DIRECT`, on 1, 2, 3 and 6 disks.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use emsort_io::disks::{Block, DiskIo, StripedRun};

use super::{bytes, read_run, start, write_run};

const DISKS: [usize; 4] = [1, 2, 3, 6];

/// Lengths around the interesting boundaries for blocks of `b` on `d` disks.
fn lengths(b: usize, d: usize) -> Vec<usize> {
    let mut v = vec![0, 1, b - 1, b, b + 1, 3 * b, d * b, d * b + 17, 2 * d * b - 1, 2 * d * b + b / 2 + 3];
    v.sort_unstable();
    v.dedup();
    v
}

/// Writes and reads back runs of every length for every D, checking the
/// bytes, the run's description and the files' total size.
fn round_trips(b: usize, direct: bool, parent: Option<&Path>) {
    for d in DISKS {
        let (_root, io) = start(d, b, direct, None, parent);
        for (i, len) in lengths(b, d).into_iter().enumerate() {
            let id = i as u64 + 1;
            let start_disk = (i + d - 1) % d; // not always 0
            let data = bytes(len, id * 31 + d as u64);
            // Odd pieces so blocks are filled across several calls.
            let run = write_run(&io, id, start_disk, d + 1, &data, 777);
            let want = StripedRun { id, start_disk, bytes: len as u64, disks: d, block: b };
            assert_eq!(run, want);
            for depth in [1, d, 2 * d + 1] {
                let back = read_run(&io, &run, depth);
                assert!(back == data, "D={d} B={b} direct={direct} len={len} depth={depth}: bytes differ");
            }
            let on_disk: u64 =
                (0..d).map(|k| std::fs::metadata(run.path(io.set(), k)).map(|m| m.len()).unwrap_or(0)).sum();
            assert_eq!(on_disk, len as u64, "D={d} direct={direct} len={len}: file sizes");
        }
        let c = io.counters();
        assert_eq!(c.len(), d);
        let written: u64 = c.iter().map(|c| c.bytes_written).sum();
        let total: usize = lengths(b, d).iter().sum();
        assert_eq!(written, total as u64);
        assert_eq!(c.iter().map(|c| c.bytes_read).sum::<u64>(), 3 * total as u64);
    }
}

#[test]
fn buffered_round_trips() {
    // A block size that is no power of two, to catch alignment assumptions.
    round_trips(1000, false, None);
}

/// Whether `dir`'s file system accepts `O_DIRECT`.
fn o_direct_ok(dir: &Path) -> bool {
    let p = dir.join("probe");
    let ok = OpenOptions::new().write(true).create(true).custom_flags(libc::O_DIRECT).open(&p).is_ok();
    let _ = std::fs::remove_file(&p);
    ok
}

#[test]
fn direct_round_trips() {
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(parent).unwrap();
    if !o_direct_ok(parent) {
        eprintln!("SKIPPED direct_round_trips: {} refuses O_DIRECT", parent.display());
        return;
    }
    round_trips(8192, true, Some(parent));
}

#[test]
fn direct_files_have_exact_lengths() {
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(parent).unwrap();
    if !o_direct_ok(parent) {
        eprintln!("SKIPPED direct_files_have_exact_lengths: {} refuses O_DIRECT", parent.display());
        return;
    }
    // 2 disks, 2½ blocks: disk 1 holds blocks 0 and 2 (½), disk 0 block 1.
    let (_root, io) = start(2, 4096, true, None, Some(parent));
    let data = bytes(4096 * 2 + 100, 5);
    let run = write_run(&io, 9, 1, 2, &data, 4096 * 3);
    let d1 = std::fs::read(run.path(io.set(), 1)).unwrap();
    let d0 = std::fs::read(run.path(io.set(), 0)).unwrap();
    assert_eq!(d1.len(), 4096 + 100);
    assert_eq!(d0.len(), 4096);
    assert_eq!(&d1[..4096], &data[..4096]);
    assert_eq!(&d1[4096..], &data[8192..]);
    assert_eq!(&d0[..], &data[4096..8192]);
}

/// A reader and a writer sharing the disks with their own clients, one of
/// them on another thread: copy a run block by block.
#[test]
fn clients_share_the_disks() {
    let (_root, io) = start(3, 512, false, None, None);
    let data = bytes(512 * 20 + 5, 3);
    let src = write_run(&io, 1, 0, 3, &data, 4096);
    std::thread::scope(|s| {
        let copier = s.spawn(|| {
            let mut w = emsort_io::disks::StripedWriter::new(&io, 2, 2, 3);
            let mut r = emsort_io::disks::StripedReader::new(&io, src.clone(), 3);
            std::io::copy(&mut r, &mut WriterAdapter(&mut w)).unwrap();
            w.finish().unwrap()
        });
        // Meanwhile this thread reads the source with its own client.
        assert!(read_run(&io, &src, 2) == data);
        let dst = copier.join().unwrap();
        assert_eq!(dst.start_disk, 2);
        assert!(read_run(&io, &dst, 4) == data);
    });
}

struct WriterAdapter<'a>(&'a mut emsort_io::disks::StripedWriter);

impl std::io::Write for WriterAdapter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(buf).map_err(std::io::Error::other)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The client API directly: tags, disks and lengths of completions, blocks
/// completing out of order across disks, `try_wait` and `in_flight`.
#[test]
fn client_completions() {
    let (_root, io) = start(2, 100, false, None, None);
    let run = StripedRun { id: 5, start_disk: 1, bytes: 250, disks: 2, block: 100 };
    let data = bytes(250, 8);
    let c = io.client();
    assert!(c.try_wait().is_none());
    for j in (0..run.blocks()).rev() {
        let mut b = Block::new(100);
        let len = run.block_len(j);
        b.as_mut_slice()[..len].copy_from_slice(&data[j as usize * 100..][..len]);
        c.write(&run, j, b, len, 100 + j);
    }
    assert_eq!(c.in_flight(), 3);
    let mut seen = Vec::new();
    while c.in_flight() > 0 {
        let d = c.wait().unwrap();
        assert!(d.write);
        let j = d.tag - 100;
        assert_eq!(d.disk, run.disk_of(j));
        assert_eq!(d.len, run.block_len(j));
        seen.push(j);
    }
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2]);
    for j in 0..3 {
        c.read(&run, j, Block::new(100), j);
    }
    let mut back = vec![0u8; 250];
    for _ in 0..3 {
        let d = loop {
            if let Some(r) = c.try_wait() {
                break r.unwrap();
            }
            std::thread::yield_now();
        };
        assert!(!d.write);
        back[d.tag as usize * 100..][..d.len].copy_from_slice(&d.buf.as_slice()[..d.len]);
    }
    assert!(c.try_wait().is_none());
    assert!(back == data);
}

#[test]
fn clients_are_send() {
    fn send<T: Send>() {}
    send::<emsort_io::disks::IoClient>();
    send::<emsort_io::disks::StripedWriter>();
    send::<emsort_io::disks::StripedReader>();
    send::<Block>();
    send::<DiskIo>();
}
