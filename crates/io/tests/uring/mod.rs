//! io_uring refused by the system: a clear `UringUnavailable` error.
//!
//! A child process installs a seccomp filter that makes `io_uring_setup`
//! fail with `ENOSYS` (what a kernel without io_uring, or a container
//! runtime's default profile, does) and then opens `uring` streams.

use emsort_io::{
    as_bytes, create_output, open_input, ErrorKind, InputStream, OutputStream, StreamConfig, StreamKind,
};

#[cfg(target_arch = "x86_64")]
use crate::util::deny_io_uring_setup;
use crate::util::{data, is_child, run_child, test_name, tmp};

#[cfg(target_arch = "x86_64")]
#[test]
fn uring_unavailable_is_a_clear_error() {
    let name = test_name(module_path!(), "uring_unavailable_is_a_clear_error");
    if !is_child(&name) {
        run_child(&name, &[], || Ok(()));
        return;
    }
    let dir = tmp();
    let xs = data::<u32>(1000, 1);
    let p = dir.path().join("in.bin");
    std::fs::write(&p, as_bytes(&xs)).unwrap();
    let cfg = StreamConfig::new(StreamKind::Uring).block_size(4096);
    // Before the filter, io_uring works here.
    open_input::<u32>(&p, &cfg).expect("io_uring works before the filter");

    deny_io_uring_setup();

    let e = open_input::<u32>(&p, &cfg).err().expect("uring input must fail under the filter");
    assert_eq!(*e.kind(), ErrorKind::UringUnavailable, "{e}");
    let msg = e.to_string();
    assert!(msg.contains("io_uring is unavailable"), "{msg}");
    assert!(msg.contains(&p.display().to_string()), "{msg}");
    assert_eq!(
        std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .and_then(|s| s.raw_os_error()),
        Some(libc::ENOSYS)
    );

    let q = dir.path().join("out.bin");
    let e = create_output::<u32>(&q, &cfg).err().expect("uring output must fail under the filter");
    assert_eq!(*e.kind(), ErrorKind::UringUnavailable, "{e}");
    assert!(e.to_string().contains("io_uring is unavailable"), "{e}");

    // The other kinds are unaffected by the filter.
    let cfg = StreamConfig::new(StreamKind::Buffered);
    let mut out = create_output::<u32>(&q, &cfg).unwrap();
    out.write_all(&xs).unwrap();
    out.close().unwrap();
    let mut inp = open_input::<u32>(&q, &cfg).unwrap();
    assert_eq!(inp.len(), 1000);
    inp.close().unwrap();
}
