//! The user's locale, read as GNU `sort` 9.1 reads it after
//! `setlocale (LC_ALL, "")`, but through a thread-safe handle
//! (`newlocale`, then the `_l` functions) that the sort's threads share.
//!
//! A [`Locale`] holds what GNU takes from each category:
//!
//! | category | GNU's use | here |
//! |---|---|---|
//! | `LC_COLLATE` | `hard_LC_COLLATE`: text keys and the last resort by `xmemcoll0` (strcoll over NUL-separated pieces), `-R` hashes `strxfrm`'s text | [`Locale::collates`], [`Locale::collate`], [`Locale::text_form`] (`strxfrm_l`, whose bytewise order is `strcoll_l`'s) |
//! | `LC_CTYPE` | `inittables`: `-f` by `toupper`, `-i` by `isprint`, `-d` by `isalnum`/`isblank`, on single bytes | [`Locale::fold`], [`Locale::nonprinting`], [`Locale::nondictionary`] |
//! | `LC_NUMERIC` | `-n`/`-h`: one-byte decimal point (else `.`) and thousands separator (multibyte or empty: none); `-g`: `strtold` | [`Locale::decimal_point`], [`Locale::thousands_sep`], [`Locale::handle`] for `strtold_l` |
//! | `LC_TIME` | `-M`: the abbreviated month names (`ABMON_1`…), blanks dropped, folded | [`Locale::month`] (GNU's binary search, prefix match) |
//!
//! `C` and `POSIX` in every category is no locale at all: a `LineOrder`
//! then carries `None` and compares exactly as before (bytewise, C's
//! tables). `C.UTF-8` is a locale here, as it is for GNU 9.1 (gnulib's
//! `hard_locale` is false only for `C` and `POSIX`): it collates by code
//! point, which is byte order, but `-R` hashes `strxfrm`'s text and
//! `--debug` names its rules.

use std::cmp::Ordering;
use std::ffi::{c_char, c_int, CStr};
use std::sync::Arc;

use super::primary::{strxfrm_primary, xfrm, Primary};

extern "C" {
    fn strcoll_l(a: *const c_char, b: *const c_char, loc: libc::locale_t) -> c_int;
    fn toupper_l(c: c_int, loc: libc::locale_t) -> c_int;
    fn isalnum_l(c: c_int, loc: libc::locale_t) -> c_int;
    fn isprint_l(c: c_int, loc: libc::locale_t) -> c_int;
    fn isblank_l(c: c_int, loc: libc::locale_t) -> c_int;
    fn wcwidth(c: libc::wchar_t) -> c_int;
    fn iswcntrl(c: u32) -> c_int;
}

/// glibc's `_NL_LOCALE_NAME (category)`: the item whose value is the name
/// of the category's locale in a handle (what `setlocale (category, NULL)`
/// says after `setlocale (LC_ALL, "")`).
fn locale_name_item(category: c_int) -> libc::nl_item {
    (category << 16) | 0xffff
}

/// glibc's `_NL_COLLATE_NRULES` of a handle: 0 when `strcoll` is
/// `strcmp` (C, POSIX, C.UTF-8).
fn nrules(h: libc::locale_t) -> u32 {
    // SAFETY: the handle is live. glibc answers this item with a word
    // (`union locale_data_value`) in place of the string pointer: its low
    // 32 bits.
    let v = unsafe { libc::nl_langinfo_l(libc::LC_COLLATE << 16, h) };
    v as usize as u32
}

/// `LC_CTYPE`, `LC_NUMERIC`, `LC_TIME`, `LC_COLLATE`: the categories sort
/// reads.
const CATEGORIES: [c_int; 4] = [libc::LC_CTYPE, libc::LC_NUMERIC, libc::LC_TIME, libc::LC_COLLATE];

/// GNU's `NON_CHAR` (CHAR_MAX + 1): the thousands separator when the
/// locale has none of one byte. As an unsigned byte it is 0x80, which
/// `strnumcmp` then skips (module `encode`).
pub(crate) const NON_CHAR: u8 = 0x80;

/// A locale handle from `newlocale`, freed on drop.
struct Handle(libc::locale_t);

// SAFETY: a locale_t is only read after newlocale returns it (strcoll_l,
// strxfrm_l, nl_langinfo_l, toupper_l …, which glibc documents as
// MT-safe), and freed once, in drop, when no thread holds it.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle came from newlocale and is freed only here.
        unsafe { libc::freelocale(self.0) }
    }
}

/// The locale of a sort (see the module docs); cheap to clone (shared).
#[derive(Clone)]
pub struct Locale(Arc<Inner>);

struct Inner {
    handle: Handle,
    /// Tells this locale's forms apart in [`FORMS`] (from [`NEXT_ID`]).
    id: u64,
    /// The locale names of [`CATEGORIES`].
    names: [String; 4],
    /// GNU's `hard_LC_COLLATE`.
    hard_collate: bool,
    /// Collates by rules (glibc's `nrules` > 0): not by code point, which
    /// is byte order (C.UTF-8).
    collates: bool,
    /// LC_CTYPE's charset is UTF-8.
    utf8: bool,
    /// The `LC_COLLATE` tables, walked for texts' primary weights instead
    /// of calling `strxfrm_l` (`None`: they do not walk as glibc 2.36's).
    primary: Option<Primary>,
    decimal_point: u8,
    thousands_sep: u8,
    thousands_sep_ignored: bool,
    fold: [u8; 256],
    nonprinting: [bool; 256],
    nondictionary: [bool; 256],
    /// The month names folded and without blanks, sorted by their bytes,
    /// with their numbers (GNU's `monthtab`).
    months: Vec<(Vec<u8>, u8)>,
}

/// Why a locale could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocaleError(pub String);

impl std::fmt::Display for LocaleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LocaleError {}

impl std::fmt::Debug for Locale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Locale({})", self.0.names.join(","))
    }
}

impl PartialEq for Locale {
    fn eq(&self, other: &Locale) -> bool {
        self.0.names == other.0.names
    }
}

impl Eq for Locale {}

/// Whether GNU's `hard_locale` holds for a category named `name`.
fn hard(name: &str) -> bool {
    !(name == "C" || name == "POSIX")
}

impl Locale {
    /// The locale the environment names, as `setlocale (LC_ALL, "")` reads
    /// it (`LC_ALL`, else `LC_COLLATE` … per category, else `LANG`).
    /// `Ok(None)`: C or POSIX in every category sort reads; `Err`: the C
    /// library cannot load it (GNU then sorts in C and `--debug` says
    /// "failed to set locale").
    pub fn from_env() -> Result<Option<Locale>, LocaleError> {
        Locale::load(c"", true)
    }

    /// The locale `name` (`"en_US.UTF-8"`; `""`: the environment's) in
    /// every category; `Ok(None)` for C and POSIX.
    pub fn named(name: &str) -> Result<Option<Locale>, LocaleError> {
        let c = std::ffi::CString::new(name).map_err(|_| LocaleError(format!("bad locale name {name:?}")))?;
        Locale::load(&c, true)
    }

    /// `walk`: read texts' primary weights from the tables where they
    /// walk as glibc's (false: always `strxfrm_l`, for the tests of that
    /// path).
    fn load(name: &CStr, walk: bool) -> Result<Option<Locale>, LocaleError> {
        // SAFETY: a valid C string; a null base asks for a new handle.
        let h = unsafe { libc::newlocale(libc::LC_ALL_MASK, name.as_ptr(), std::ptr::null_mut()) };
        if h.is_null() {
            return Err(LocaleError(format!(
                "cannot load locale '{}' (is it generated? see locale -a)",
                name.to_string_lossy()
            )));
        }
        let handle = Handle(h);
        let info = |item: libc::nl_item| -> Vec<u8> {
            // SAFETY: the handle is live; nl_langinfo_l returns a C string
            // that lives as long as the handle (copied at once).
            unsafe { CStr::from_ptr(libc::nl_langinfo_l(item, h)).to_bytes().to_vec() }
        };
        let names = CATEGORIES.map(|c| String::from_utf8_lossy(&info(locale_name_item(c))).into_owned());
        if !names.iter().any(|n| hard(n)) {
            return Ok(None);
        }
        // main: a decimal point of one byte, else '.'; a thousands
        // separator of one byte, else none (and a multibyte one noted).
        let dp = info(libc::RADIXCHAR);
        let decimal_point = if dp.len() == 1 { dp[0] } else { b'.' };
        let ts = info(libc::THOUSEP);
        let thousands_sep = if ts.len() == 1 { ts[0] } else { NON_CHAR };
        // inittables, with the _l functions on single bytes.
        let (mut fold, mut nonprinting, mut nondictionary) = ([0u8; 256], [false; 256], [false; 256]);
        for i in 0..256 {
            let c = i as c_int;
            // SAFETY: the handle is live; the argument is an unsigned char.
            unsafe {
                fold[i] = toupper_l(c, h) as u8;
                nonprinting[i] = isprint_l(c, h) == 0;
                // field_sep: isblank or '\n'.
                let blank = isblank_l(c, h) != 0 || i == b'\n' as usize;
                nondictionary[i] = isalnum_l(c, h) == 0 && !blank;
            }
        }
        let mut months: Vec<(Vec<u8>, u8)> = (0..12)
            .map(|i| {
                // SAFETY: as above.
                let blank = |b: u8| unsafe { isblank_l(b as c_int, h) != 0 };
                let name =
                    info(libc::ABMON_1 + i).into_iter().filter(|&b| !blank(b)).map(|b| fold[b as usize]);
                (name.collect(), i as u8 + 1)
            })
            .collect();
        months.sort();
        let hard_collate = hard(&names[3]);
        let collates = hard_collate && nrules(h) > 0;
        // SAFETY: the handle lives in the same `Inner` as the tables.
        let primary = if collates && walk { unsafe { Primary::new(h) } } else { None };
        Ok(Some(Locale(Arc::new(Inner {
            handle,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            hard_collate,
            collates,
            utf8: info(libc::CODESET).eq_ignore_ascii_case(b"UTF-8"),
            primary,
            names,
            decimal_point,
            thousands_sep,
            thousands_sep_ignored: ts.len() > 1,
            fold,
            nonprinting,
            nondictionary,
            months,
        }))))
    }

    /// GNU's `hard_LC_COLLATE`: text compares by `strcoll`, `-R` hashes
    /// `strxfrm`'s text, and `--debug` names the rules.
    pub fn hard_collate(&self) -> bool {
        self.0.hard_collate
    }

    /// Whether text compares otherwise than bytewise: a hard `LC_COLLATE`
    /// with collation rules. glibc's `strcoll` is `strcmp` in a locale
    /// without rules (C.UTF-8: code point order), and `xmemcoll0` then is
    /// byte order, so such a locale keeps C's bytewise path for text.
    pub fn collates(&self) -> bool {
        self.0.collates
    }

    /// Whether `LC_CTYPE`'s charset is UTF-8 (GNU's messages then quote
    /// with ‘ ’).
    pub fn utf8(&self) -> bool {
        self.0.utf8
    }

    /// GNU's `debug_width` in this locale: `mbsnwidth` (each character's
    /// `wcwidth`; one column for a non-printable non-control character and
    /// for each invalid byte; one for an incomplete character at the end)
    /// plus one per tab. Charsets other than UTF-8 count as C does.
    pub(crate) fn width(&self, t: &[u8]) -> usize {
        let tabs = t.iter().filter(|&&b| b == b'\t').count();
        if !self.utf8() {
            return tabs + t.iter().filter(|&&b| matches!(b, 0x20..=0x7e | 0x80..=0xff)).count();
        }
        // SAFETY: uselocale changes this thread's locale only, and it is
        // set back before returning; the handle is live.
        let old = unsafe { libc::uselocale(self.handle()) };
        let mut w = 0;
        for chunk in t.utf8_chunks() {
            for c in chunk.valid().chars() {
                w += match c {
                    ' '..='~' => 1,
                    // SAFETY: plain calls on a character.
                    c => match unsafe { wcwidth(c as libc::wchar_t) } {
                        n if n >= 0 => n as usize,
                        _ => usize::from(unsafe { iswcntrl(c as u32) } == 0),
                    },
                };
            }
            let bad = chunk.invalid();
            let incomplete = !bad.is_empty()
                && bad.as_ptr_range().end == t.as_ptr_range().end
                && std::str::from_utf8(bad).is_err_and(|e| e.error_len().is_none());
            w += if incomplete { 1 } else { bad.len() };
        }
        // SAFETY: as above.
        unsafe { libc::uselocale(old) };
        w + tabs
    }

    /// The name of the `LC_COLLATE` locale (`--debug` prints it).
    pub fn collate_name(&self) -> &str {
        &self.0.names[3]
    }

    /// The decimal point of `-n`/`-h` (one byte; `.` unless the locale's
    /// is another single byte).
    pub fn decimal_point(&self) -> u8 {
        self.0.decimal_point
    }

    /// The thousands separator of `-n`/`-h`: the locale's when it is one
    /// byte, else `NON_CHAR`.
    pub fn thousands_sep(&self) -> u8 {
        self.0.thousands_sep
    }

    /// Whether the locale's thousands separator is multibyte (GNU 9.1
    /// ignores it and `--debug` says so).
    pub fn thousands_sep_ignored(&self) -> bool {
        self.0.thousands_sep_ignored
    }

    /// The `-f` table: `toupper` of each byte.
    pub(crate) fn fold(&self) -> &[u8; 256] {
        &self.0.fold
    }

    /// The `-i` table: bytes that are not `isprint`.
    pub(crate) fn nonprinting(&self) -> &[bool; 256] {
        &self.0.nonprinting
    }

    /// The `-d` table: bytes neither `isalnum` nor blank.
    pub(crate) fn nondictionary(&self) -> &[bool; 256] {
        &self.0.nondictionary
    }

    /// The raw `locale_t`, for C code (`strtold_l`); lives as long as
    /// `self`.
    pub(crate) fn handle(&self) -> libc::locale_t {
        self.0.handle.0
    }

    /// GNU's `getmonth` after blanks: the month (1–12) whose folded name
    /// starts the folded text, found by GNU's binary search over the sorted
    /// names, else 0; and how many bytes of `t` the name covers.
    pub(crate) fn month(&self, t: &[u8]) -> (u8, usize) {
        let fold = &self.0.fold;
        let months = &self.0.months;
        let (mut lo, mut hi) = (0, months.len());
        while lo < hi {
            let ix = (lo + hi) / 2;
            let (name, val) = &months[ix];
            let mut j = 0;
            loop {
                let Some(&n) = name.get(j) else {
                    return (*val, j);
                };
                // The key is a C string to GNU: its end reads as NUL.
                let m = fold[*t.get(j).unwrap_or(&0) as usize];
                if m < n {
                    hi = ix;
                    break;
                }
                if m > n {
                    lo = ix + 1;
                    break;
                }
                j += 1;
            }
        }
        (0, 0)
    }

    /// Appends the collation form of `text`: the primary weights of its
    /// first NUL-separated piece (`strxfrm_l`'s output up to its first
    /// level separator, byte 01), then `00 00`. Forms that differ order as
    /// [`Locale::collate`] does; equal forms leave the order to it.
    ///
    /// Why not the whole of `strxfrm`: glibc's `strxfrm` and `strcoll`
    /// disagree beyond the primary level (`strcoll("0x10Au", "0x10  Au")`
    /// is negative in en_US.UTF-8, the transformed strings compare the other
    /// way; combining marks and invalid bytes disagree at the secondary
    /// level), and GNU sort calls `strcoll`. Why only the first piece: a
    /// piece's order is decided at any level before the next piece counts.
    ///
    /// The weights are read from the locale's tables (module `primary`)
    /// unless they do not walk as glibc's; then `strxfrm_l` writes them and
    /// this thread keeps short texts' forms in [`FORMS`].
    pub(crate) fn text_form(&self, text: &[u8], out: &mut Vec<u8>) {
        // Walking the tables costs no more than finding a kept form (256
        // MiB of words in en_US.UTF-8: 11.1-11.7 s either way).
        if text.len() > FORM_TEXT || self.0.primary.is_some() {
            return self.new_text_form(text, out);
        }
        FORMS.with(|forms| {
            let forms = &mut *forms.borrow_mut();
            if forms.is_empty() {
                forms.resize(FORM_SLOTS, FormSlot::EMPTY);
            }
            let slot = &mut forms[FormSlot::index(text)];
            if slot.locale == self.0.id && slot.text() == text {
                out.extend_from_slice(slot.form());
                return;
            }
            let start = out.len();
            self.new_text_form(text, out);
            slot.keep(self.0.id, text, &out[start..]);
        })
    }

    /// [`Locale::text_form`], written anew.
    fn new_text_form(&self, text: &[u8], out: &mut Vec<u8>) {
        if !self.0.primary.as_ref().is_some_and(|p| p.append(text, out)) {
            strxfrm_primary(self.handle(), text, out);
        }
        out.extend_from_slice(&[0, 0]);
    }

    /// GNU's `xmemcoll0` of two keys (or lines) after its callers' empty
    /// tests: empty text first; identical bytes equal; else `strcoll_l`
    /// over the NUL-separated pieces in turn, and the text with fewer
    /// pieces first when all compare equal.
    pub(crate) fn collate(&self, a: &[u8], b: &[u8]) -> Ordering {
        match (a.is_empty(), b.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        if a == b {
            return Ordering::Equal;
        }
        if a.len() > FORM_TEXT || b.len() > FORM_TEXT {
            return self.new_collate(a, b);
        }
        PAIRS.with(|pairs| {
            let pairs = &mut *pairs.borrow_mut();
            if pairs.is_empty() {
                pairs.resize(PAIR_SLOTS, PairSlot::EMPTY);
            }
            let slot = &mut pairs[PairSlot::index(a, b)];
            if slot.locale == self.0.id && slot.a() == a && slot.b() == b {
                return slot.order.cmp(&0);
            }
            let o = self.new_collate(a, b);
            slot.keep(self.0.id, a, b, o);
            o
        })
    }

    /// [`Locale::collate`] of two different non-empty texts, by `strcoll_l`.
    fn new_collate(&self, a: &[u8], b: &[u8]) -> Ordering {
        let h = self.handle();
        CSTR2.with(|bufs| {
            let (x, y) = &mut *bufs.borrow_mut();
            for (buf, t) in [(&mut *x, a), (&mut *y, b)] {
                buf.clear();
                buf.extend_from_slice(t);
                buf.push(0);
            }
            let (mut i, mut j) = (0, 0);
            loop {
                // SAFETY: both point at NUL-terminated pieces of the
                // buffers; the handle is live.
                let d = unsafe {
                    strcoll_l(x[i..].as_ptr() as *const c_char, y[j..].as_ptr() as *const c_char, h)
                };
                if d != 0 {
                    return d.cmp(&0);
                }
                i += memchr::memchr(0, &x[i..]).expect("NUL-terminated") + 1;
                j += memchr::memchr(0, &y[j..]).expect("NUL-terminated") + 1;
                match (i == x.len(), j == y.len()) {
                    (true, true) => return Ordering::Equal,
                    (true, false) => return Ordering::Less,
                    (false, true) => return Ordering::Greater,
                    _ => {}
                }
            }
        })
    }

    /// `-R` in a collating locale (GNU's `compare_random`): the text the
    /// hash reads, each NUL-separated piece (while bytes remain: a trailing
    /// NUL ends the last) as `strxfrm` writes it with its NUL.
    pub(crate) fn random_text(&self, text: &[u8], out: &mut Vec<u8>) {
        CSTR.with(|buf| {
            let buf = &mut *buf.borrow_mut();
            buf.clear();
            buf.extend_from_slice(text);
            buf.push(0);
            let mut at = 0;
            while at < text.len() {
                let len = memchr::memchr(0, &buf[at..]).expect("NUL-terminated");
                xfrm(self.handle(), buf[at..].as_ptr() as *const c_char, len, out);
                out.push(0);
                at += len + 1;
            }
        })
    }
}

/// The next locale's [`Inner::id`] (0: no locale, an empty [`FormSlot`]).
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Texts of at most this many bytes have their forms kept in [`FORMS`].
const FORM_TEXT: usize = 24;
/// The longest form kept.
const FORM_MAX: usize = 62;
/// Slots of [`FORMS`] (a power of 2): 16384 of 96 bytes, 1.5 MiB a
/// thread. Words follow a long tail: on 256 MiB of generated words (25.7 M
/// lines, 2 M distinct) in en_US.UTF-8 the sort made 18.7 M `strxfrm_l`
/// calls with 4096 slots, 15.3 M with 16384, 12.1 M with 65536 (counted with
/// a `perf probe` on libc), and took 13.8, 12.8 and 12.7 s.
const FORM_SLOTS: usize = 16384;

/// A short text's collation form in a thread's [`FORMS`].
#[derive(Clone, Copy)]
struct FormSlot {
    /// The locale's [`Inner::id`] (0: empty).
    locale: u64,
    text_len: u8,
    form_len: u8,
    text: [u8; FORM_TEXT],
    form: [u8; FORM_MAX],
}

impl FormSlot {
    const EMPTY: FormSlot =
        FormSlot { locale: 0, text_len: 0, form_len: 0, text: [0; FORM_TEXT], form: [0; FORM_MAX] };

    /// The slot of `text` (at most [`FORM_TEXT`] bytes): a multiplicative
    /// hash of its bytes and length.
    #[inline]
    fn index(text: &[u8]) -> usize {
        let mut w = [0u8; FORM_TEXT];
        w[..text.len()].copy_from_slice(text);
        let word = |i: usize| u64::from_le_bytes(w[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let h = (word(0) ^ word(1).rotate_left(21) ^ word(2).rotate_left(42) ^ text.len() as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - FORM_SLOTS.trailing_zeros())) as usize
    }

    fn text(&self) -> &[u8] {
        &self.text[..self.text_len as usize]
    }

    fn form(&self) -> &[u8] {
        &self.form[..self.form_len as usize]
    }

    /// Keeps `form`, `text`'s in locale `locale`, if it is short enough.
    fn keep(&mut self, locale: u64, text: &[u8], form: &[u8]) {
        if form.len() <= FORM_MAX {
            self.locale = locale;
            self.text_len = text.len() as u8;
            self.text[..text.len()].copy_from_slice(text);
            self.form_len = form.len() as u8;
            self.form[..form.len()].copy_from_slice(form);
        }
    }
}

/// Slots of [`PAIRS`] (a power of 2): 1024 of 64 bytes.
const PAIR_SLOTS: usize = 1024;

/// The order of two short texts in a thread's [`PAIRS`].
#[derive(Clone, Copy)]
struct PairSlot {
    /// The locale's [`Inner::id`] (0: empty).
    locale: u64,
    a_len: u8,
    b_len: u8,
    /// [`Locale::collate`]'s order of the two, as -1, 0 or 1.
    order: i8,
    /// The first text, then the second.
    texts: [u8; 2 * FORM_TEXT],
}

impl PairSlot {
    const EMPTY: PairSlot = PairSlot { locale: 0, a_len: 0, b_len: 0, order: 0, texts: [0; 2 * FORM_TEXT] };

    /// The slot of the pair (`a`, `b`), each at most [`FORM_TEXT`] bytes.
    #[inline]
    fn index(a: &[u8], b: &[u8]) -> usize {
        let hb = FormSlot::index(b);
        (FormSlot::index(a) ^ hb.rotate_left(7) ^ (hb >> 3)) & (PAIR_SLOTS - 1)
    }

    fn a(&self) -> &[u8] {
        &self.texts[..self.a_len as usize]
    }

    fn b(&self) -> &[u8] {
        &self.texts[FORM_TEXT..FORM_TEXT + self.b_len as usize]
    }

    fn keep(&mut self, locale: u64, a: &[u8], b: &[u8], order: Ordering) {
        self.locale = locale;
        self.a_len = a.len() as u8;
        self.b_len = b.len() as u8;
        self.order = order as i8;
        self.texts[..a.len()].copy_from_slice(a);
        self.texts[FORM_TEXT..FORM_TEXT + b.len()].copy_from_slice(b);
    }
}

thread_local! {
    /// The orders of pairs of short texts collated last, per thread
    /// (allocated on first use): a merge compares two heads whose forms
    /// are equal (`Dereno`, `dereño`) again for every copy of either that
    /// comes next, and words repeat. A `strcoll_l` took a third of a
    /// merge's time in `en_US.UTF-8` before.
    static PAIRS: std::cell::RefCell<Vec<PairSlot>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The collation forms of short texts met last, per thread (allocated
    /// on first use): words and short keys repeat, and each form written
    /// anew costs a `strxfrm` of all four levels of the text, about five
    /// times the primary weights kept.
    static FORMS: std::cell::RefCell<Vec<FormSlot>> = const { std::cell::RefCell::new(Vec::new()) };
    /// A C string of the text being transformed.
    static CSTR: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The two C strings being collated.
    static CSTR2: std::cell::RefCell<(Vec<u8>, Vec<u8>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The locale `name`, which the tests need generated (CI runs
    /// locale-gen; see .ci/run).
    pub(crate) fn need(name: &str) -> Locale {
        match Locale::named(name) {
            Ok(Some(l)) => l,
            other => panic!(
                "locale {name} is not available ({other:?}): generate it (uncomment it in /etc/locale.gen \
                 and run locale-gen, as .ci/run does)"
            ),
        }
    }

    /// The locale `name` with texts' forms written by `strxfrm_l` and
    /// kept in [`FORMS`] (the path of a C library whose tables do not
    /// walk as glibc 2.36's).
    pub(crate) fn need_unwalked(name: &str) -> Locale {
        let l = Locale::load(&std::ffi::CString::new(name).unwrap(), false).unwrap().unwrap();
        assert!(l.0.primary.is_none() && need(name).0.primary.is_some(), "{name} walks its tables");
        l
    }

    #[test]
    fn c_and_posix_are_no_locale() {
        assert!(Locale::named("C").unwrap().is_none());
        assert!(Locale::named("POSIX").unwrap().is_none());
        assert!(Locale::named("xx_NOWHERE.UTF-8").is_err());
        let c8 = need("C.UTF-8");
        assert!(c8.hard_collate() && !c8.collates());
        assert!(need("en_US.UTF-8").collates());
        assert_eq!((c8.decimal_point(), c8.thousands_sep()), (b'.', NON_CHAR));
    }

    #[test]
    fn tables_and_numbers_of_locales() {
        let de = need("de_DE.UTF-8");
        assert_eq!((de.decimal_point(), de.thousands_sep()), (b',', b'.'));
        assert_eq!(de.collate_name(), "de_DE.UTF-8");
        assert_eq!(de.month(b"M\xc3\xa4rz"), (3, 4));
        assert_eq!(de.month(b"dez"), (12, 3));
        assert_eq!(de.month(b"mar"), (0, 0));
        let tr = need("tr_TR.UTF-8");
        assert_eq!(tr.fold()[b'i' as usize], b'i', "toupper('i') is 'i' in tr_TR's single-byte table");
        let fr = need("fr_FR.UTF-8");
        assert!(fr.thousands_sep_ignored());
        assert_eq!(fr.month(b"janv."), (1, 5));
        assert_eq!(fr.month(b"janvier"), (0, 0));
    }

    fn text() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop::sample::select(vec![
            "", "a", "A", "b", "é", "É", "e", "z", "ı", "I", "i", "İ", "å", "ä", "ö", "ß", "ss", " ", "-",
            "'", ".", "1", "10", "\0", "\u{80}", "\u{ff}", "\t", "ﬁ", "x", "\u{301}", "Œ", "中", "€",
            "0x10Au", "0x10  Au",
        ]);
        prop::collection::vec(piece, 0..6).prop_map(|p| p.concat().into_bytes())
    }

    /// A form kept for a short text is the one written anew (and the one
    /// the tables' walk writes), and a text met in another locale first
    /// takes its own locale's.
    #[test]
    fn kept_forms_are_each_locales_own() {
        let (en, sv) = (need_unwalked("en_US.UTF-8"), need_unwalked("sv_SE.UTF-8"));
        let (en_walked, sv_walked) = (need("en_US.UTF-8"), need("sv_SE.UTF-8"));
        let long = "ä".repeat(20);
        for t in ["är", "ar", "zebra", "Zebra", "", "x\0y", long.as_str()] {
            for (l, walked) in [(&sv, &sv_walked), (&en, &en_walked), (&en, &en_walked), (&sv, &sv_walked)] {
                let (mut kept, mut new, mut walk) = (b"<".to_vec(), b"<".to_vec(), b"<".to_vec());
                l.text_form(t.as_bytes(), &mut kept);
                l.new_text_form(t.as_bytes(), &mut new);
                walked.text_form(t.as_bytes(), &mut walk);
                assert_eq!(kept, new, "{l:?} {t:?}");
                assert_eq!(kept, walk, "{l:?} {t:?}");
            }
        }
        let form = |l: &Locale, t: &str| {
            let mut v = Vec::new();
            l.text_form(t.as_bytes(), &mut v);
            v
        };
        // Swedish sorts ä after z, English with a.
        assert!(form(&sv, "är") > form(&sv, "zebra"));
        assert!(form(&en, "är") < form(&en, "zebra"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Forms that differ order as xmemcoll0 (after GNU's empty tests),
        /// and no form is a proper prefix of another, written either way:
        /// by the tables' walk or by `strxfrm_l` with kept forms.
        #[test]
        fn forms_order_as_strcoll(a in text(), b in text(), which in 0usize..6, walk: bool, raw in prop::collection::vec(any::<u8>(), 0..4)) {
            let name = ["en_US.UTF-8", "de_DE.UTF-8", "sv_SE.UTF-8", "fr_FR.UTF-8", "tr_TR.UTF-8", "C.UTF-8"][which];
            let l = if walk || which == 5 { need(name) } else { need_unwalked(name) };
            // Split characters too (invalid UTF-8).
            let a = if raw.len() == 1 && a.len() > 1 { [&a[..1], &a[2..]].concat() } else { a };
            let b = [b, raw].concat();
            let (mut x, mut y) = (Vec::new(), Vec::new());
            l.text_form(&a, &mut x);
            l.text_form(&b, &mut y);
            let forms = x.cmp(&y);
            prop_assert!(forms.is_eq() || forms == l.collate(&a, &b), "{} {:?} {:?}", name, a, b);
            let n = x.len().min(y.len());
            prop_assert!(x[..n] != y[..n] || x.len() == y.len());
        }
    }

    /// The kept orders of short pairs ([`PAIRS`]) are `strcoll`'s, asked
    /// again in any order, both ways round, in two locales that disagree
    /// (Swedish sorts `ä` after `z`), with texts long enough to bypass the
    /// slots between them.
    #[test]
    fn kept_pair_orders_are_strcolls_in_each_locale() {
        let (en, sv) = (need("en_US.UTF-8"), need("sv_SE.UTF-8"));
        assert_eq!(en.collate("ä".as_bytes(), b"z"), Ordering::Less);
        assert_eq!(sv.collate("ä".as_bytes(), b"z"), Ordering::Greater);
        assert_eq!(en.collate("ä".as_bytes(), b"z"), Ordering::Less);
        let pieces = ["a", "A", "ä", "Ä", "z", "é", "e", "E", "ß", "ss", "-", " ", "1", "\u{301}", "o", "ö"];
        let mut next = crate::simd_sort::tests::xorshift(41);
        let texts: Vec<Vec<u8>> = (0..200)
            .map(|_| {
                let n = 1 + next() % 12;
                (0..n)
                    .flat_map(|_| pieces[(next() % pieces.len() as u64) as usize].as_bytes().to_vec())
                    .collect()
            })
            .collect();
        for _ in 0..20_000 {
            let (a, b) = (&texts[(next() % 200) as usize], &texts[(next() % 200) as usize]);
            let l = if next().is_multiple_of(2) { &en } else { &sv };
            let want = if a == b { Ordering::Equal } else { l.new_collate(a, b) };
            assert_eq!(
                l.collate(a, b),
                want,
                "{:?} {:?}",
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b)
            );
            assert_eq!(l.collate(b, a), want.reverse());
        }
    }
}
