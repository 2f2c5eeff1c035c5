//! io_uring refused by the system: a clear `UringUnavailable` error.
//!
//! A child process installs a seccomp filter that makes `io_uring_setup`
//! fail with `ENOSYS` (what a kernel without io_uring, or a container
//! runtime's default profile, does) and then opens `uring` streams.

use emsort_io::{
    as_bytes, create_output, open_input, ErrorKind, InputStream, OutputStream, StreamConfig, StreamKind,
};

use crate::util::{data, is_child, run_child, test_name, tmp};

/// `AUDIT_ARCH_X86_64` from `<linux/audit.h>` (not in the `libc` crate).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;

/// Installs, for this thread and its children, a classic-BPF seccomp filter:
/// on this architecture, `io_uring_setup` returns `ENOSYS`; everything else
/// is allowed.
#[cfg(target_arch = "x86_64")]
fn deny_io_uring_setup() {
    use libc::{sock_filter, sock_fprog, BPF_ABS, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let stmt = |code: u32, k: u32| sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jeq = |k: u32, jt: u8, jf: u8| sock_filter { code: (BPF_JMP | BPF_JEQ | BPF_K) as u16, jt, jf, k };
    // struct seccomp_data { int nr; __u32 arch; __u64 ip; __u64 args[6]; }
    let mut prog = [
        stmt(BPF_LD | BPF_W | BPF_ABS, 4),          // A = arch
        jeq(AUDIT_ARCH, 0, 3),                      // other arch → allow
        stmt(BPF_LD | BPF_W | BPF_ABS, 0),          // A = nr
        jeq(libc::SYS_io_uring_setup as u32, 0, 1), // not setup → allow
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    let fprog = sock_fprog { len: prog.len() as u16, filter: prog.as_mut_ptr() };
    // SAFETY: `fprog` points to a valid program for the duration of the call.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0, "PR_SET_NO_NEW_PRIVS");
        let r = libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &fprog);
        assert_eq!(r, 0, "seccomp: {}", std::io::Error::last_os_error());
    }
}

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
