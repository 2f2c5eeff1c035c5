//! Fallbacks on a file system that lacks a feature: ramfs refuses
//! `O_DIRECT` (`EINVAL` at open) and does not implement `fallocate`.

use emsort_io::device;
use emsort_io::{as_bytes, create_output, open_input, InputStream, OutputStream, StreamConfig, StreamKind};

use crate::util::{data, mount_or_skip, read_file, tmp, write_file, Mode};

#[test]
fn ramfs_direct_kinds_fall_back_to_the_page_cache_and_say_so() {
    let dir = tmp();
    let mnt = dir.path().join("ram");
    let Some(_m) = mount_or_skip(&mnt, "ramfs", "", "ramfs_direct_falls_back") else {
        return;
    };
    let p = mnt.join("f.bin");
    // Confirm the premise with a plain open(2): ramfs really refuses O_DIRECT.
    let refused =
        std::fs::OpenOptions::new().write(true).create(true).custom_flags_direct().open(&p).unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(libc::EINVAL));

    for kind in [StreamKind::Direct, StreamKind::UringDirect] {
        let cfg = StreamConfig::new(kind).block_size(4096).queue_depth(3);
        let xs = data::<u32>(3000, 2);
        let mut out = create_output::<u32>(&p, &cfg).unwrap();
        let note = out.info().fallback.clone().expect("fallback noted for output");
        assert!(note.contains("refused O_DIRECT") && note.contains("EINVAL"), "{kind}: {note}");
        out.write_all(&xs).unwrap();
        out.close().unwrap();
        assert!(std::fs::read(&p).unwrap() == as_bytes(&xs), "{kind}");
        let inp = open_input::<u32>(&p, &cfg).unwrap();
        assert!(inp.info().fallback.as_deref().is_some_and(|n| n.contains("refused O_DIRECT")), "{kind}");
        drop(inp);
        for mode in [Mode::PerElement, Mode::Mixed] {
            assert!(read_file::<u32>(&p, &cfg, mode) == xs, "{kind}");
            write_file(&p, &cfg, &xs, mode);
            assert!(std::fs::read(&p).unwrap() == as_bytes(&xs), "{kind}");
        }

        // On a file system that accepts O_DIRECT there is no fallback.
        let q = dir.path().join("disk.bin");
        let out = create_output::<u32>(&q, &cfg).unwrap();
        if std::fs::OpenOptions::new().read(true).custom_flags_direct().open(&q).is_ok() {
            assert_eq!(out.info().fallback, None, "{kind}");
        }
    }
}

#[test]
fn ramfs_mmap_grows_with_ftruncate_and_says_so() {
    let dir = tmp();
    let mnt = dir.path().join("ram");
    let Some(_m) = mount_or_skip(&mnt, "ramfs", "", "ramfs_mmap_grows_with_ftruncate") else {
        return;
    };
    let p = mnt.join("f.bin");
    let cfg = StreamConfig::new(StreamKind::Mmap).block_size(4096);
    let xs = data::<u64>(5000, 4);
    let mut out = create_output::<u64>(&p, &cfg).unwrap();
    out.write_all(&xs).unwrap();
    let note = out.info().fallback.clone().expect("fallocate fallback noted");
    assert!(note.contains("fallocate") && note.contains("ftruncate"), "{note}");
    out.close().unwrap();
    assert!(std::fs::read(&p).unwrap() == as_bytes(&xs));
    let mut inp = open_input::<u64>(&p, &cfg).unwrap();
    let mut back = vec![0u64; xs.len()];
    assert_eq!(inp.read_into(&mut back).unwrap(), xs.len());
    assert!(back == xs);
}

/// `OpenOptions::custom_flags(O_DIRECT)` with a readable name.
trait DirectFlag {
    fn custom_flags_direct(&mut self) -> &mut Self;
}

impl DirectFlag for std::fs::OpenOptions {
    fn custom_flags_direct(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::custom_flags(self, libc::O_DIRECT)
    }
}

/// Issue 38: the sorts' default kind. A tmpfs temp dir is memory (the probe's
/// writes keep the thread on the CPU): `direct`, one request at a time; no
/// probe (a sort without runs): `uring-direct`; a missing directory cannot
/// be probed: `uring-direct`, and the reason says so; a directory on a
/// device: `uring-direct` with Q from its bandwidth × latency, or `direct`
/// where one request at a time gets most of its bandwidth (`uring` when the
/// runs fit in the page cache's dirty room and the device is slower than
/// the page cache's copies), or `direct` if the device answers as fast as
/// memory.
#[test]
fn the_sort_default_probes_the_temp_dir() {
    let dir = tmp();
    let m = device::QUEUED_MEMORY;
    let d = device::choose(None, None, m, None);
    assert_eq!(d.kind, StreamKind::UringDirect, "{}", d.why);
    assert!(d.why.contains("no probe"), "{}", d.why);
    let d = device::choose(None, None, m - 1, None);
    assert_eq!(d.kind, StreamKind::Direct, "{}", d.why);
    let d = device::choose(Some(&dir.path().join("missing")), None, m, None);
    assert_eq!(d.kind, StreamKind::UringDirect, "{}", d.why);
    assert!(d.why.contains("could not be probed"), "{}", d.why);
    // The probe measures what it says, and its Q follows from its figures.
    if let Some(c) = device::DeviceCost::probe(dir.path()) {
        let d = device::choose(Some(dir.path()), None, m, None);
        let (lo, hi) = device::QUEUE_DEPTHS;
        if d.kind == StreamKind::UringDirect {
            assert!((lo..=hi).contains(&d.queue_depth), "{}", d.why);
            assert!(d.why.contains("bandwidth × latency"), "{}", d.why);
        }
        // Runs the page cache keeps until they are deleted: the cache, unless
        // its copies cost more than the device (both measured here).
        let d = device::choose(Some(dir.path()), Some(1 << 20), m, None);
        if d.kind == StreamKind::Uring {
            assert!(d.why.contains("write-back threshold"), "{}", d.why);
        } else {
            // (A second probe may find memory where the first found a device.)
            assert!(d.why.contains("fit in the page cache") || d.why.contains("memory"), "{}", d.why);
        }
        assert!(c.latency > std::time::Duration::ZERO && c.on_cpu >= 0.0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
    let mnt = dir.path().join("shm");
    let Some(_m) = mount_or_skip(&mnt, "tmpfs", "size=64m", "the_sort_default_probes") else {
        return;
    };
    let d = device::choose(Some(&mnt), None, m, None);
    assert_eq!(d.kind, StreamKind::Direct, "{}", d.why);
    assert!(d.why.contains("on the CPU") && d.why.contains("memory"), "{}", d.why);
    // The probe's file had no name: nothing is left.
    assert_eq!(std::fs::read_dir(&mnt).unwrap().count(), 0);
}
