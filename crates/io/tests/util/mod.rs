//! Helpers shared by the integration tests: temp dirs, data, writing and
//! reading with every access pattern, child processes, mounts.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use emsort_io::{
    create_output, open_input, Element, ErrorKind, InputStream, OutputStream, StreamConfig, StreamKind,
};

/// A fresh temporary directory (removed when dropped).
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// `n` pseudo-random elements (xorshift bytes), different per `seed`.
pub fn data<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let bytes: Vec<u8> = (0..n * T::SIZE)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect();
    let mut v = vec![T::zeroed(); n];
    emsort_io::as_bytes_mut(&mut v).copy_from_slice(&bytes);
    v
}

/// How a test drives a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `write` / `read_next` one element at a time.
    PerElement,
    /// One `write_all` / `read_into` with a large buffer.
    Bulk,
    /// Per-element and bulk calls of varying sizes mixed, with
    /// `end_of_stream` checks in between.
    Mixed,
}

pub const MODES: [Mode; 3] = [Mode::PerElement, Mode::Bulk, Mode::Mixed];

/// Chunk sizes the mixed mode cycles through (0 means one per-element call).
const MIXED_CHUNKS: [usize; 7] = [0, 3, 0, 1, 100, 0, 4097];

/// Writes `xs` to `path` with `cfg` driven as `mode`, then closes.
pub fn write_file<T: Element>(path: &Path, cfg: &StreamConfig, xs: &[T], mode: Mode) {
    let mut out = create_output::<T>(path, cfg).unwrap_or_else(|e| panic!("{}: create: {e}", cfg.kind));
    push_all(&mut out, xs, mode, cfg.kind);
    out.close().unwrap_or_else(|e| panic!("{}: close: {e}", cfg.kind));
    // Idempotent close, and nothing accepted after it.
    out.close().unwrap();
    assert_eq!(*out.write(T::zeroed()).unwrap_err().kind(), ErrorKind::Closed, "{}", cfg.kind);
}

/// Writes `xs` to an open output stream as `mode` (no close).
pub fn push_all<T: Element, O: OutputStream<T>>(out: &mut O, xs: &[T], mode: Mode, kind: StreamKind) {
    match mode {
        Mode::PerElement => {
            for &x in xs {
                out.write(x).unwrap_or_else(|e| panic!("{kind}: write: {e}"));
            }
        }
        Mode::Bulk => out.write_all(xs).unwrap_or_else(|e| panic!("{kind}: write_all: {e}")),
        Mode::Mixed => {
            let mut i = 0;
            let mut c = 0;
            while i < xs.len() {
                let k = MIXED_CHUNKS[c % MIXED_CHUNKS.len()];
                c += 1;
                if k == 0 {
                    out.write(xs[i]).unwrap();
                    i += 1;
                } else {
                    let end = (i + k).min(xs.len());
                    out.write_all(&xs[i..end]).unwrap();
                    i = end;
                }
            }
            out.write_all(&[]).unwrap();
        }
    }
}

/// Reads `path` back with `cfg` driven as `mode`; checks `len`, the end of
/// the stream and `close`.
pub fn read_file<T: Element>(path: &Path, cfg: &StreamConfig, mode: Mode) -> Vec<T> {
    let mut inp = open_input::<T>(path, cfg).unwrap_or_else(|e| panic!("{}: open: {e}", cfg.kind));
    let n = inp.len() as usize;
    let v = pull_all(&mut inp, mode, cfg.kind);
    assert_eq!(v.len(), n, "{}: len() disagrees with the elements read", cfg.kind);
    assert!(inp.end_of_stream().unwrap(), "{}", cfg.kind);
    assert!(inp.read_next().unwrap().is_none(), "{}", cfg.kind);
    let mut spare = [T::zeroed(); 3];
    assert_eq!(inp.read_into(&mut spare).unwrap(), 0, "{}", cfg.kind);
    inp.close().unwrap();
    inp.close().unwrap();
    assert_eq!(*inp.read_next().err().unwrap().kind(), ErrorKind::Closed, "{}", cfg.kind);
    v
}

/// Reads an open input stream to its end as `mode`.
pub fn pull_all<T: Element, I: InputStream<T>>(inp: &mut I, mode: Mode, kind: StreamKind) -> Vec<T> {
    let n = inp.len() as usize;
    let mut v = Vec::with_capacity(n);
    match mode {
        Mode::PerElement => {
            while let Some(x) = inp.read_next().unwrap_or_else(|e| panic!("{kind}: read_next: {e}")) {
                v.push(x);
            }
        }
        Mode::Bulk => {
            let mut buf = vec![T::zeroed(); n + 5];
            let mut got = 0;
            loop {
                let k = inp.read_into(&mut buf[got..]).unwrap_or_else(|e| panic!("{kind}: read_into: {e}"));
                if k == 0 {
                    break;
                }
                got += k;
            }
            buf.truncate(got);
            v = buf;
        }
        Mode::Mixed => {
            let mut c = 0;
            loop {
                let k = MIXED_CHUNKS[c % MIXED_CHUNKS.len()];
                c += 1;
                let eos = inp.end_of_stream().unwrap();
                assert_eq!(eos, v.len() == n, "{kind}: end_of_stream after {} of {n}", v.len());
                if k == 0 {
                    match inp.read_next().unwrap() {
                        Some(x) => v.push(x),
                        None => break,
                    }
                } else {
                    let mut buf = vec![T::zeroed(); k];
                    let got = inp.read_into(&mut buf).unwrap();
                    if got == 0 {
                        break;
                    }
                    assert!(got == k || v.len() + got == n, "{kind}: short read_into before the end");
                    v.extend_from_slice(&buf[..got]);
                }
            }
        }
    }
    v
}

/// The full test name as libtest knows it (module path without the crate).
pub fn test_name(module_path: &str, f: &str) -> String {
    let m = module_path.split_once("::").map_or("", |(_, rest)| rest);
    if m.is_empty() {
        f.to_string()
    } else {
        format!("{m}::{f}")
    }
}

/// Environment variable telling a re-executed test binary to act as child.
pub const CHILD_ENV: &str = "EMSORT_IO_TEST_CHILD";

/// Whether this process is the child for `name`.
pub fn is_child(name: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|v| v == name)
}

/// Re-runs test `name` of this binary in a child process (which sees
/// [`CHILD_ENV`] = `name` and `envs`), with `pre_exec` run in the child before `exec`.
/// Panics with the child's output unless it succeeds and really ran the test.
pub fn run_child(
    name: &str,
    envs: &[(&str, &std::ffi::OsStr)],
    pre_exec: impl FnMut() -> std::io::Result<()> + Send + Sync + 'static,
) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"]).env(CHILD_ENV, name);
    cmd.envs(envs.iter().copied());
    // SAFETY: the closures used here only make async-signal-safe calls
    // (setrlimit, signal).
    unsafe { cmd.pre_exec(pre_exec) };
    let out = cmd.output().expect("spawn the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child {name} failed ({}):\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("1 passed"), "child {name} did not run the test:\n{stdout}\n{stderr}");
}

/// A file system mounted for the duration of a test, unmounted on drop.
pub struct Mount {
    pub dir: PathBuf,
}

impl Mount {
    /// `mount -t fstype -o opts none dir`. `Err` carries errno; callers skip
    /// (printing why) only on `EPERM`.
    pub fn new(dir: &Path, fstype: &str, opts: &str) -> Result<Mount, std::io::Error> {
        std::fs::create_dir_all(dir).unwrap();
        let src = CString::new(fstype).unwrap();
        let target = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
        let ty = CString::new(fstype).unwrap();
        let data = CString::new(opts).unwrap();
        let mut flags = 0;
        if opts.split(',').any(|o| o == "ro") {
            flags |= libc::MS_RDONLY;
        }
        // SAFETY: all pointers are valid NUL-terminated strings.
        let r =
            unsafe { libc::mount(src.as_ptr(), target.as_ptr(), ty.as_ptr(), flags, data.as_ptr().cast()) };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mount { dir: dir.to_path_buf() })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let target = CString::new(self.dir.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: valid path; MNT_DETACH so an open file cannot keep it busy.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Mounts or explains (on stderr) why the test is skipped; panics on any
/// failure other than `EPERM`.
pub fn mount_or_skip(dir: &Path, fstype: &str, opts: &str, test: &str) -> Option<Mount> {
    match Mount::new(dir, fstype, opts) {
        Ok(m) => Some(m),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            eprintln!("SKIPPED {test}: cannot mount {fstype} here ({e}); needs root / CAP_SYS_ADMIN");
            None
        }
        Err(e) => panic!("mount -t {fstype} -o {opts} {}: {e}", dir.display()),
    }
}

/// Block size in elements the stream of `cfg` really uses for `T`.
pub fn effective_block<T: Element>(dir: &Path, cfg: &StreamConfig) -> usize {
    let p = dir.join("probe");
    let out = create_output::<T>(&p, cfg).unwrap();
    let b = out.info().block_size;
    drop(out);
    std::fs::remove_file(&p).unwrap();
    assert_eq!(b % T::SIZE, 0, "{}: block {b} not whole elements", cfg.kind);
    b / T::SIZE
}

/// `AUDIT_ARCH_X86_64` from `<linux/audit.h>` (not in the `libc` crate).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;

/// Installs, for this thread and its children, a classic-BPF seccomp filter:
/// on this architecture, `io_uring_setup` returns `ENOSYS`; everything else
/// is allowed.
#[cfg(target_arch = "x86_64")]
pub fn deny_io_uring_setup() {
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
