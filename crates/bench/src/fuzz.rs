//! Strategies shared by the fuzz tests of the parameter files and traces
//! (the `fuzz_*` tests beside each parser; the large tier is
//! `PROPTEST_CASES=20000 cargo test -p emsort-bench fuzz_`).

use proptest::prelude::*;

use crate::Error;

/// Text made of `pieces` (fields, separators, numbers at the edges), any
/// characters and digit runs, joined at random.
pub(crate) fn text(pieces: &[&'static str], max_pieces: usize) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        6 => prop::sample::select(pieces.to_vec()).prop_map(String::from),
        2 => "[0-9]{1,21}",
        1 => prop::sample::select(vec![
            "\n", "\r\n", " ", "\t", "#", ";", ",", "..", "*", "-", "", "0", "18446744073709551615",
            "18446744073709551616", "9223372036854775808", "1e400", "é", "\u{0}", "\u{feff}",
        ])
        .prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..max_pieces).prop_map(|v| v.concat())
}

/// Rows of `sep`-separated fields, each field drawn from its own pool of
/// good and bad values (with a few pieces of noise), after a header line.
pub(crate) fn rows(
    header: &'static str,
    sep: &'static str,
    fields: Vec<Vec<&'static str>>,
) -> BoxedStrategy<String> {
    let field = |pool: Vec<&'static str>| {
        prop_oneof![
            8 => prop::sample::select(pool).prop_map(String::from),
            1 => text(&[",", "..", "K", "M", "G", "P", "e", "1"], 4),
        ]
    };
    let row = fields.into_iter().map(field).collect::<Vec<_>>().prop_map(move |f| f.join(sep));
    let line = prop_oneof![
        8 => row,
        1 => Just(String::new()),
        1 => Just("# a comment".to_string()),
    ];
    (prop::collection::vec(line, 0..6), any::<bool>())
        .prop_map(move |(lines, crlf)| {
            let nl = if crlf { "\r\n" } else { "\n" };
            std::iter::once(header.to_string()).chain(lines).collect::<Vec<_>>().join(nl)
        })
        .boxed()
}

/// A parse error is a parameter error naming a line of `text` (from 1).
pub(crate) fn check_error(e: &Error, text: &str) -> Result<(), TestCaseError> {
    match e {
        Error::Params { line, msg, .. } => {
            prop_assert!(
                *line >= 1 && *line <= text.lines().count().max(1),
                "line {} of {:?}: {}",
                line,
                text,
                msg
            );
            prop_assert!(!msg.is_empty());
        }
        other => prop_assert!(false, "not a parameter error: {:?}", other),
    }
    Ok(())
}

/// Whether `v` is sorted without duplicates.
pub(crate) fn strictly_sorted<T: Ord>(v: &[T]) -> bool {
    v.windows(2).all(|w| w[0] < w[1])
}
