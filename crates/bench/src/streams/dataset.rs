//! The data files a campaign reads and writes.
//!
//! A data set is k files of N `u32` each, named `k{k}_n{N}_{i}.bin` in the
//! work directory. Its values come from one seeded xoshiro256++ generator
//! per (k, N), drawn in round-robin order: element j of the data set goes
//! to file j mod k. Every write of a data set (whatever the stream kind)
//! therefore writes the same bytes, and the wrapping sum of all its values
//! is known without reading it back ([`expected_sum`]); a read run checks
//! its sum against it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use emsort_io::{create_output, OutputStream, StreamConfig, StreamKind};
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::point::{format_count, ELEMENT_SIZE};
use crate::{Error, Result};

/// The generator of the data set with k files of `n` elements.
pub(crate) fn generator(k: u32, n: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(0x656d_736f_7274 ^ (u64::from(k) << 48) ^ n)
}

/// The wrapping sum of every value of the data set (k, n), recomputed from
/// the generator without I/O.
pub(crate) fn expected_sum(k: u32, n: u64) -> u64 {
    let mut rng = generator(k, n);
    (0..u64::from(k) * n).fold(0u64, |s, _| s.wrapping_add(u64::from(rng.next_u32())))
}

/// The paths of the data set (k, n) in `dir`.
pub(crate) fn paths(dir: &Path, k: u32, n: u64) -> Vec<PathBuf> {
    (0..k).map(|i| dir.join(format!("k{k}_n{n}_{i}.bin"))).collect()
}

/// What the campaign knows about the data sets in its work directory:
/// which exist with the right size and the sum of their values.
#[derive(Default)]
pub(crate) struct DataSets {
    sums: HashMap<(u32, u64), u64>,
}

impl DataSets {
    /// Records that the data set (k, n) was just written with sum `sum`.
    pub(crate) fn written(&mut self, k: u32, n: u64, sum: u64) {
        self.sums.insert((k, n), sum);
    }

    /// Forgets a data set whose files were removed.
    pub(crate) fn forget(&mut self, k: u32, n: u64) {
        self.sums.remove(&(k, n));
    }

    /// Makes sure the data set (k, n) exists in `dir` for a read, and
    /// returns the sum of its values. Files left by an earlier campaign
    /// (`--keep-files`) are used when all k have the right size; otherwise
    /// the set is written, untimed, with the `buffered` kind.
    pub(crate) fn ensure(&mut self, dir: &Path, k: u32, n: u64) -> Result<u64> {
        if let Some(&s) = self.sums.get(&(k, n)) {
            return Ok(s);
        }
        let files = paths(dir, k, n);
        let size = n * ELEMENT_SIZE;
        let present = files.iter().all(|p| std::fs::metadata(p).map(|m| m.len() == size).unwrap_or(false));
        let sum = if present {
            expected_sum(k, n)
        } else {
            ensure_space(dir, &files, size, k, n)?;
            write_untimed(&files, n)?
        };
        self.sums.insert((k, n), sum);
        Ok(sum)
    }
}

/// Writes the data set to `files` with a plain `buffered` stream and
/// returns its sum.
fn write_untimed(files: &[PathBuf], n: u64) -> Result<u64> {
    let cfg = StreamConfig::new(StreamKind::Buffered).block_size(1 << 20);
    let mut outs =
        files.iter().map(|p| create_output::<u32>(p, &cfg)).collect::<emsort_io::Result<Vec<_>>>()?;
    let mut rng = generator(files.len() as u32, n);
    let mut sum = 0u64;
    for _ in 0..n {
        for o in outs.iter_mut() {
            let x = rng.next_u32();
            sum = sum.wrapping_add(u64::from(x));
            o.write(x)?;
        }
    }
    for o in outs.iter_mut() {
        o.close()?;
    }
    Ok(sum)
}

/// Bytes available to this user on the file system holding `dir`.
pub(crate) fn free_bytes(dir: &Path) -> Result<u64> {
    let s = rustix::fs::statvfs(dir).map_err(|e| Error::io("statvfs", dir, e.into()))?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Room kept free beyond the data itself: block rounding, metadata, and
/// the other files on the disk.
pub(crate) const HEADROOM: u64 = 64 << 20;

/// Fails clearly unless `dir` has room for k files of `size` bytes (less
/// what existing files of those names already take, since they will be
/// truncated) plus [`HEADROOM`].
pub(crate) fn ensure_space(dir: &Path, files: &[PathBuf], size: u64, k: u32, n: u64) -> Result<()> {
    let existing: u64 = files.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let need = (size * files.len() as u64).saturating_sub(existing) + HEADROOM;
    let avail = free_bytes(dir)?;
    if avail < need {
        return Err(Error::DiskSpace {
            what: format!("k={k} N={} ({k} files in {})", format_count(n), dir.display()),
            need,
            avail,
            source: emsort_io::Error::new(emsort_io::ErrorKind::DiskFull, dir),
        });
    }
    Ok(())
}

/// Removes the data set's files that exist; errors other than "not found"
/// are reported.
pub(crate) fn remove(dir: &Path, k: u32, n: u64) -> Result<()> {
    for p in paths(dir, k, n) {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("remove", &p, e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untimed_set_matches_expected_sum_and_is_reused() {
        let dir = tempfile::tempdir().unwrap();
        let mut sets = DataSets::default();
        let s = sets.ensure(dir.path(), 3, 1000).unwrap();
        assert_eq!(s, expected_sum(3, 1000));
        let files = paths(dir.path(), 3, 1000);
        assert_eq!(files[2].file_name().unwrap(), "k3_n1000_2.bin");
        for f in &files {
            assert_eq!(std::fs::metadata(f).unwrap().len(), 4000);
        }
        // Element j of the set is in file j % k, at position j / k.
        let mut rng = generator(3, 1000);
        let first: Vec<u32> = (0..6).map(|_| rng.next_u32()).collect();
        let f1 = std::fs::read(&files[1]).unwrap();
        assert_eq!(u32::from_ne_bytes(f1[0..4].try_into().unwrap()), first[1]);
        assert_eq!(u32::from_ne_bytes(f1[4..8].try_into().unwrap()), first[4]);
        // A fresh catalogue trusts files of the right size.
        let mut again = DataSets::default();
        assert_eq!(again.ensure(dir.path(), 3, 1000).unwrap(), s);
        remove(dir.path(), 3, 1000).unwrap();
        assert!(!files[0].exists());
        remove(dir.path(), 3, 1000).unwrap();
    }

    #[test]
    fn space_check_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let files = paths(dir.path(), 2, 1);
        let e = ensure_space(dir.path(), &files, u64::MAX / 4, 2, 1).unwrap_err();
        assert!(e.to_string().starts_with("not enough free space for k=2 N=1"), "{e}");
        assert!(ensure_space(dir.path(), &files, 4, 2, 1).is_ok());
    }
}
