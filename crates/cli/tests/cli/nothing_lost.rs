//! "Nothing lost": each row of the promise, against the binary. Outputs
//! that are devices, FIFOs and symbolic links stay what they are; an output
//! file keeps its mode, owner, group and attributes; text is sorted as text
//! by default; files of unknown size are read to their end; a file size
//! limit is an error, not a kill; what a killed sort left is removed by the
//! next; absurd thread counts and tiny budgets are answered, not suffered.
//! Device nodes are made in the test's own directory, never /dev.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{emsort, entries, p, run, setup, stderr, wait_for_runs};

/// `LC_ALL=C sort FILE`.
fn gnu_sort(file: &Path) -> Vec<u8> {
    let o = Command::new("sort").env("LC_ALL", "C").arg(file).output().unwrap();
    assert!(o.status.success());
    o.stdout
}

fn words(d: &Path) -> (PathBuf, Vec<u8>) {
    let f = d.join("words.txt");
    let text: String = (0..5000u32).map(|i| format!("w{:05}\n", i.wrapping_mul(7919) % 5000)).collect();
    std::fs::write(&f, text).unwrap();
    let sorted = gnu_sort(&f);
    (f, sorted)
}

fn mknod(path: &Path, ft: rustix::fs::FileType, dev: u64) {
    rustix::fs::mknodat(rustix::fs::CWD, path, ft, rustix::fs::Mode::from_raw_mode(0o666), dev)
        .unwrap_or_else(|e| panic!("mknod {}: {e}", path.display()));
}

/// Whether this process may make device nodes (root, as CI runs).
fn can_mknod() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn a_device_output_is_written_into_and_stays_a_device() {
    if !can_mknod() {
        eprintln!("skipped: making a device node needs root");
        return;
    }
    let (d, tmp) = setup();
    let (input, _) = words(d.path());
    // The null device's numbers, as a node of our own.
    let node = d.path().join("null-node");
    mknod(&node, rustix::fs::FileType::CharacterDevice, rustix::fs::makedev(1, 3));
    let o = run(&["sort", "-q", "-T", p(&tmp), p(&input), "-o", p(&node)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = std::fs::symlink_metadata(&node).unwrap();
    assert!(m.file_type().is_char_device(), "the device became {:?}", m.file_type());
    assert_eq!(m.rdev(), rustix::fs::makedev(1, 3));
    assert_eq!(entries(d.path()), ["null-node", "tmp", "words.txt"]);
    assert!(entries(&tmp).is_empty());
}

#[test]
fn a_fifo_output_reaches_its_reader() {
    let (d, tmp) = setup();
    let (input, sorted) = words(d.path());
    let fifo = d.path().join("fifo");
    mknod(&fifo, rustix::fs::FileType::Fifo, 0);
    // Through a symbolic link to the FIFO too.
    let link = d.path().join("to-fifo");
    std::os::unix::fs::symlink("fifo", &link).unwrap();
    for out in [&fifo, &link] {
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut v = Vec::new();
                std::fs::File::open(&fifo).unwrap().read_to_end(&mut v).unwrap();
                v
            })
        };
        let o = run(&["sort", "-q", "-S", "64K", "-T", p(&tmp), p(&input), "-o", p(out)]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(reader.join().unwrap(), sorted);
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }
    assert!(entries(&tmp).is_empty());
}

#[test]
fn a_symlink_output_stays_a_link_to_the_sorted_file() {
    let (d, tmp) = setup();
    let (input, sorted) = words(d.path());
    let sub = d.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("real.txt"), b"old\n").unwrap();
    let link = d.path().join("link.txt");
    std::os::unix::fs::symlink("sub/real.txt", &link).unwrap();
    let o = run(&["sort", "-q", "-T", p(&tmp), p(&input), "-o", p(&link)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("sub/real.txt"));
    assert_eq!(std::fs::read(sub.join("real.txt")).unwrap(), sorted);
    assert_eq!(entries(&sub), ["real.txt"], "written beside the real file, nothing left");
    // The link as its own input and output.
    std::fs::write(sub.join("real.txt"), b"b\na\n").unwrap();
    let o = run(&["sort", "-q", "-T", p(&tmp), p(&link), "-o", p(&link)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(sub.join("real.txt")).unwrap(), b"a\nb\n");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
}

#[test]
fn an_output_file_keeps_mode_owner_group_and_attributes() {
    let (d, tmp) = setup();
    let f = d.path().join("secret.txt");
    std::fs::write(&f, b"dog\ncat\nant\nbee\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let root = rustix::process::geteuid().is_root();
    if root {
        std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
    }
    let xattr = rustix::fs::lsetxattr(&f, c"user.origin", b"kept", rustix::fs::XattrFlags::empty()).is_ok();
    let other = d.path().join("other-name.txt");
    std::fs::hard_link(&f, &other).unwrap();
    let o = run(&["sort", "-T", p(&tmp), p(&f), "-o", p(&f)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&f).unwrap(), b"ant\nbee\ncat\ndog\n");
    let m = std::fs::metadata(&f).unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o600, "a secret file stays secret");
    if root {
        assert_eq!((m.uid(), m.gid()), (65534, 65534), "owner and group kept");
    }
    if xattr {
        let mut v = [0u8; 8];
        let n = rustix::fs::lgetxattr(&f, c"user.origin", &mut v).unwrap();
        assert_eq!(&v[..n], b"kept");
    }
    // Documented: the other name of the old file keeps the old content, and
    // the user is told.
    assert_eq!(std::fs::read(&other).unwrap(), b"dog\ncat\nant\nbee\n");
    assert!(stderr(&o).contains("other name (hard link); it keeps the previous content"), "{}", stderr(&o));
    assert_eq!(entries(d.path()), ["other-name.txt", "secret.txt", "tmp"]);
}

/// As another user (nobody), a file it may write but whose owner it cannot
/// give to a new file (root's, group-writable) is rewritten in place, as
/// GNU sort does: owner and group stay.
#[test]
fn a_file_that_cannot_be_replaced_is_rewritten_in_place() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root to act as another user");
        return;
    }
    let (d, _) = setup();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let f = d.path().join("shared.txt");
    std::fs::write(&f, b"b\na\n").unwrap();
    std::os::unix::fs::chown(&f, Some(0), Some(65534)).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o664)).unwrap();
    let input = d.path().join("in.txt");
    std::fs::write(&input, b"z\ny\n").unwrap();
    std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o644)).unwrap();
    let tmp = d.path().join("ntmp");
    std::fs::create_dir(&tmp).unwrap();
    std::os::unix::fs::chown(&tmp, Some(65534), Some(65534)).unwrap();
    let o = emsort()
        .args(["sort", "-q", "-T", p(&tmp), p(&input), "-o", p(&f)])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&f).unwrap(), b"y\nz\n");
    let m = std::fs::metadata(&f).unwrap();
    assert_eq!((m.uid(), m.gid(), m.permissions().mode() & 0o7777), (0, 65534, 0o664));
    assert!(entries(&tmp).is_empty());
}

#[test]
fn text_is_sorted_as_lines_by_default() {
    let (d, tmp) = setup();
    let f = d.path().join("four.txt");
    std::fs::write(&f, b"dog\ncat\nant\nbee\n").unwrap();
    let out = d.path().join("out");
    let o = run(&["sort", "-T", p(&tmp), p(&f), "-o", p(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), b"ant\nbee\ncat\ndog\n");
    // Binary formats only when asked.
    let o = run(&["sort", "--format", "u32", "-T", p(&tmp), p(&f), "-o", p(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(std::fs::read(&out).unwrap(), b"ant\nbee\ncat\ndog\n");
    // And from standard input with no file named, as GNU sort.
    let mut c =
        emsort().args(["sort", "-T", p(&tmp)]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(c.stdin.as_mut().unwrap(), b"b\na\n").unwrap();
    drop(c.stdin.take());
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success());
    assert_eq!(o.stdout, b"a\nb\n");
}

#[test]
fn files_of_unknown_size_are_read_to_their_end() {
    let (d, tmp) = setup();
    // procfs reports a size of 0; /proc/filesystems does not change between reads.
    for f in ["/proc/filesystems", "/proc/self/mounts"] {
        let o = run(&["sort", "-T", p(&tmp), f]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        if f == "/proc/filesystems" {
            assert_eq!(o.stdout, gnu_sort(Path::new(f)), "{f}");
        }
        assert!(o.stdout.len() > 20, "{f}: {} bytes", o.stdout.len());
    }
    // A FIFO given by name.
    let fifo = d.path().join("in.fifo");
    mknod(&fifo, rustix::fs::FileType::Fifo, 0);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, b"pear\napple\nfig").unwrap())
    };
    let o = run(&["sort", "-T", p(&tmp), p(&fifo)]);
    writer.join().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, b"apple\nfig\npear\n");
    assert!(entries(&tmp).is_empty());
}

#[test]
fn a_file_size_limit_is_a_clear_error_and_leaves_nothing() {
    let (d, tmp) = setup();
    let input = d.path().join("big.u32");
    let o = run(&["gen", "-q", "-n", "2M", "-o", p(&input)]);
    assert!(o.status.success());
    let out = d.path().join("out.u32");
    let mut cmd = emsort();
    cmd.args(["sort", "-q", "--format", "u32", "-S", "1M", "-T", p(&tmp), p(&input), "-o", p(&out)]);
    // Only the limit: the binary must handle SIGXFSZ itself (its default
    // action kills the process with nothing removed).
    crate::file_size_limit(&mut cmd, 3 << 20);
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("file size limit exceeded") && e.contains("out.u32"), "{e}");
    assert!(!e.contains(".out.u32.emsort-"), "names the output, not its temporary file: {e}");
    assert_eq!(entries(d.path()), ["big.u32", "tmp"]);
    assert!(entries(&tmp).is_empty());
}

/// Sorts `input` and SIGKILLs the sort once it has written a run.
fn kill_mid_sort(input: &Path, tmp: &Path, out: &Path) {
    let mut child = emsort()
        .args([
            "sort",
            "-q",
            "--format",
            "u32",
            "-S",
            "2M",
            "--io",
            "buffered",
            "-T",
            p(tmp),
            p(input),
            "-o",
            p(out),
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_runs(tmp, 3);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn what_a_killed_sort_left_is_removed_by_the_next_run() {
    let (d, tmp) = setup();
    let input = d.path().join("big.u32");
    let o = run(&["gen", "-q", "-n", "8M", "-o", p(&input)]);
    assert!(o.status.success());
    let out_dir = d.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("sorted.u32");
    std::fs::write(&out, b"previous").unwrap();
    kill_mid_sort(&input, &tmp, &out);
    kill_mid_sort(&input, &tmp, &out);
    assert!(!entries(&tmp).is_empty(), "the killed sorts left their runs");
    assert_eq!(std::fs::read(&out).unwrap(), b"previous", "a killed sort never touches the output");
    // A live sort beside: its files are not touched by the cleaner.
    let live_tmp = tmp.join("emsort-live-0");
    std::fs::create_dir(&live_tmp).unwrap();
    std::fs::write(live_tmp.join(emsort_io::temp::MARKER), b"").unwrap();
    // Held as a living sort holds it: an exclusive flock on the directory
    // (this test process stands in for that sort).
    let holder = std::fs::File::open(&live_tmp).unwrap();
    rustix::fs::flock(&holder, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    // The next run, on a small input into the same directories.
    let small = d.path().join("small.txt");
    std::fs::write(&small, b"b\na\n").unwrap();
    let o = run(&["sort", "-T", p(&tmp), p(&small), "-o", p(&out_dir.join("small.sorted"))]);
    drop(holder);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("removed what killed emsort runs left"), "{}", stderr(&o));
    assert_eq!(entries(&tmp), ["emsort-live-0"], "only the live one stays");
    assert_eq!(entries(&out_dir), ["small.sorted", "sorted.u32"]);
    assert_eq!(std::fs::read(&out).unwrap(), b"previous");
}

#[test]
fn thread_counts_are_capped_and_signals_stop_every_phase() {
    let (d, tmp) = setup();
    let f = d.path().join("t.txt");
    std::fs::write(&f, b"b\na\n").unwrap();
    let out = d.path().join("o");
    let t = Instant::now();
    let o = run(&["sort", "--parallel", "100000", "-T", p(&tmp), p(&f), "-o", p(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--parallel 100000 capped at"), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(20));
    assert_eq!(std::fs::read(&out).unwrap(), b"a\nb\n");
    // A sort blocked where it polls nothing (opening a FIFO nobody reads,
    // or writing into one whose reader stopped): SIGTERM still ends it.
    let fifo = d.path().join("fifo");
    mknod(&fifo, rustix::fs::FileType::Fifo, 0);
    for stalled_reader in [false, true] {
        let big = d.path().join("big.txt");
        let text: String =
            (0..200_000u32).map(|i| format!("line {}\n", i.wrapping_mul(2_654_435_761))).collect();
        std::fs::write(&big, text).unwrap();
        let _reader = stalled_reader.then(|| {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let f = std::fs::File::open(&fifo).unwrap();
                std::thread::sleep(Duration::from_secs(15));
                drop(f);
            })
        });
        let child = emsort()
            .args(["sort", "-q", "-T", p(&tmp), p(&big), "-o", p(&fifo)])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let t = Instant::now();
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let o = child.wait_with_output().unwrap();
        assert!(crate::died_of(&o.status, libc::SIGTERM), "{:?}: {}", o.status, stderr(&o));
        assert!(t.elapsed() < Duration::from_secs(8), "took {:?} to stop", t.elapsed());
        assert!(entries(&tmp).is_empty(), "left behind: {:?}", entries(&tmp));
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }
}

#[test]
fn a_tiny_budget_is_warned_about_with_its_passes() {
    let (d, tmp) = setup();
    let input = d.path().join("in.u32");
    let o = run(&["gen", "-q", "-n", "1M", "-o", p(&input)]);
    assert!(o.status.success());
    let o = run(&[
        "sort",
        "--format",
        "u32",
        "-S",
        "64K",
        "-T",
        p(&tmp),
        p(&input),
        "-o",
        p(&d.path().join("o")),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("warning: memory 64K for 4M of input") && e.contains("passes"), "{e}");
    assert!(e.contains("or more would merge them in one pass"), "{e}");
    // Enough memory: no warning.
    let o =
        run(&["sort", "--format", "u32", "-S", "4M", "-T", p(&tmp), p(&input), "-o", p(&d.path().join("o"))]);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn messages_name_what_the_user_named_once() {
    let (d, tmp) = setup();
    // Standard input, not the spool file.
    let mut c = emsort()
        .args(["sort", "--format", "u32", "-T", p(&tmp), "-", "-o", p(&d.path().join("o"))])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(c.stdin.as_mut().unwrap(), b"abc").unwrap();
    drop(c.stdin.take());
    let o = c.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("<standard input>: size 3 bytes") && !e.contains("spool"), "{e}");
    // A read-only output is refused before the sort, as GNU sort refuses
    // to open it; it stays as it was.
    {
        let ro_dir = d.path().join("ro");
        std::fs::create_dir(&ro_dir).unwrap();
        let ro = ro_dir.join("readonly.txt");
        std::fs::write(&ro, b"keep\n").unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
        let input = ro_dir.join("in.txt");
        std::fs::write(&input, b"b\na\n").unwrap();
        let mut c = emsort();
        c.args(["sort", "-T", p(&tmp), p(&input), "-o", p(&ro)]);
        if rustix::process::geteuid().is_root() {
            std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o777)).unwrap();
            std::os::unix::fs::chown(&ro_dir, Some(65534), Some(65534)).unwrap();
            std::os::unix::fs::chown(&ro, Some(65534), Some(65534)).unwrap();
            c.uid(65534).gid(65534);
        }
        let o = c.output().unwrap();
        // GNU's message and exit status.
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("open failed: ") && e.contains("readonly.txt: Permission denied\n"), "{e}");
        assert!(!e.contains(".emsort-"), "{e}");
        assert_eq!(std::fs::read(&ro).unwrap(), b"keep\n");
        assert_eq!(entries(&ro_dir), ["in.txt", "readonly.txt"]);
    }
    // Permission denied, said once.
    if rustix::process::geteuid().is_root() {
        let f = d.path().join("private.txt");
        std::fs::write(&f, b"x\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let o = emsort().args(["sort", "-T", "/tmp", p(&f)]).uid(65534).gid(65534).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        let e = stderr(&o);
        assert_eq!(e.matches("ermission denied").count(), 1, "{e}");
        assert!(e.starts_with("emsort: cannot read: "), "{e}");
        assert!(e.contains("private.txt"), "{e}");
    }
}
