//! The mounts a matrix makes for its profiles, and takes down again.
//!
//! [`ProfileMount::tmpfs`] mounts a tmpfs of a given size on a new
//! directory; [`ProfileMount::image`] makes a sparse image file, puts xfs
//! or btrfs on it (`mkfs.xfs -q -f`, `mkfs.btrfs -q -f`), attaches it to a
//! free loop device (`losetup --find --show --direct-io=on`: the device
//! reads and writes the image with O_DIRECT, so the image's own page cache
//! does not stand between the file system and the disk; without direct
//! I/O where the kernel refuses it, which the description says) and mounts
//! it there with the file system's defaults.
//!
//! Each value undoes exactly what it did, in reverse order, when it is
//! [`finish`](ProfileMount::finish)ed or dropped (on an error or an
//! interrupt too): the mount — unmounted fully, not lazily, once
//! `/proc/self/mountinfo` shows it is the one made here (same source);
//! the loop device — detached once `losetup` shows it still backs the
//! image made here; the image file; the mount point directory (made here,
//! so empty once unmounted). Nothing else is touched.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::machine::mount_info;

/// The source name of the tmpfs mounts made here (what `mountinfo`
/// shows, so that only ours are unmounted).
const TMPFS_SOURCE: &str = "emsort-matrix";

/// A mount made for a profile (see the module docs).
#[derive(Debug)]
pub(crate) struct ProfileMount {
    point: PathBuf,
    /// The mount point directory was made here.
    point_made: bool,
    /// What `mountinfo` shows as the source once mounted.
    source: Option<String>,
    image: Option<PathBuf>,
    loop_dev: Option<String>,
    /// How the image is attached (for the facts).
    description: Option<String>,
}

fn c_path(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| format!("{}: a NUL in the path", p.display()))
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let o = cmd.output().map_err(|e| format!("{what}: cannot start: {e}"))?;
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        return Err(format!("{what} failed ({}): {}", o.status, err.trim()));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Why this process cannot make loop-mounted file systems of type `fs`
/// (`None` when it can): root, the loop control device, `losetup` and
/// `mkfs.FS`.
pub(crate) fn loop_mount_unavailable(fs: &str) -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("loop mounts need root".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("no loop devices (/dev/loop-control is missing)".into());
    }
    if Command::new("losetup").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        return Some("losetup is not installed (util-linux)".into());
    }
    let mkfs = format!("mkfs.{fs}");
    let version = if fs == "btrfs" { "--version" } else { "-V" };
    if Command::new(&mkfs).arg(version).output().map(|o| !o.status.success()).unwrap_or(true) {
        let package = if fs == "btrfs" { "btrfs-progs" } else { "xfsprogs" };
        return Some(format!("{mkfs} is not installed (Debian's {package}; bench/setup.sh installs it)"));
    }
    None
}

impl ProfileMount {
    fn new(point: &Path) -> Result<ProfileMount, String> {
        std::fs::create_dir(point).map_err(|e| format!("create {}: {e}", point.display()))?;
        Ok(ProfileMount {
            point: point.to_path_buf(),
            point_made: true,
            source: None,
            image: None,
            loop_dev: None,
            description: None,
        })
    }

    /// Mounts a tmpfs of `bytes` on `point`, a directory made here.
    pub fn tmpfs(point: &Path, bytes: u64) -> Result<ProfileMount, String> {
        let mut m = ProfileMount::new(point)?;
        let target = c_path(point)?;
        let source = CString::new(TMPFS_SOURCE).expect("no NUL");
        let opts = CString::new(format!("size={bytes},mode=0755")).expect("no NUL");
        // SAFETY: valid NUL-terminated strings that outlive the call.
        let r = unsafe {
            libc::mount(source.as_ptr(), target.as_ptr(), c"tmpfs".as_ptr(), 0, opts.as_ptr().cast())
        };
        if r != 0 {
            return Err(format!("mount tmpfs on {}: {}", point.display(), std::io::Error::last_os_error()));
        }
        m.source = Some(TMPFS_SOURCE.into());
        m.description = Some(format!("tmpfs of {} bytes", bytes));
        Ok(m)
    }

    /// Makes a sparse image file `image` of `bytes`, file system `fs`
    /// (`xfs` or `btrfs`) on it, and loop-mounts it on `point` (a
    /// directory made here).
    pub fn image(fs: &str, image: &Path, point: &Path, bytes: u64) -> Result<ProfileMount, String> {
        let mut m = ProfileMount::new(point)?;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(image)
            .map_err(|e| format!("create {}: {e}", image.display()))?;
        m.image = Some(image.to_path_buf());
        f.set_len(bytes).map_err(|e| format!("size {}: {e}", image.display()))?;
        drop(f);
        run(Command::new(format!("mkfs.{fs}")).args(["-q", "-f"]).arg(image), &format!("mkfs.{fs}"))?;
        let attach = |direct: bool| {
            let mut c = Command::new("losetup");
            c.args(["--find", "--show"]);
            if direct {
                c.arg("--direct-io=on");
            }
            run(c.arg(image), "losetup --find --show")
        };
        let (dev, direct) = match attach(true) {
            Ok(d) => (d, true),
            Err(_) => (attach(false)?, false),
        };
        if !dev.starts_with("/dev/loop") {
            return Err(format!("losetup printed {dev:?}, not a loop device"));
        }
        m.loop_dev = Some(dev.clone());
        let (source, target, fstype) =
            (c_path(Path::new(&dev))?, c_path(point)?, CString::new(fs).map_err(|e| e.to_string())?);
        // SAFETY: valid NUL-terminated strings that outlive the call; no data.
        let r =
            unsafe { libc::mount(source.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
        if r != 0 {
            return Err(format!(
                "mount {dev} ({fs}) on {}: {}",
                point.display(),
                std::io::Error::last_os_error()
            ));
        }
        m.source = Some(dev.clone());
        m.description = Some(format!(
            "image {} ({} GiB, sparse) on {dev}, {}",
            crate::machine::relative(image),
            bytes >> 30,
            if direct { "direct I/O on" } else { "direct I/O refused: through the image's page cache" }
        ));
        Ok(m)
    }

    /// The mount point.
    pub fn point(&self) -> &Path {
        &self.point
    }

    /// How the mount is made (the image and loop device), for the facts.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Takes everything down (see the module docs); the first thing that
    /// could not be undone, if any.
    pub fn finish(mut self) -> Result<(), String> {
        self.release()
    }

    fn release(&mut self) -> Result<(), String> {
        let mut first_error = None;
        let mut note = |e: String| {
            first_error.get_or_insert(e);
        };
        if let Some(source) = self.source.take() {
            if let Err(e) = self.unmount(&source) {
                note(e);
                // Still mounted: the image and the directory must stay.
                return Err(first_error.unwrap_or_default());
            }
        }
        if let Some(dev) = self.loop_dev.take() {
            if let Err(e) = self.detach(&dev) {
                note(e);
            }
        }
        if let Some(image) = self.image.take() {
            if let Err(e) = std::fs::remove_file(&image) {
                note(format!("remove {}: {e}", image.display()));
            }
        }
        if std::mem::take(&mut self.point_made) {
            if let Err(e) = std::fs::remove_dir(&self.point) {
                note(format!("remove {}: {e}", self.point.display()));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Unmounts the point once mountinfo shows it holds our `source`
    /// (retrying while busy for up to 10 s; never lazily, which would let
    /// the file system live on).
    fn unmount(&self, source: &str) -> Result<(), String> {
        let ours =
            |p: &Path| mount_info(p).is_some_and(|m| Path::new(&m.mount_point) == p && m.source == source);
        let point =
            std::fs::canonicalize(&self.point).map_err(|e| format!("{}: {e}", self.point.display()))?;
        if !ours(&point) {
            return Ok(()); // Not mounted (any more): nothing of ours to undo.
        }
        let target = c_path(&point)?;
        let t = Instant::now();
        // SAFETY: a valid NUL-terminated path.
        while unsafe { libc::umount2(target.as_ptr(), 0) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EBUSY) || t.elapsed() > Duration::from_secs(10) {
                return Err(format!("unmount {}: {e}", point.display()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Detaches `dev` when it still backs our image.
    fn detach(&self, dev: &str) -> Result<(), String> {
        let Some(image) = &self.image else { return Ok(()) };
        let image = std::fs::canonicalize(image).map_err(|e| format!("{}: {e}", image.display()))?;
        let back =
            run(Command::new("losetup").args(["--noheadings", "--output", "BACK-FILE"]).arg(dev), "losetup")?;
        if Path::new(back.trim()) != image {
            return Ok(()); // Another image now: not ours to detach.
        }
        run(Command::new("losetup").arg("--detach").arg(dev), &format!("losetup --detach {dev}")).map(|_| ())
    }
}

impl Drop for ProfileMount {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Root only: a tmpfs mount is made and taken down, the directory
    /// removed; the work directory holds nothing afterwards.
    #[test]
    fn tmpfs_mounts_come_and_go() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("not root: skipped");
            return;
        }
        let base = crate::scratch::disk_tempdir("emsort-mount-").unwrap();
        let point = base.path().join("tmpfs");
        let m = ProfileMount::tmpfs(&point, 8 << 20).unwrap();
        let info = mount_info(&point).unwrap();
        assert_eq!((info.fs_type.as_str(), info.source.as_str()), ("tmpfs", TMPFS_SOURCE));
        assert!(info.super_options.contains("size=8192k"), "{info:?}");
        std::fs::write(point.join("x"), b"x").unwrap();
        m.finish().unwrap();
        assert!(!point.exists());
        // Dropped on an error path: the same.
        let m = ProfileMount::tmpfs(&point, 8 << 20).unwrap();
        drop(m);
        assert!(!point.exists());
        assert!(ProfileMount::tmpfs(&base.path().join("no/such"), 1 << 20).is_err());
    }

    /// Root with mkfs.xfs: an xfs image is made, mounted, and everything
    /// (mount, loop device, image, directory) removed.
    #[test]
    fn xfs_images_come_and_go() {
        if let Some(why) = loop_mount_unavailable("xfs") {
            eprintln!("{why}: skipped");
            return;
        }
        let base = crate::scratch::disk_tempdir("emsort-mount-").unwrap();
        let (image, point) = (base.path().join("xfs.img"), base.path().join("xfs"));
        let m = ProfileMount::image("xfs", &image, &point, 1 << 30).unwrap();
        let info = mount_info(&point).unwrap();
        assert_eq!(info.fs_type, "xfs");
        let dev = info.source.clone();
        assert!(dev.starts_with("/dev/loop") && m.description().unwrap().contains(&dev), "{info:?}");
        m.finish().unwrap();
        assert!(!point.exists() && !image.exists());
        let list = run(Command::new("losetup").args(["--list", "--noheadings"]), "losetup").unwrap();
        assert!(!list.contains(&image.display().to_string()), "{list}");
    }
}
