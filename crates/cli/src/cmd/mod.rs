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
mod results;
pub mod sort;
pub mod verify;

/// The process exit code of an error: 2, as GNU sort gives for every
/// error (bad input or usage, a program that fails, memory exhausted, a full
/// disk, a permission, io_uring missing); 1 is `-c`'s "disorder" alone.
pub fn exit_code(_: &anyhow::Error) -> u8 {
    2
}
