//! Fallbacks on a file system that lacks a feature: ramfs refuses
//! `O_DIRECT` (`EINVAL` at open) and does not implement `fallocate`.

use emsort_io::{as_bytes, create_output, open_input, InputStream, OutputStream, StreamConfig, StreamKind};

use crate::util::{data, mount_or_skip, read_file, tmp, write_file, Mode};

#[test]
fn ramfs_direct_falls_back_to_buffered_io_and_says_so() {
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

    let cfg = StreamConfig::new(StreamKind::Direct).block_size(4096);
    let xs = data::<u32>(3000, 2);
    let mut out = create_output::<u32>(&p, &cfg).unwrap();
    let note = out.info().fallback.clone().expect("fallback noted for output");
    assert!(note.contains("refused O_DIRECT") && note.contains("EINVAL"), "{note}");
    out.write_all(&xs).unwrap();
    out.close().unwrap();
    assert!(std::fs::read(&p).unwrap() == as_bytes(&xs));
    let inp = open_input::<u32>(&p, &cfg).unwrap();
    assert!(inp.info().fallback.as_deref().is_some_and(|n| n.contains("refused O_DIRECT")));
    drop(inp);
    for mode in [Mode::PerElement, Mode::Mixed] {
        assert!(read_file::<u32>(&p, &cfg, mode) == xs);
        write_file(&p, &cfg, &xs, mode);
        assert!(std::fs::read(&p).unwrap() == as_bytes(&xs));
    }

    // On a file system that accepts O_DIRECT there is no fallback.
    let q = dir.path().join("disk.bin");
    let out = create_output::<u32>(&q, &cfg).unwrap();
    if std::fs::OpenOptions::new().read(true).custom_flags_direct().open(&q).is_ok() {
        assert_eq!(out.info().fallback, None);
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
