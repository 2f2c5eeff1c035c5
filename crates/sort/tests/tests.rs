//! emsort-sort's integration tests, one binary (as ripgrep does), through
//! the public API only. The unit tests beside each file cover the parts.
//!
//! - `lines`: fuzz tests of text sorting with tiny memory budgets, any
//!   bytes against the naive `split('\n')` / sort / join oracle, through
//!   [`emsort_sort::sort_file`] and [`emsort_sort::spool::sort`] (standard
//!   input and output).

mod lines;
