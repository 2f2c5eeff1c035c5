//! Facts about the machine, recorded beside every result (`machine.json`).
//!
//! A time measured on a shared virtual machine means little without the
//! machine: [`Machine::collect`] reads the CPU model and core count, the
//! memory, the kernel, the file system type of the work directory
//! (`statfs` `f_type`, named by [`fs_type_name`]), the device's
//! `read_ahead_kb`, whether the kernel hands freed memory back to a
//! hypervisor (free page reporting), and records the tool's version, the exact command line,
//! the date and how the page cache was emptied.
//!
//! ```no_run
//! use emsort_bench::machine::Machine;
//! use emsort_io::cache::CacheMethod;
//! let m = Machine::collect("/tmp".as_ref(), CacheMethod::Fadvise, "emsort bench streams", "0.1.0");
//! println!("{}", serde_json::to_string_pretty(&m).unwrap());
//! ```

use std::path::Path;

use emsort_io::cache::{self, CacheMethod};
use serde::Serialize;

/// What `machine.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// CPU model name (`/proc/cpuinfo`), when known.
    pub cpu_model: Option<String>,
    /// Logical CPUs this process may use.
    pub cores: usize,
    /// Physical memory in bytes (`/proc/meminfo` `MemTotal`), when known.
    pub memory_bytes: Option<u64>,
    /// Memory available for new work in bytes (`MemAvailable`) at the start.
    pub memory_available_bytes: Option<u64>,
    /// Kernel name and release (`uname`).
    pub kernel: String,
    /// The directory the data files were written to.
    pub work_dir: String,
    /// File system type of the work directory (`ext4`, `xfs`, `tmpfs` …).
    pub fs_type: String,
    /// The file system's magic number (`statfs` `f_type`), in hex.
    pub fs_magic: String,
    /// Read-ahead of the work directory's block device in KiB, when found.
    pub read_ahead_kb: Option<u64>,
    /// Free page reporting to the hypervisor: the order of the free blocks
    /// the guest reports (`/sys/module/page_reporting/parameters/page_reporting_order`;
    /// 9 = 2 MiB), when the kernel has it. The host reclaims reported
    /// memory, so every `drop_caches` before a cold run hands memory back
    /// that the next run must get again (bench/results/2026-11-22d-readers).
    pub page_reporting_order: Option<u32>,
    /// emsort's version.
    pub emsort_version: String,
    /// The command line that started the campaign.
    pub command_line: String,
    /// Local date and time at the start, ISO 8601 with the UTC offset.
    pub date: String,
    /// How the page cache was emptied before each run (`drop`, `fadvise`, `none`).
    pub cache_method: String,
    /// Whether this process could write `/proc/sys/vm/drop_caches`.
    pub drop_caches_possible: bool,
    /// The element type of the data files.
    pub element: String,
}

/// `path` as recorded in results: relative to the current directory when
/// it lies below it (so recorded files name no absolute path of the machine
/// they were made on), else as given.
pub fn relative(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match std::env::current_dir().ok().and_then(|cwd| abs.strip_prefix(cwd).ok().map(Path::to_path_buf)) {
        Some(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// `path` relative to the current directory, always: below it as
/// [`relative`] gives it, elsewhere with `..` steps (`../other/dir`), so
/// that a recorded file names no absolute path of the machine it was made
/// on (issue 19). The path is made absolute lexically (no symbolic link
/// resolved); as given when the current directory is unknown.
pub fn relative_path(path: &Path) -> String {
    use std::path::Component;
    let (Ok(abs), Ok(cwd)) = (std::path::absolute(path), std::env::current_dir()) else {
        return path.display().to_string();
    };
    let parts = |p: &Path| -> Vec<std::ffi::OsString> {
        let mut v: Vec<std::ffi::OsString> = Vec::new();
        for c in p.components() {
            match c {
                Component::Normal(n) => v.push(n.to_os_string()),
                Component::ParentDir => {
                    v.pop();
                }
                _ => {}
            }
        }
        v
    };
    let (a, c) = (parts(&abs), parts(&cwd));
    let common = a.iter().zip(&c).take_while(|(x, y)| x == y).count();
    let mut rel = std::path::PathBuf::new();
    for _ in common..c.len() {
        rel.push("..");
    }
    for n in &a[common..] {
        rel.push(n);
    }
    if rel.as_os_str().is_empty() {
        ".".to_string()
    } else {
        rel.display().to_string()
    }
}

/// A command line for a results file: the program by its file name
/// (`emsort`, not where this machine keeps it), every absolute path among
/// the arguments (`/x/y`, `--flag=/x/y`) made relative to the current
/// directory ([`relative_path`]), and arguments with blanks or quotes
/// quoted for a shell.
pub fn portable_command_line(args: impl IntoIterator<Item = String>) -> String {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let a = if i == 0 {
                Path::new(&a).file_name().map_or(a.clone(), |n| n.to_string_lossy().into_owned())
            } else if a.starts_with('/') {
                relative_path(Path::new(&a))
            } else {
                match a.split_once('=') {
                    Some((flag, v)) if flag.starts_with('-') && v.starts_with('/') => {
                        format!("{flag}={}", relative_path(Path::new(v)))
                    }
                    _ => a,
                }
            };
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `/sys/block/<disk>/queue/read_ahead_kb` of the disk holding `path` (the
/// whole disk's for a partition, as [`cache::read_ahead_kb`] reads it),
/// when sysfs has it.
pub fn read_ahead_file(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let real =
        std::fs::canonicalize(format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev))).ok()?;
    let disk = if real.join("queue").is_dir() { real } else { real.parent()?.to_path_buf() };
    let name = disk.file_name()?.to_str()?.to_string();
    disk.join("queue/read_ahead_kb").exists().then(|| format!("/sys/block/{name}/queue/read_ahead_kb"))
}

impl Machine {
    /// Collects the facts for a campaign working in `work_dir`.
    pub fn collect(work_dir: &Path, cache: CacheMethod, command_line: &str, version: &str) -> Machine {
        let (fs_type, fs_magic) = fs_type(work_dir);
        let uname = rustix::system::uname();
        Machine {
            cpu_model: cpu_model(),
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            memory_bytes: meminfo("MemTotal:"),
            memory_available_bytes: meminfo("MemAvailable:"),
            kernel: format!("{} {}", uname.sysname().to_string_lossy(), uname.release().to_string_lossy()),
            work_dir: relative(work_dir),
            fs_type,
            fs_magic,
            read_ahead_kb: cache::read_ahead_kb(work_dir),
            page_reporting_order: page_reporting_order(),
            emsort_version: version.to_string(),
            command_line: command_line.to_string(),
            date: local_datetime(),
            cache_method: cache.name().to_string(),
            drop_caches_possible: cache::can_drop_caches(),
            element: "u32 (native byte order)".to_string(),
        }
    }
}

/// The order of the free blocks the kernel reports to a hypervisor, when
/// free page reporting is built in (a virtio balloon that offers it).
pub fn page_reporting_order() -> Option<u32> {
    std::fs::read_to_string("/sys/module/page_reporting/parameters/page_reporting_order")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The kernel's `fault_around_bytes` (how much of the page cache a page
/// fault maps around the faulting page), from debugfs
/// (`/sys/kernel/debug/fault_around_bytes`), or `unknown` and why.
pub fn fault_around_bytes() -> String {
    const PATH: &str = "/sys/kernel/debug/fault_around_bytes";
    match std::fs::read_to_string(PATH) {
        Ok(s) => s.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            "unknown (debugfs not mounted at /sys/kernel/debug)".to_string()
        }
        Err(e) => format!("unknown ({PATH}: {e})"),
    }
}

/// The block device holding `path` (`vda`, `nvme0n1p2` …), from sysfs.
pub fn block_device(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let uevent = format!("/sys/dev/block/{}:{}/uevent", libc::major(dev), libc::minor(dev));
    let text = std::fs::read_to_string(uevent).ok()?;
    text.lines().find_map(|l| l.strip_prefix("DEVNAME=")).map(str::to_string)
}

/// The control groups of this process and the memory controllers on offer:
/// cgroup v2's controllers at its group, and where cgroup v1's `memory`
/// hierarchy is mounted, as one line each.
pub fn cgroup_facts() -> (String, String) {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mount_of = |pred: &dyn Fn(&[&str]) -> bool| {
        mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 3 && pred(f.as_slice()))
            .map(|f| f[1].to_string())
    };
    let v2 = match mount_of(&|f| f[2] == "cgroup2") {
        Some(m) => {
            let rel = own.lines().find_map(|l| l.strip_prefix("0::")).unwrap_or("/");
            let dir = Path::new(&m).join(rel.trim_start_matches('/'));
            let read = |f: &str| {
                std::fs::read_to_string(dir.join(f)).map(|s| s.trim().to_string()).unwrap_or_default()
            };
            format!(
                "cgroup2 at {m}, group {rel}: controllers '{}', subtree_control '{}'",
                read("cgroup.controllers"),
                read("cgroup.subtree_control")
            )
        }
        None => "no cgroup2 mounted".to_string(),
    };
    let v1 = match mount_of(&|f| f[2] == "cgroup" && f[3].split(',').any(|o| o == "memory")) {
        Some(m) => {
            let rel = own.lines().find_map(|l| l.split_once(":memory:").map(|(_, r)| r)).unwrap_or("?");
            format!("cgroup v1 memory at {m}, group {rel}")
        }
        None => "no cgroup v1 memory hierarchy".to_string(),
    };
    (v2, v1)
}

/// The name of a file system from its `statfs` magic number
/// (`linux/magic.h`), or `"unknown"`.
pub fn fs_type_name(magic: u64) -> &'static str {
    match magic {
        0xEF53 => "ext2/3/4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x8584_58f6 => "ramfs",
        0x794c_7630 => "overlayfs",
        0x2fc1_2fc1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0x6969 => "nfs",
        0xFF53_4D42 | 0xFE53_4D42 => "cifs/smb",
        0x6573_5546 => "fuse",
        0x0102_1997 => "9p",
        0x5346_544e => "ntfs",
        0x4d44 => "vfat",
        0x2011_BAB0 => "exfat",
        0x7275 => "romfs",
        0x7371_7368 => "squashfs",
        0x3153_464a => "jfs",
        0x5265_4973 => "reiserfs",
        0xCA45_1A4E => "bcachefs",
        _ => "unknown",
    }
}

/// The file system type of `path` and its `statfs` magic number in hex.
///
/// The name comes from `/proc/self/mounts` (the mount holding `path`), which
/// tells ext4 from ext2; the magic number is the fallback.
pub fn fs_type(path: &Path) -> (String, String) {
    let magic = rustix::fs::statfs(path).ok().map(|s| s.f_type as u64);
    let name = mount_fs_type(path)
        .or_else(|| magic.map(|m| fs_type_name(m).to_string()))
        .unwrap_or_else(|| "unknown".to_string());
    (name, magic.map(|m| format!("0x{m:x}")).unwrap_or_default())
}

/// The type of the mount whose mount point is the longest prefix of `path`.
fn mount_fs_type(path: &Path) -> Option<String> {
    mount_of(path).map(|(ty, _)| ty)
}

/// The mount options of the mount holding `path` (`rw,relatime,discard`),
/// `unknown` when not found.
pub fn mount_options(path: &Path) -> String {
    mount_of(path).map_or_else(|| "unknown".into(), |(_, opts)| opts)
}

/// The type and options of the mount whose mount point is the longest
/// prefix of `path`.
fn mount_of(path: &Path) -> Option<(String, String)> {
    let path = std::fs::canonicalize(path).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_dev, point, ty, opts) = (f.next()?, f.next()?, f.next()?, f.next()?);
            // /proc/mounts escapes blanks as octal (\040 for a space).
            let point = point.replace("\\040", " ").replace("\\011", "\t");
            path.starts_with(&point).then(|| (point.len(), (ty.to_string(), opts.to_string())))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, m)| m)
}

/// The mount that holds a path, from `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountInfo {
    /// The mount point.
    pub mount_point: String,
    /// The file system type (`ext4`, `xfs`, `tmpfs` …).
    pub fs_type: String,
    /// What is mounted (`/dev/vda`, `/dev/loop3`, `tmpfs`).
    pub source: String,
    /// The mount's options (`rw,relatime`).
    pub mount_options: String,
    /// The file system's own options (`rw,discard,…`, `rw,size=…`).
    pub super_options: String,
}

/// The mount holding `path`: the last entry of `/proc/self/mountinfo`
/// (the top of a stack of mounts) whose mount point is the longest
/// prefix of the path made canonical.
pub fn mount_info(path: &Path) -> Option<MountInfo> {
    let path = std::fs::canonicalize(path).ok()?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(usize, MountInfo)> = None;
    for line in text.lines() {
        let Some(m) = parse_mountinfo_line(line) else { continue };
        if path.starts_with(&m.mount_point)
            && best.as_ref().is_none_or(|(len, _)| m.mount_point.len() >= *len)
        {
            best = Some((m.mount_point.len(), m));
        }
    }
    best.map(|(_, m)| m)
}

/// One line of `/proc/self/mountinfo`: `ID PARENT MAJ:MIN ROOT POINT
/// OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER_OPTIONS` (blanks in paths
/// escaped as octal).
fn parse_mountinfo_line(line: &str) -> Option<MountInfo> {
    let unescape = |s: &str| {
        s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
    };
    let (head, tail) = line.split_once(" - ")?;
    let h: Vec<&str> = head.split(' ').collect();
    let t: Vec<&str> = tail.split(' ').collect();
    if h.len() < 6 || t.len() < 3 {
        return None;
    }
    Some(MountInfo {
        mount_point: unescape(h[4]),
        fs_type: t[0].to_string(),
        source: unescape(t[1]),
        mount_options: h[5].to_string(),
        super_options: t[2].to_string(),
    })
}

/// Whether a file system type keeps its files in memory (page-cache
/// measurements there say nothing about a disk).
pub fn is_memory_fs(fs_type: &str) -> bool {
    matches!(fs_type, "tmpfs" | "ramfs")
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// The CPU's model name (`/proc/cpuinfo`), when known.
pub fn cpu_model_name() -> Option<String> {
    cpu_model()
}

pub(crate) use emsort_io::meminfo;

/// Local time as `YYYY-MM-DDTHH:MM:SS+HH:MM`.
pub fn local_datetime() -> String {
    match local_tm() {
        Some(tm) => {
            let off = tm.tm_gmtoff;
            let sign = if off < 0 { '-' } else { '+' };
            let off = off.unsigned_abs();
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{sign}{:02}:{:02}",
                tm.tm_year + 1900,
                tm.tm_mon + 1,
                tm.tm_mday,
                tm.tm_hour,
                tm.tm_min,
                tm.tm_sec,
                off / 3600,
                off % 3600 / 60
            )
        }
        None => String::from("unknown"),
    }
}

/// Local date as `YYYY-MM-DD` (for dated result folders).
pub fn local_date() -> String {
    let dt = local_datetime();
    dt.get(..10).unwrap_or(&dt).to_string()
}

fn local_tm() -> Option<libc::tm> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?;
    let t = now.as_secs() as libc::time_t;
    // SAFETY: `tm` is plain old data, zero is a valid value for every field,
    // and localtime_r writes only into the `tm` it is given (thread safe,
    // unlike localtime).
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            None
        } else {
            Some(tm)
        }
    }
}

/// The facts of `dir/machine.json` as a campaign recorded them, for the
/// reports a `--plot-only` remakes: `Null` when the file is missing, an
/// error naming it when it is unreadable or not JSON.
pub(crate) fn read_facts(dir: &Path) -> crate::Result<serde_json::Value> {
    let path = dir.join("machine.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| crate::Error::Campaign(format!("{}: not JSON: {e}", relative_path(&path)))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(serde_json::Value::Null),
        Err(e) => Err(crate::Error::io("read", &path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_common_file_systems() {
        assert_eq!(fs_type_name(0xEF53), "ext2/3/4");
        assert_eq!(fs_type_name(0x0102_1994), "tmpfs");
        assert_eq!(fs_type_name(0x1234), "unknown");
        assert!(is_memory_fs("tmpfs"));
        assert!(!is_memory_fs("xfs"));
    }

    #[test]
    fn reads_mountinfo_lines() {
        let m = parse_mountinfo_line(
            "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534",
        )
        .unwrap();
        assert_eq!(
            (m.mount_point.as_str(), m.fs_type.as_str(), m.source.as_str()),
            ("/", "ext4", "/dev/vda")
        );
        assert_eq!(
            (m.mount_options.as_str(), m.super_options.as_str()),
            ("rw,relatime", "rw,discard,resv_strict,resuid=65534,resgid=65534")
        );
        let m = parse_mountinfo_line("90 27 7:3 / /w/a\\040b rw,relatime shared:5 - xfs /dev/loop3 rw,attr2")
            .unwrap();
        assert_eq!((m.mount_point.as_str(), m.fs_type.as_str()), ("/w/a b", "xfs"));
        assert!(parse_mountinfo_line("garbage").is_none());
        let root = mount_info(Path::new("/")).unwrap();
        assert_eq!(root.mount_point, "/");
    }

    #[test]
    fn date_looks_like_iso_8601() {
        let d = local_datetime();
        assert_eq!(d.len(), 25, "{d}");
        assert_eq!(&d[4..5], "-");
        assert_eq!(&d[10..11], "T");
        assert_eq!(local_date().len(), 10);
    }

    #[test]
    fn recorded_paths_and_command_lines_are_relative() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(relative_path(&cwd.join("a/b")), "a/b");
        assert_eq!(relative_path(Path::new("a/../c")), "c");
        assert_eq!(relative_path(&cwd), ".");
        let parent = cwd.parent().unwrap();
        let up = relative_path(&parent.join("zz"));
        assert_eq!(up, "../zz");
        let line = portable_command_line(
            ["/usr/local/bin/emsort", "bench", "-o", "/", "--dir=/", "two words"].map(String::from),
        );
        let root = "../".repeat(cwd.components().count() - 1);
        let root = root.trim_end_matches('/');
        assert_eq!(line, format!("emsort bench -o {root} --dir={root} 'two words'"));
        assert!(!line.contains(&*cwd.to_string_lossy()) || cwd == Path::new("/"));
    }

    #[test]
    fn collects_on_this_machine() {
        let dir = tempfile::tempdir().unwrap();
        let m = Machine::collect(dir.path(), CacheMethod::None, "emsort x", "9.9.9");
        assert!(m.cores >= 1);
        assert_ne!(m.fs_type, "");
        assert_eq!(m.cache_method, "none");
        assert_eq!(m.emsort_version, "9.9.9");
    }
}
