//! [`DiskSet`] (the D disks) and [`StripedRun`] (where one run's blocks are).

use std::path::{Path, PathBuf};

use super::model::DiskModel;
use crate::{Error, ErrorKind, Result};

/// The alignment `O_DIRECT` transfers use here: buffers, offsets and lengths
/// are multiples of it (the largest logical block size in common use;
/// `STATX_DIOALIGN` reports 512 on our machines).
pub const DIRECT_ALIGN: usize = 4096;

/// D directories = D disks, block size B, `O_DIRECT` or not, optional
/// emulation ([`DiskModel`]).
///
/// A directory stands for one disk; put each on its own device for real
/// parallelism, or give a [`DiskModel`] to emulate D independent disks on
/// one device.
///
/// With `direct`, a file system that refuses `O_DIRECT` (e.g. tmpfs before
/// Linux 6.6) makes the first request on it fail with an error naming the
/// file; there is no silent fallback. Run ids name the files, so they must
/// be unique within the set (remove a run before reusing its id).
#[derive(Clone, Debug)]
pub struct DiskSet {
    dirs: Vec<PathBuf>,
    block: usize,
    direct: bool,
    model: Option<DiskModel>,
}

impl DiskSet {
    /// Makes a set of `dirs.len()` disks with blocks of `block` bytes.
    ///
    /// Each directory must exist and be a directory (the error names it);
    /// there must be at least one; `block` must be positive and, when
    /// `direct`, a multiple of 4096 ([`DIRECT_ALIGN`]).
    pub fn new(dirs: Vec<PathBuf>, block: usize, direct: bool, model: Option<DiskModel>) -> Result<DiskSet> {
        let bad = |path: &Path, reason: String| Error::new(ErrorKind::BadConfig { line: 0, reason }, path);
        let Some(first) = dirs.first() else {
            return Err(bad(Path::new(""), "a disk set needs at least one directory".into()));
        };
        if block == 0 {
            return Err(bad(first, "the block size of a disk set must be positive".into()));
        }
        if direct && !block.is_multiple_of(DIRECT_ALIGN) {
            return Err(bad(
                first,
                format!("block size {block} is not a multiple of {DIRECT_ALIGN}, which O_DIRECT needs"),
            ));
        }
        for d in &dirs {
            let md = std::fs::metadata(d).map_err(|e| Error::from_io("stat", d, e))?;
            if !md.is_dir() {
                return Err(bad(d, "not a directory (each disk of a disk set is a directory)".into()));
            }
        }
        Ok(DiskSet { dirs, block, direct, model })
    }

    /// D, the number of disks.
    pub fn disks(&self) -> usize {
        self.dirs.len()
    }

    /// B, the block size in bytes.
    pub fn block(&self) -> usize {
        self.block
    }

    /// The directory of disk `d` (panics if `d >= D`).
    pub fn dir(&self, d: usize) -> &Path {
        &self.dirs[d]
    }

    /// Whether the disks are accessed with `O_DIRECT`.
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// The emulation model, if the disks are emulated.
    pub fn model(&self) -> Option<DiskModel> {
        self.model
    }
}

/// The file name of run `id` on every disk: `run-{id:06}.s`.
pub(crate) fn run_file_name(id: u64) -> String {
    format!("run-{id:06}.s")
}

/// Where one striped run lives.
///
/// Block j (B bytes, the last one shorter) is on disk `(start_disk + j) % D`,
/// at byte offset `(j / D) * B` of that disk's file for this run,
/// `dir(d)/run-{id:06}.s`.
///
/// ```
/// use emsort_io::disks::StripedRun;
/// let r = StripedRun { id: 7, start_disk: 2, bytes: 10_000, disks: 3, block: 4096 };
/// assert_eq!(r.blocks(), 3);
/// assert_eq!((r.disk_of(0), r.disk_of(1), r.disk_of(2)), (2, 0, 1));
/// assert_eq!(r.offset_of(2), 0);
/// assert_eq!(r.block_len(2), 10_000 - 2 * 4096);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StripedRun {
    /// The run's number, which names its files.
    pub id: u64,
    /// The disk of block 0 (< `disks`).
    pub start_disk: usize,
    /// The run's length in bytes.
    pub bytes: u64,
    /// D, the number of disks it is striped over.
    pub disks: usize,
    /// B, the block size in bytes.
    pub block: usize,
}

impl StripedRun {
    /// The number of blocks, ⌈bytes / B⌉.
    pub fn blocks(&self) -> u64 {
        self.bytes.div_ceil(self.block as u64)
    }

    /// The disk that holds block `j`: `(start_disk + j) % D`.
    pub fn disk_of(&self, j: u64) -> usize {
        ((self.start_disk as u64 + j) % self.disks as u64) as usize
    }

    /// The byte offset of block `j` in its disk's file: `(j / D) * B`.
    pub fn offset_of(&self, j: u64) -> u64 {
        (j / self.disks as u64) * self.block as u64
    }

    /// The length of block `j` in bytes: B, except for a shorter last block
    /// (0 past the end).
    pub fn block_len(&self, j: u64) -> usize {
        let start = j.saturating_mul(self.block as u64);
        self.bytes.saturating_sub(start).min(self.block as u64) as usize
    }

    /// The file of this run on `disk`: `set.dir(disk)/run-{id:06}.s`.
    pub fn path(&self, set: &DiskSet, disk: usize) -> PathBuf {
        set.dir(disk).join(run_file_name(self.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_formulas() {
        let r = StripedRun { id: 1, start_disk: 1, bytes: 5 * 100 + 7, disks: 2, block: 100 };
        assert_eq!(r.blocks(), 6);
        let disks: Vec<usize> = (0..6).map(|j| r.disk_of(j)).collect();
        assert_eq!(disks, [1, 0, 1, 0, 1, 0]);
        let offs: Vec<u64> = (0..6).map(|j| r.offset_of(j)).collect();
        assert_eq!(offs, [0, 0, 100, 100, 200, 200]);
        assert_eq!(r.block_len(4), 100);
        assert_eq!(r.block_len(5), 7);
        assert_eq!(r.block_len(6), 0);
        let empty = StripedRun { bytes: 0, ..r.clone() };
        assert_eq!(empty.blocks(), 0);
        let exact = StripedRun { bytes: 400, ..r };
        assert_eq!(exact.blocks(), 4);
        assert_eq!(exact.block_len(3), 100);
    }

    #[test]
    fn set_checks_its_arguments() {
        let dir = std::env::temp_dir();
        assert!(DiskSet::new(vec![], 4096, false, None).is_err());
        assert!(DiskSet::new(vec![dir.clone()], 0, false, None).is_err());
        let e = DiskSet::new(vec![dir.clone()], 1000, true, None).unwrap_err();
        assert!(e.to_string().contains("4096"), "{e}");
        let missing = dir.join("emsort-no-such-dir-for-disk-set");
        let e = DiskSet::new(vec![dir.clone(), missing.clone()], 1000, false, None).unwrap_err();
        assert_eq!(e.path(), missing);
        assert_eq!(*e.kind(), ErrorKind::NotFound);
        let s = DiskSet::new(vec![dir.clone(), dir.clone()], 8192, true, None).unwrap();
        assert_eq!((s.disks(), s.block(), s.direct(), s.model()), (2, 8192, true, None));
        assert_eq!(s.dir(1), dir);
    }
}
