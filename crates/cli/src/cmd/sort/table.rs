//! `emsort sort` of tables: Parquet and Arrow IPC files (by their names),
//! sorted by named columns through `emsort-table`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use emsort_sort::Format;
use emsort_table::{TableError, TableKey, TableKind, TableSort};

use super::{method, plan_builder, summary, to_anyhow, write_stats, SortArgs};
use crate::progress::Bar;

/// Whether the inputs or the output are named as tables.
pub(super) fn is_table_sort(a: &SortArgs, inputs: &[PathBuf]) -> bool {
    inputs.iter().chain(a.output.as_ref()).any(|p| TableKind::of_name(p).is_some())
}

/// The options that order text lines, refused for tables.
fn text_options(a: &SortArgs) -> Vec<&'static str> {
    let set = [
        (a.ignore_leading_blanks, "-b"),
        (a.dictionary_order, "-d"),
        (a.ignore_case, "-f"),
        (a.general_numeric, "-g"),
        (a.ignore_nonprinting, "-i"),
        (a.month, "-M"),
        (a.human_numeric, "-h"),
        (a.numeric, "-n"),
        (a.random, "-R"),
        (a.version_sort, "-V"),
        (!a.sort_word.is_empty(), "--sort"),
        (a.field_separator.is_some(), "-t"),
        (a.csv || a.tsv, "--csv/--tsv"),
        (a.header, "--header"),
        (a.fields.is_some(), "--fields"),
        (a.jsonl, "--jsonl"),
        (a.zero_terminated, "-z"),
        (a.debug, "--debug"),
        (a.check.is_some() || a.check_quiet, "-c"),
        (a.merge, "-m"),
        (a.compress_program.is_some(), "--compress-program"),
        (a.format != Format::Lines, "--format"),
    ];
    set.into_iter().filter(|(on, _)| *on).map(|(_, name)| name).collect()
}

/// Sorts the tables `inputs` into `-o`'s.
pub(super) fn run(a: &SortArgs, inputs: Vec<PathBuf>) -> anyhow::Result<ExitCode> {
    let refused = text_options(a);
    if !refused.is_empty() {
        anyhow::bail!(
            "{} order{} text lines, not tables (a table's keys are -k COLUMN[:desc,nulls_first]; -r, -u, -S, \
             -T and --parallel apply)",
            refused.join(", "),
            if refused.len() == 1 { "s" } else { "" }
        );
    }
    if let Some(p) = inputs.iter().find(|p| TableKind::of_name(p).is_none()) {
        anyhow::bail!(
            "{}: not a table: every input of a table sort is a Parquet (.parquet) or Arrow IPC (.arrow, \
             .feather, .ipc, .arrows) file",
            p.display()
        );
    }
    let Some(output) = a.output.clone() else {
        anyhow::bail!("a table sort writes a file: give it with -o (e.g. -o sorted.parquet)");
    };
    let keys = a
        .keys
        .iter()
        .map(|k| TableKey::parse(k))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!(e))?;
    crate::interrupt::arm_watchdog();
    let tables = emsort_table::open_tables(&inputs)
        .map_err(|e| anyhow::anyhow!(e).context(format!("cannot sort {}", names(&inputs))))?;
    let spec = TableSort {
        keys,
        unique: a.unique,
        reverse: a.reverse,
        output_kind: TableKind::of_name(&output),
        group_rows: a.row_group_size.map(|n| n as usize),
        codec: a
            .parquet_compression
            .as_deref()
            .map(emsort_table::parse_codec)
            .transpose()
            .map_err(|e| anyhow::anyhow!(e))?,
    };
    let (b, memory) = plan_builder(a, Format::Lines, method(a)?, emsort_table::row_bytes(&tables, &spec));
    let plan = b
        .memory(emsort_table::sort_share(memory))
        .line_order(emsort_table::rows_order(a.unique))
        .build()
        .map_err(to_anyhow)
        .context("cannot plan the sort")?;
    if a.show_plan {
        eprint!("{plan}");
    }
    let bar = Bar::new(a.quiet);
    crate::table_buffers_to_heap(memory);
    let stats =
        match emsort_table::sort_tables(&plan, &tables, &output, &spec, &bar, crate::interrupt::flag()) {
            Ok(s) => s,
            Err(TableError::Sort(e)) => {
                return Err(to_anyhow(e).context(format!("cannot sort {}", names(&inputs))))
            }
            Err(e) => return Err(anyhow::anyhow!(e).context(format!("cannot sort {}", names(&inputs)))),
        };
    if let Some(path) = &a.stats {
        write_stats(path, &stats.sort)?;
    }
    if !a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        summary(&stats.sort);
        eprintln!("{} rows read, {} written to {}", stats.rows_in, stats.rows_out, output.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn names(inputs: &[PathBuf]) -> String {
    inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}
