//! What a case runs in: its directories, small tmpfs and ext4 mounts, the
//! canary tree the sort must never change, and the other user's moves.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::case::{Attack, Case, Method, Output, Where};
use crate::p;

pub const NOBODY: u32 = 65534;

/// Gives `path` (a file, a directory, or a link itself: never what a link
/// points to) to `uid`, through a descriptor opened without following it.
pub fn chown(path: &Path, uid: u32) {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let fd =
        rustix::fs::open(path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()).unwrap();
    let id = Some(rustix::process::Uid::from_raw(uid));
    let gid = Some(rustix::process::Gid::from_raw(uid));
    rustix::fs::chownat(&fd, "", id, gid, AtFlags::EMPTY_PATH).unwrap();
}

/// Sets the mode of `path` (a file or a directory, never through a link)
/// through a descriptor.
pub fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path).unwrap();
    f.set_permissions(std::fs::Permissions::from_mode(mode)).unwrap();
}

// ---------------------------------------------------------------------------
// Mounts

/// A mount for one case, unmounted when dropped (also on a panic).
pub struct Mount {
    dir: PathBuf,
    /// The ext4 image behind a loop mount.
    image: Option<PathBuf>,
}

impl Mount {
    pub fn tmpfs(dir: &Path, bytes: u64) -> std::io::Result<Mount> {
        let target = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
        let opts = CString::new(format!("size={bytes},mode=0755")).unwrap();
        // SAFETY: valid NUL-terminated strings.
        let r = unsafe {
            libc::mount(c"tmpfs".as_ptr(), target.as_ptr(), c"tmpfs".as_ptr(), 0, opts.as_ptr().cast())
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mount { dir: dir.to_path_buf(), image: None })
    }

    /// A fresh 64 MiB ext4 file system from `image`, loop-mounted on `dir`.
    pub fn ext4(dir: &Path, image: &Path) -> Result<Mount, String> {
        let f = std::fs::File::create(image).map_err(|e| e.to_string())?;
        f.set_len(64 << 20).map_err(|e| e.to_string())?;
        drop(f);
        let o = Command::new("mkfs.ext4").args(["-q", "-F", p(image)]).output().map_err(|e| e.to_string())?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).into());
        }
        let m = Mount { dir: dir.to_path_buf(), image: Some(image.to_path_buf()) };
        m.mount_image()?;
        Ok(m)
    }

    fn mount_image(&self) -> Result<(), String> {
        let image = self.image.as_ref().expect("an image");
        let o = Command::new("mount")
            .args(["-t", "ext4", "-o", "loop", p(image), p(&self.dir)])
            .output()
            .map_err(|e| e.to_string())?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).into());
        }
        Ok(())
    }

    /// Shuts the ext4 file system down as a failing disk would: the
    /// journal is not flushed, and every later operation fails with EIO.
    pub fn shutdown(&self) {
        const EXT4_IOC_SHUTDOWN: libc::c_ulong = 0x8004_587D;
        const EXT4_GOING_FLAGS_NOLOGFLUSH: u32 = 2;
        if let Ok(f) = std::fs::File::open(&self.dir) {
            use std::os::fd::AsRawFd;
            let flags = EXT4_GOING_FLAGS_NOLOGFLUSH;
            // SAFETY: the ioctl reads a u32 from a valid pointer.
            unsafe { libc::ioctl(f.as_raw_fd(), EXT4_IOC_SHUTDOWN, &flags) };
        }
    }

    /// Unmounts and mounts the image again (the journal replayed, as after
    /// a reboot): what the failed disk really holds.
    pub fn remount(&self) -> Result<(), String> {
        // A full unmount, not a lazy one: mounting the image again while
        // the shut-down superblock lives on would get that superblock back
        // (the loop device is reused), still failing every I/O.
        let target = CString::new(self.dir.as_os_str().as_encoded_bytes()).unwrap();
        let t = std::time::Instant::now();
        // SAFETY: a valid path.
        while unsafe { libc::umount2(target.as_ptr(), 0) } != 0 {
            if t.elapsed() > std::time::Duration::from_secs(10) {
                return Err(format!("cannot unmount: {}", std::io::Error::last_os_error()));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.mount_image()
    }

    fn unmount(&self) {
        let target = CString::new(self.dir.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid path; MNT_DETACH so that an open file cannot keep it busy.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.unmount();
    }
}

/// Whether this process may mount tmpfs (root, as CI runs).
pub fn can_mount(root: &Path) -> bool {
    let probe = root.join("mount-probe");
    std::fs::create_dir(&probe).unwrap();
    let ok = Mount::tmpfs(&probe, 64 << 10).is_ok();
    std::fs::remove_dir(&probe).unwrap();
    ok
}

/// Whether ext4 images can be made and loop-mounted here.
pub fn can_mount_ext4(root: &Path) -> bool {
    let probe = root.join("ext4-probe");
    std::fs::create_dir(&probe).unwrap();
    let ok = Mount::ext4(&probe, &root.join("ext4-probe.img")).is_ok();
    std::fs::remove_dir(&probe).ok();
    std::fs::remove_file(root.join("ext4-probe.img")).ok();
    ok
}

/// Whether this process can act as `nobody` (root, with setpriv).
pub fn can_be_nobody() -> bool {
    rustix::process::geteuid().is_root()
        && Command::new("setpriv").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success())
}

// ---------------------------------------------------------------------------
// The canary tree

/// Files no sort is asked to touch, of several owners and modes: the
/// attacks point their links at them. Their state is taken before the sort
/// and must be the same after it.
pub struct Canary {
    pub dir: PathBuf,
    /// Root's secret, 0600.
    pub secret: PathBuf,
}

/// Type, mode, owner and content (or link target) of every entry.
pub type TreeState = BTreeMap<PathBuf, (u32, u32, Vec<u8>)>;

impl Canary {
    pub fn make(base: &Path) -> Canary {
        let dir = base.join("canary");
        std::fs::create_dir(&dir).unwrap();
        let secret = dir.join("secret");
        std::fs::write(&secret, b"root's secret, mode 0600\n").unwrap();
        chmod(&secret, 0o600);
        std::fs::write(dir.join("public"), b"world-readable\n").unwrap();
        let sub = dir.join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("run-000000"), b"not a run of any sort\n").unwrap();
        if rustix::process::geteuid().is_root() {
            let theirs = dir.join("nobodys");
            std::fs::write(&theirs, b"nobody's own\n").unwrap();
            chown(&theirs, NOBODY);
        }
        Canary { dir, secret }
    }

    pub fn state(&self) -> TreeState {
        tree_state(&self.dir)
    }
}

/// The state of every entry under `dir` (see [`TreeState`]).
pub fn tree_state(dir: &Path) -> TreeState {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let path = e.path();
            let Ok(m) = std::fs::symlink_metadata(&path) else { continue };
            let body = if m.file_type().is_symlink() {
                std::fs::read_link(&path).map(|t| t.into_os_string().into_encoded_bytes()).unwrap_or_default()
            } else if m.is_file() {
                std::fs::read(&path).unwrap_or_default()
            } else {
                if m.is_dir() {
                    stack.push(path.clone());
                }
                Vec::new()
            };
            out.insert(path, (m.mode(), m.uid(), body));
        }
    }
    out
}

/// What differs between two tree states, in words.
pub fn tree_diff(before: &TreeState, after: &TreeState) -> Vec<String> {
    let mut d = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            None => d.push(format!("{} is gone", k.display())),
            Some(w) if w != v => d.push(format!(
                "{} changed (mode {:o} -> {:o}, owner {} -> {}, {} -> {} bytes)",
                k.display(),
                v.0,
                w.0,
                v.1,
                w.1,
                v.2.len(),
                w.2.len()
            )),
            _ => {}
        }
    }
    for k in after.keys().filter(|k| !before.contains_key(*k)) {
        d.push(format!("{} appeared", k.display()));
    }
    d
}

// ---------------------------------------------------------------------------
// Layout

/// The directories and files of one sort.
pub struct Layout {
    pub tmps: Vec<PathBuf>,
    pub disks: Vec<PathBuf>,
    pub out_dir: PathBuf,
    pub input: PathBuf,
    pub output: Option<PathBuf>,
}

impl Layout {
    /// Makes the directories. Cases with another user get directories
    /// that user can use: the base searchable by all, sticky shared temp
    /// dirs (as `/tmp`), the output directory of the attack's victim, or
    /// root's directory holding nobody's file (not replaceable).
    pub fn new(base: &Path, case: &Case) -> Layout {
        let tmps: Vec<PathBuf> = (0..case.temp_dirs).map(|i| base.join(format!("tmp{i}"))).collect();
        let disks: Vec<PathBuf> = (0..case.disks).map(|i| base.join(format!("disk{i}"))).collect();
        let out_dir = base.join("out");
        for d in tmps.iter().chain(&disks).chain([&out_dir]) {
            std::fs::create_dir_all(d).unwrap();
        }
        let (input, output) = match case.output {
            Output::InPlace | Output::Unreplaceable => (out_dir.join("data"), Some(out_dir.join("data"))),
            Output::File { .. } => (base.join("in"), Some(out_dir.join("sorted"))),
            Output::Stdout => (base.join("in"), None),
        };
        if case.as_nobody() || case.attack.is_some() {
            chmod(base, 0o755);
        }
        let l = Layout { tmps, disks, out_dir, input, output };
        l.permissions(case);
        l
    }

    /// Gives the directories the owners and modes the case needs (again
    /// after a mount, which comes with its own): shared sticky temp dirs
    /// (as `/tmp`) where another user takes part, the output directory
    /// nobody's for the link swapper, shared and sticky for the names made
    /// in advance.
    pub fn permissions(&self, case: &Case) {
        if case.as_nobody() || case.attack.is_some() {
            for t in &self.tmps {
                chmod(t, 0o1777);
            }
        }
        match case.attack {
            Some(Attack::SwapLinks) => chown(&self.out_dir, NOBODY),
            Some(Attack::PreCreated) => chmod(&self.out_dir, 0o1777),
            _ => {}
        }
    }

    /// The directories that must hold nothing of emsort once a sort is over.
    pub fn scratch(&self) -> impl Iterator<Item = &PathBuf> {
        self.tmps.iter().chain(&self.disks)
    }

    /// The directory a fault of kind `w` starves or breaks.
    pub fn fault_dir(&self, case: &Case, w: Where) -> PathBuf {
        match w {
            Where::Temp if case.method == Method::Plain => self.tmps[0].clone(),
            Where::Temp => self.disks[0].clone(),
            Where::Out => self.out_dir.clone(),
        }
    }

    /// `--method M --disks a,b` and `-T` for each temp dir.
    pub fn dir_args(&self, case: &Case) -> Vec<String> {
        let mut a = Vec::new();
        if case.method != Method::Plain {
            a.push("--method".into());
            a.push(if case.method == Method::Dsm { "dsm" } else { "srm" }.into());
            a.push("--disks".into());
            a.push(self.disks.iter().map(|d| p(d)).collect::<Vec<_>>().join(","));
        }
        for t in &self.tmps {
            a.push("-T".into());
            a.push(p(t).into());
        }
        a
    }

    pub fn sort_args(&self, case: &Case) -> Vec<String> {
        let mut a: Vec<String> =
            ["sort", "-q", "--format", case.format.name(), "-S", case.memory].map(String::from).into();
        if case.block_4k {
            a.extend(["--block-size".into(), "4K".into()]);
        }
        if let Some(io) = case.io {
            a.extend(["--io".into(), io.into()]);
        }
        a.extend(self.dir_args(case));
        match case.input {
            super::case::Input::File => a.push(p(&self.input).into()),
            super::case::Input::Stdin("") => {}
            super::case::Input::Stdin(name) => a.push(name.into()),
        }
        if let Some(o) = &self.output {
            a.extend(["-o".into(), p(o).into()]);
        }
        a
    }

    /// Whether the case's faults need the output's directory writable by
    /// `nobody`'s sort: the unreplaceable case keeps it root's.
    pub fn prepare_unreplaceable(&self) {
        chmod(&self.out_dir, 0o755);
        chown(&self.input, NOBODY);
        for t in &self.tmps {
            chown(t, NOBODY);
            chmod(t, 0o700);
        }
    }
}

// ---------------------------------------------------------------------------
// The other user

/// Look-alike names the sort must leave alone, and what they hold.
pub struct LookAlikes {
    pub paths: Vec<PathBuf>,
}

/// Plants look-alikes of emsort's temporary names in `dir` beside the
/// target `name`: nobody's and root's files named almost as emsort names
/// them, a link named exactly like a temp dir (to the canary's directory),
/// a FIFO and a hard link named exactly like a temporary output.
pub fn plant_look_alikes(dir: &Path, name: &str, canary: &Canary) -> LookAlikes {
    let mut paths = Vec::new();
    let mut file = |n: String, owner: u32| {
        let f = dir.join(n);
        std::fs::write(&f, b"a look-alike\n").unwrap();
        chown(&f, owner);
        paths.push(f);
    };
    file(format!(".{name}.emsort-2024-06.tmp"), NOBODY);
    file(format!(".{name}.emsort-2024-06.tmp.bak"), 0);
    file(format!(".{name}.emsort-77-0123456789ABCDEF.tmp"), 0);
    file("emsort-2024-notes".into(), 0);
    file("emsort-12-0123456789abcde".into(), 0);
    let link = dir.join("emsort-12-0123456789abcdef");
    std::os::unix::fs::symlink(&canary.dir, &link).unwrap();
    chown(&link, NOBODY);
    paths.push(link);
    let fifo = dir.join(format!(".{name}.emsort-13-0123456789abcdef.tmp"));
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o666),
        0,
    )
    .unwrap();
    paths.push(fifo);
    let hard = dir.join(format!(".{name}.emsort-14-0123456789abcdef.tmp"));
    let target = dir.join(format!("hard-link-target-{name}"));
    std::fs::write(&target, b"two names\n").unwrap();
    std::fs::hard_link(&target, &hard).unwrap();
    paths.push(hard);
    paths.push(target);
    LookAlikes { paths }
}

/// A process of `nobody` that swaps every name looking like emsort's in
/// `dir` for a link to `to`, until killed.
pub fn swap_links(dir: &Path, to: &Path) -> Child {
    Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups", "sh", "-c"])
        .arg(
            r#"while :; do for f in "$1"/.*emsort* "$1"/emsort-*; do [ -L "$f" ] && continue; [ -e "$f" ] || continue; rm -rf "$f" && ln -s "$2" "$f"; done; done"#,
        )
        .args(["sh", p(dir), p(to)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("setpriv")
}

/// The shell prefix that makes, as `nobody`, the old scheme's temporary
/// names for its own PID in `dir` beside `name`, then becomes the sort:
/// `sh -c PREFIX sh DIR NAME emsort ARGS…`.
pub const PRE_CREATE: &str = r#"setpriv --reuid 65534 --regid 65534 --clear-groups sh -c 'i=0; while [ $i -lt 1000 ]; do : > "$1/.$2.emsort-$3-$i.tmp"; i=$((i+1)); done' sh "$1" "$2" $$ || exit 99; d=$1; shift 2; exec "$@""#;

/// The names [`PRE_CREATE`] makes, to check they stay.
pub fn pre_created(dir: &Path) -> usize {
    crate::entries(dir).iter().filter(|e| e.starts_with(".sorted.emsort-") && e.ends_with(".tmp")).count()
}
