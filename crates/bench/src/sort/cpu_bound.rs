//! The CPU bound of a sort campaign (issue 18): the same emsort sort with
//! its input, runs and output in memory (`tmpfs`), so that no byte waits
//! for a device.
//!
//! A sort on a disk cannot be faster than the larger of two limits of the
//! machine: the I/O bound (2 × one O_DIRECT read + write of the data,
//! [`super::fio::io_bound`]) and the CPU bound measured here. The tool
//! `cpu-bound` runs, per input (format, N) and each (M, threads) of the
//! grid, `emsort sort --format F -S M --fan-in D --policy P --io buffered
//! --block-size B --parallel T -T SHM/tmp --stats FILE -q SHM/input -o
//! SHM/out`, with D, P and B emsort's defaults for M (its plan's), and in
//! the keys experiment `emsort sort KEYS -S M --parallel T --io buffered -T
//! SHM/tmp … -o SHM/out SHM/input`. The stream kind is `buffered` because
//! tmpfs refuses O_DIRECT; the page cache is not emptied before these runs
//! (tmpfs pages are the files themselves, no cache of a device).
//!
//! tmpfs is not a pure CPU bound: every page of the runs and the output is
//! allocated, zeroed and copied by the kernel, which shows as system time
//! (a 1 GiB u32 sort in `/dev/shm` took 2.0–2.8 s of system time out of
//! ~10 s of CPU on the development machine); the rows carry `user_s` and
//! `system_s` so that the reader can tell the two apart.
//!
//! [`CpuBoundDir::create`] checks that the directory (default `/dev/shm`)
//! is `tmpfs` or `ramfs` and that it, and the memory available, hold four
//! copies of the largest input (input, runs — up to two copies while a
//! merge pass reads one and writes the next — and output), then makes a
//! private directory `.emsort-cpu-bound-XXXXXX` in it, removed when the
//! value is dropped (also on error).

use std::path::{Path, PathBuf};

use emsort_io::format_size;

use crate::machine::{fs_type, is_memory_fs, meminfo};
use crate::{Error, Result};

/// The `cache` column of the CPU bound's rows: nothing emptied (tmpfs).
pub(crate) const CPU_BOUND_CACHE: &str = "none (tmpfs)";

/// The default directory of the CPU bound.
pub const DEFAULT_CPU_BOUND_DIR: &str = "/dev/shm";

/// A private directory on tmpfs for the CPU bound's input, runs and
/// output; removed with everything in it when dropped.
#[derive(Debug)]
pub struct CpuBoundDir {
    dir: tempfile::TempDir,
}

impl CpuBoundDir {
    /// Checks `base` (a memory file system with room and memory for
    /// `4 × largest` bytes plus 64 MiB) and makes the private directory in
    /// it; `Err` says why the CPU bound cannot run there.
    pub fn create(base: &Path, largest: u64) -> std::result::Result<CpuBoundDir, String> {
        let (fs, _) = fs_type(base);
        if !base.is_dir() {
            return Err(format!("{} is not a directory", base.display()));
        }
        if !is_memory_fs(&fs) {
            return Err(format!("{} is on {fs}, not tmpfs: it would not be a CPU bound", base.display()));
        }
        let need = 4 * largest + (64 << 20);
        let s = rustix::fs::statvfs(base).map_err(|e| format!("statvfs {}: {e}", base.display()))?;
        let room = s.f_bavail.saturating_mul(s.f_frsize);
        // ramfs reports no size: only the memory limits it.
        if s.f_blocks > 0 && room < need {
            return Err(format!(
                "{} has {} free, the CPU bound needs {} (input, runs and output of {})",
                base.display(),
                format_size(room),
                format_size(need),
                format_size(largest)
            ));
        }
        if let Some(avail) = meminfo("MemAvailable:") {
            if avail < need {
                return Err(format!(
                    "{} of memory available, the CPU bound's files on {fs} need {}",
                    format_size(avail),
                    format_size(need)
                ));
            }
        }
        let dir = tempfile::Builder::new()
            .prefix(".emsort-cpu-bound-")
            .tempdir_in(base)
            .map_err(|e| format!("cannot create a directory in {}: {e}", base.display()))?;
        Ok(CpuBoundDir { dir })
    }

    /// The private directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The temporary directory of the sort's runs (made by [`stage`](Self::stage)).
    pub fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// The sort's output.
    pub fn output(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    /// Copies `input` into the directory (its name kept) and makes the
    /// runs' directory; returns the copy.
    pub fn stage(&self, input: &Path) -> Result<PathBuf> {
        let name = input.file_name().unwrap_or(input.as_os_str());
        let copy = self.dir.path().join(name);
        std::fs::copy(input, &copy).map_err(|e| Error::io("copy to tmpfs", &copy, e))?;
        let tmp = self.tmp();
        std::fs::create_dir_all(&tmp).map_err(|e| Error::io("create directory", &tmp, e))?;
        Ok(copy)
    }

    /// Removes the output and whatever runs a sort left (after every run,
    /// whatever its outcome).
    pub fn clean_run(&self) {
        let _ = std::fs::remove_file(self.output());
        let tmp = self.tmp();
        if let Ok(entries) = std::fs::read_dir(&tmp) {
            for e in entries.flatten() {
                let p = e.path();
                let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            }
        }
    }

    /// Removes everything in the directory (after a data set).
    pub fn clean_all(&self) {
        if let Ok(entries) = std::fs::read_dir(self.dir.path()) {
            for e in entries.flatten() {
                let p = e.path();
                let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_disk_and_cleans_up_on_tmpfs() {
        let disk = crate::scratch::disk_tempdir("emsort-cpu-test-").unwrap();
        let e = CpuBoundDir::create(disk.path(), 1 << 20).unwrap_err();
        assert!(e.contains("not tmpfs"), "{e}");
        let e = CpuBoundDir::create(&disk.path().join("none"), 1 << 20).unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
        let shm = Path::new(DEFAULT_CPU_BOUND_DIR);
        if !shm.is_dir() || !is_memory_fs(&fs_type(shm).0) {
            eprintln!("no tmpfs at /dev/shm: the rest is skipped");
            return;
        }
        let e = CpuBoundDir::create(shm, u64::MAX / 8).unwrap_err();
        assert!(e.contains("needs") || e.contains("need"), "{e}");
        let input = disk.path().join("data.in");
        std::fs::write(&input, b"abc").unwrap();
        let c = CpuBoundDir::create(shm, 1 << 20).unwrap();
        let p = c.path().to_path_buf();
        assert!(p.file_name().unwrap().to_string_lossy().starts_with(".emsort-cpu-bound-"));
        let copy = c.stage(&input).unwrap();
        assert_eq!(std::fs::read(&copy).unwrap(), b"abc");
        std::fs::write(c.output(), b"x").unwrap();
        std::fs::write(c.tmp().join("run-0"), b"x").unwrap();
        c.clean_run();
        assert!(!c.output().exists() && std::fs::read_dir(c.tmp()).unwrap().next().is_none());
        assert!(copy.exists());
        c.clean_all();
        assert!(std::fs::read_dir(&p).unwrap().next().is_none());
        drop(c);
        assert!(!p.exists());
    }
}
