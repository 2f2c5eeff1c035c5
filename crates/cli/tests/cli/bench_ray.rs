//! `emsort bench ray --plot-only`: the Ray campaign's reports from the
//! `raw.csv` and `machine.json` that `bench/ray/bench_ray.py` writes (the
//! campaign itself needs Ray: `python/tests` and the script run it).

use crate::{p, run, stderr, stdout};

const RAW: &str = "\
dataset,format,bytes,items,engine,partitions,memory_per_task,rep,wall_s,mb_s,mb_s_per_node,nodes,sample_s,map_s,merge_s,map_tasks,external_merges,spilled_mib,verified
u32:256M,u32,268435456,67108864,single,1,134217728,1,2.6,103.2,103.2,1,,,,,,,True
u32:256M,u32,268435456,67108864,ray-p2,2,67108864,1,4.2,63.9,63.9,1,0.2,2.1,1.7,4,0,0.0,True
u32:256M,u32,268435456,67108864,io-bound,,,1,1.1,244.0,244.0,1,,,,,,,
u32:256M,u32,268435456,67108864,single,1,134217728,2,2.4,111.8,111.8,1,,,,,,,
u32:256M,u32,268435456,67108864,ray-p2,2,67108864,2,4.0,67.1,67.1,1,0.2,2.0,1.6,4,0,0.0,
u32:256M,u32,268435456,67108864,io-bound,,,2,1.0,268.4,268.4,1,,,,,,,
";

#[test]
fn plot_only_writes_summary_plot_and_readme_and_again_the_same() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("ray");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("raw.csv"), RAW).unwrap();
    std::fs::write(
        dir.join("machine.json"),
        r#"{"nproc": 2, "command": "python3 bench/ray/bench_ray.py --quick"}"#,
    )
    .unwrap();
    let o = run(&["bench", "ray", "--plot-only", p(&dir)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("| u32:256M | ray-p2 | 4.10 (4.00–4.20) |"), "{out}");
    assert!(out.contains("Exoshuffle"), "{out}");
    let files = ["summary.csv", "README.md", "plots/ray_time.svg"];
    let first: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(dir.join(f)).unwrap()).collect();
    let readme = String::from_utf8(first[1].clone()).unwrap();
    assert!(readme.contains("python3 bench/ray/bench_ray.py --quick"), "{readme}");
    assert!(readme.contains("% of the I/O bound"), "{readme}");
    assert!(!readme.contains("--plot-only /"), "an absolute path in the README:\n{readme}");
    let o = run(&["bench", "ray", "--plot-only", p(&dir)]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (f, before) in files.iter().zip(&first) {
        assert_eq!(&std::fs::read(dir.join(f)).unwrap(), before, "{f} differs when redrawn");
    }
}

#[test]
fn a_directory_without_raw_csv_is_named() {
    let d = tempfile::tempdir().unwrap();
    let o = run(&["bench", "ray", "--plot-only", p(d.path())]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("raw.csv"), "{e}");
}
