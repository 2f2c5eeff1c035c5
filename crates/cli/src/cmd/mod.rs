//! One module per subcommand; each has an `Args` struct (clap derive) and a
//! `run(args) -> anyhow::Result<ExitCode>`.

pub mod bench;
pub mod bench_ray;
pub mod bench_readers;
pub mod bench_srm;
pub mod calibrate;
pub mod demo;
pub mod gen;
pub mod gen_trace;
pub mod replay;
pub mod sort;
pub mod verify;

/// Maps an error to the process exit code: 2 for bad input or usage (a
/// `--compress-program` that cannot run or fails, memory exhausted, as GNU
/// sort), 3 for
/// I/O failures of the system (disk full, permissions, io_uring missing).
pub fn exit_code(e: &anyhow::Error) -> u8 {
    use emsort_io::ErrorKind;
    for cause in e.chain() {
        if let Some(io) = cause.downcast_ref::<emsort_io::Error>() {
            return match io.kind() {
                ErrorKind::NotFound
                | ErrorKind::IsADirectory
                | ErrorKind::BadSize { .. }
                | ErrorKind::BadConfig { .. }
                | ErrorKind::Program(_)
                | ErrorKind::OutOfMemory => 2,
                _ => 3,
            };
        }
    }
    2
}
