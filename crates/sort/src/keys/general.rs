//! `-g`: general numbers, read by the C library's `strtold` as GNU `sort`
//! reads them (`src/keys/general.c` turns the value into its normalised
//! form).

use super::Locale;

extern "C" {
    fn emsort_general_form(text: *const u8, len: usize, out: *mut u8, loc: libc::locale_t) -> usize;
    fn emsort_general_len(text: *const u8, len: usize, loc: libc::locale_t) -> usize;
}

/// The handle `strtold_l` reads numbers in; null: `strtold` in the
/// process's locale, which the libraries leave C.
fn handle(loc: Option<&Locale>) -> libc::locale_t {
    loc.map_or(std::ptr::null_mut(), Locale::handle)
}

/// Appends the normalised form of the general number at the start of `t`
/// (leading white space skipped, as `strtold` does), read in `loc`'s
/// `LC_NUMERIC` (else C's).
pub(crate) fn form(t: &[u8], out: &mut Vec<u8>, loc: Option<&Locale>) {
    let mut buf = [0u8; 40];
    // SAFETY: the C function reads `len` bytes of `t` and writes at most
    // 34 bytes into `buf` (its doc comment), returning how many; the
    // handle is null or lives as long as `loc`.
    let n = unsafe { emsort_general_form(t.as_ptr(), t.len(), buf.as_mut_ptr(), handle(loc)) };
    out.extend_from_slice(&buf[..n]);
}

/// How many bytes of `t` `strtold` reads as a number (leading white
/// space included), 0 when it reads none: the extent `--debug` underlines.
pub(crate) fn number_len(t: &[u8], loc: Option<&Locale>) -> usize {
    // SAFETY: the C function reads `len` bytes of `t` and nothing else;
    // the handle is null or lives as long as `loc`.
    unsafe { emsort_general_len(t.as_ptr(), t.len(), handle(loc)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(s: &str) -> Vec<u8> {
        let mut v = Vec::new();
        form(s.as_bytes(), &mut v, None);
        v
    }

    #[test]
    fn orders_errors_nans_then_numbers() {
        let asc = [
            "x", "nan", "-inf", "-1e10", "-2", "-0x1p-3", "0", "1e-300", "0.5", "1", "1.5e0", "0x10", "1e10",
            "inf",
        ];
        for w in asc.windows(2) {
            assert!(g(w[0]) < g(w[1]), "{} {}", w[0], w[1]);
        }
        assert_eq!(g("-0"), g("0.0"));
        assert_eq!(g("  12abc"), g("12"));
        assert_eq!(g(""), g("abc"));
        // Beyond long double precision: equal, as strtold rounds them.
        assert_eq!(g("1.00000000000000000000000000001"), g("1"));
    }

    /// NaNs in GNU sort 9.1's order (`printf 'nan\n-nan\nnan(1)\n-nan(5)\nNAN\n' | LC_ALL=C sort -s -g`):
    /// by the bytes of the long double, so the sign and the payload count;
    /// one NaN read twice, in between other reads that leave the stack
    /// dirty, has one form.
    #[test]
    fn nans_in_gnu_order_and_one_form_each() {
        let asc = ["nan", "-nan", "nan(1)", "-nan(5)"];
        for w in asc.windows(2) {
            assert!(g(w[0]) < g(w[1]), "{} {}", w[0], w[1]);
        }
        let en = crate::keys::locale::tests::need("en_US.UTF-8");
        for loc in [None, Some(&en)] {
            let form = |t: &str| {
                let mut v = Vec::new();
                super::form(t.as_bytes(), &mut v, loc);
                v
            };
            let first = form("nan");
            for t in ["-1e4000", "0x1.fffffffffffffffep16383", "-nan(0x7fffffffffffffff)", "3.5", "NAN"] {
                let _ = form(t);
                assert_eq!(form("NaN"), first, "after {t}");
            }
        }
    }

    #[test]
    fn number_lengths_as_strtold_reads_them() {
        for (t, n) in [("1e3x", 3), ("x", 0), ("", 0), (" -inf,", 5), ("0x1Fg", 4), ("1e", 1), ("1\0e5", 1)] {
            assert_eq!(number_len(t.as_bytes(), None), n, "{t:?}");
        }
    }
}
