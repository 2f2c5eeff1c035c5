//! The D-disk layer (`emsort_io::disks`): striped runs written and read
//! back against the bytes written, the layout checked on the per-disk files
//! with `std::fs::read`, emulated disks' timing (lower bounds only), and
//! errors naming their files.

mod emulation;
mod errors;
mod layout;
mod roundtrip;

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use emsort_io::disks::{DiskIo, DiskModel, DiskSet, StripedReader, StripedRun, StripedWriter};

/// `n` pseudo-random bytes (xorshift), different per `seed`.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect()
}

/// A temp dir with `d` disk directories `disk0`, `disk1`, … inside, made
/// under `parent` (or the system temp dir).
pub fn disk_dirs(d: usize, parent: Option<&std::path::Path>) -> (tempfile::TempDir, Vec<PathBuf>) {
    let root = match parent {
        Some(p) => tempfile::tempdir_in(p).expect("temp dir"),
        None => tempfile::tempdir().expect("temp dir"),
    };
    let dirs: Vec<PathBuf> = (0..d).map(|i| root.path().join(format!("disk{i}"))).collect();
    for p in &dirs {
        std::fs::create_dir(p).unwrap();
    }
    (root, dirs)
}

/// A running `DiskIo` over `d` fresh directories.
pub fn start(
    d: usize,
    block: usize,
    direct: bool,
    model: Option<DiskModel>,
    parent: Option<&std::path::Path>,
) -> (tempfile::TempDir, DiskIo) {
    let (root, dirs) = disk_dirs(d, parent);
    let set = DiskSet::new(dirs, block, direct, model).unwrap();
    (root, DiskIo::start(Arc::new(set)).unwrap())
}

/// Writes `data` as run `id` from `start_disk`, feeding it in pieces of
/// `piece` bytes.
pub fn write_run(
    io: &DiskIo,
    id: u64,
    start_disk: usize,
    depth: usize,
    data: &[u8],
    piece: usize,
) -> StripedRun {
    let mut w = StripedWriter::new(io, id, start_disk, depth);
    for c in data.chunks(piece.max(1)) {
        w.write_all(c).unwrap();
    }
    assert_eq!(w.bytes(), data.len() as u64);
    w.finish().unwrap()
}

/// Reads a run back whole.
pub fn read_run(io: &DiskIo, run: &StripedRun, depth: usize) -> Vec<u8> {
    let mut out = Vec::new();
    StripedReader::new(io, run.clone(), depth).read_to_end(&mut out).unwrap();
    out
}
