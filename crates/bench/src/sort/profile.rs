//! The machine profiles of a matrix ([`super::matrix`]): what each one
//! is, how it is named, and the facts a campaign records beside its
//! results when it runs on one ([`ProfileFacts`], `machine.json`'s
//! `profile`).

use serde::Serialize;

use emsort_sort::simd::{self, Level};

use crate::machine::MountInfo;
use crate::sort::fio::DeviceFacts;

/// The environment variable that forces emsort's SIMD level
/// ([`emsort_sort::simd`]).
pub const SIMD_ENV: &str = "EMSORT_SIMD";

/// One machine profile the matrix can make (see [`super::matrix`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The work directory's file system as it is (the root file system).
    Root,
    /// xfs made with `mkfs.xfs` on an image file, loop-mounted.
    Xfs,
    /// btrfs made with `mkfs.btrfs` on an image file, loop-mounted.
    Btrfs,
    /// A tmpfs mount: memory, no device (the CPU bound's own ground).
    Tmpfs,
    /// The root profile with emsort's SIMD level forced lower
    /// (`EMSORT_SIMD`).
    Simd(Level),
}

impl Profile {
    /// `root`, `xfs`, `btrfs`, `tmpfs`, `simd-avx2`, `simd-scalar`: the
    /// profile's name in lists, folders and the `profile` column.
    pub fn name(self) -> String {
        match self {
            Profile::Root => "root".into(),
            Profile::Xfs => "xfs".into(),
            Profile::Btrfs => "btrfs".into(),
            Profile::Tmpfs => "tmpfs".into(),
            Profile::Simd(l) => format!("simd-{l}"),
        }
    }

    /// What the profile is, in a few words.
    pub fn description(self) -> String {
        match self {
            Profile::Root => "the work directory's file system as it is".into(),
            Profile::Xfs => "xfs (mkfs.xfs defaults) on a sparse image file in the work directory, \
                             loop-mounted with direct I/O"
                .into(),
            Profile::Btrfs => "btrfs (mkfs.btrfs defaults) on a sparse image file in the work directory, \
                               loop-mounted with direct I/O"
                .into(),
            Profile::Tmpfs => "a tmpfs mount: memory, no device".into(),
            Profile::Simd(l) => {
                format!("the work directory's file system as it is, emsort's SIMD level forced to {l} (EMSORT_SIMD)")
            }
        }
    }

    /// The SIMD level forced on emsort's runs, if any.
    pub fn simd(self) -> Option<Level> {
        match self {
            Profile::Simd(l) => Some(l),
            _ => None,
        }
    }

    /// Every profile this machine can be asked for: root, xfs, btrfs,
    /// tmpfs, and a `simd-LEVEL` for each level below the CPU's.
    pub fn all() -> Vec<Profile> {
        let mut v = vec![Profile::Root, Profile::Xfs, Profile::Btrfs, Profile::Tmpfs];
        v.extend(simd_below_detected().into_iter().map(Profile::Simd));
        v
    }
}

/// The SIMD levels below the CPU's, highest first.
fn simd_below_detected() -> Vec<Level> {
    let cpu = simd::detected();
    simd::levels().into_iter().rev().filter(|l| *l < cpu).collect()
}

/// Parses a profile list: `all`, or names from `root`, `xfs`, `btrfs`,
/// `tmpfs`, `simd` (each level below the CPU's) and `simd-LEVEL`, in the
/// order given, each once.
///
/// ```
/// use emsort_bench::sort::profile::{parse_profiles, Profile};
/// assert_eq!(parse_profiles("tmpfs,root,tmpfs"), Ok(vec![Profile::Tmpfs, Profile::Root]));
/// assert!(parse_profiles("ext2").is_err());
/// ```
pub fn parse_profiles(s: &str) -> std::result::Result<Vec<Profile>, String> {
    let mut v: Vec<Profile> = Vec::new();
    let mut push = |p: Profile| {
        if !v.contains(&p) {
            v.push(p);
        }
    };
    for item in crate::list::split_list(s)? {
        match item.to_ascii_lowercase().as_str() {
            "all" => Profile::all().into_iter().for_each(&mut push),
            "root" => push(Profile::Root),
            "xfs" => push(Profile::Xfs),
            "btrfs" => push(Profile::Btrfs),
            "tmpfs" => push(Profile::Tmpfs),
            "simd" => simd_below_detected().into_iter().map(Profile::Simd).for_each(&mut push),
            other => {
                let level = other.strip_prefix("simd-").and_then(Level::parse).ok_or_else(|| {
                    format!("unknown profile '{item}' (expected root, xfs, btrfs, tmpfs, simd, simd-LEVEL or all)")
                })?;
                let cpu = simd::detected();
                if level >= cpu {
                    return Err(format!(
                        "profile '{item}': {cpu} is this CPU's own level (the root profile runs it); \
                         a simd profile forces a lower one"
                    ));
                }
                push(Profile::Simd(level));
            }
        }
    }
    Ok(v)
}

/// The facts of one profile, recorded in its folder's `machine.json`
/// (`profile`) and in the matrix's `profiles.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileFacts {
    /// The profile's name (`root`, `xfs` …).
    pub name: String,
    /// What it is ([`Profile::description`]).
    pub description: String,
    /// The directory its inputs, runs and outputs went to.
    pub work_dir: String,
    /// The mount that holds it (`/proc/self/mountinfo`): file system,
    /// source, mount options and the file system's own options.
    pub mount: Option<MountInfo>,
    /// The image and loop device behind a loop mount.
    pub image: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// The CPU's highest SIMD level.
    pub simd_detected: String,
    /// The level emsort's runs used (forced, or the detected one).
    pub simd: String,
    /// The device as fio measured it in this directory (1 MiB requests:
    /// latency at queue depth 1, bandwidth at 32).
    pub device: Option<DeviceFacts>,
    /// Why `device` is missing (fio not installed, or it failed).
    pub device_note: Option<String>,
    /// How the I/O bound was measured.
    pub io_bound: String,
}

impl ProfileFacts {
    /// One sentence for a README: `xfs: xfs (rw,relatime,…) on /dev/loop3
    /// …; SIMD avx2 (forced; the CPU has avx512); 1 MiB QD 1 read 1.2 ms,
    /// write 0.9 ms; QD 32 read 750 MiB/s, write 1.2 GiB/s`.
    pub fn sentence(&self) -> String {
        let fs = match &self.mount {
            Some(m) => format!(
                "{} on {} mounted at {} ({}; {})",
                m.fs_type, m.source, m.mount_point, m.mount_options, m.super_options
            ),
            None => "file system unknown".into(),
        };
        let image = self.image.as_ref().map(|i| format!(", {i}")).unwrap_or_default();
        let device = match (&self.device, &self.device_note) {
            (Some(d), _) => format!("; {}", device_sentence(d)),
            (None, Some(n)) => format!("; no device facts: {n}"),
            (None, None) => String::new(),
        };
        format!("`{}`, {}: {fs}{image}; SIMD {}{device}", self.name, self.description, self.simd)
    }
}

/// `1 MiB requests: QD 1 read 1.20 ms, write 0.90 ms; QD 32 read 750
/// MiB/s, write 1.2 GiB/s`.
pub fn device_sentence(d: &DeviceFacts) -> String {
    format!(
        "1 MiB O_DIRECT requests: QD 1 read {:.2} ms, write {:.2} ms; QD 32 read {}, write {}",
        d.read_latency_qd1_ms,
        d.write_latency_qd1_ms,
        rate(d.read_bandwidth_qd32),
        rate(d.write_bandwidth_qd32)
    )
}

/// Bytes per second as `750 MiB/s` or `1.2 GiB/s`.
pub fn rate(bytes_per_s: f64) -> String {
    let mib = bytes_per_s / (1u64 << 20) as f64;
    if mib >= 1024.0 {
        format!("{:.1} GiB/s", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lists() {
        let all = parse_profiles("all").unwrap();
        assert_eq!(&all[..4], [Profile::Root, Profile::Xfs, Profile::Btrfs, Profile::Tmpfs]);
        assert_eq!(all.len(), 4 + simd::levels().len() - 1);
        assert!(all[4..].iter().all(|p| p.simd().is_some_and(|l| l < simd::detected())));
        let names: Vec<String> = all.iter().map(|p| p.name()).collect();
        assert_eq!(names[..4], ["root", "xfs", "btrfs", "tmpfs"]);
        assert!(parse_profiles("simd-avx512").is_err() || simd::detected() > Level::Avx512);
        if simd::detected() > Level::Scalar {
            assert_eq!(parse_profiles("SIMD-scalar"), Ok(vec![Profile::Simd(Level::Scalar)]));
            assert_eq!(Profile::Simd(Level::Scalar).name(), "simd-scalar");
        } else {
            assert!(parse_profiles("simd-scalar").is_err());
        }
        assert!(parse_profiles("root,,xfs").is_err());
        assert_eq!(rate(750.0 * (1 << 20) as f64), "750 MiB/s");
        assert_eq!(rate(1.5 * (1u64 << 30) as f64), "1.5 GiB/s");
    }
}
