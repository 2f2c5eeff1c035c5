//! The primary weights of a text read straight from glibc's `LC_COLLATE`
//! tables: what [`Locale::text_form`](super::Locale::text_form) keeps of
//! `strxfrm_l` (its output up to the first level separator), without the
//! three levels `strxfrm_l` writes after it and the copy into a C string.
//! On 1 GiB of words in en_US.UTF-8, `strxfrm_l` had taken a quarter of the
//! sort's CPU time.
//!
//! The tables are the ones `strxfrm_l` reads (`nl_langinfo_l` of
//! `_NL_COLLATE_TABLEMB`, `WEIGHTMB`, `EXTRAMB`, `INDIRECTMB`, `RULESETS`),
//! walked as glibc 2.36's `string/strxfrm_l.c` walks them for the first
//! pass (`findidx` of `locale/weight.h` for each character or contraction,
//! then its weights). They are glibc's private format, so [`Primary::new`]
//! checks the walk against `strxfrm_l` on a sample of texts and gives up
//! (leaving `strxfrm_l` to do the work) on any difference; a first pass
//! with `position` or `backward` rules, which no glibc locale has at the
//! primary level, is left to `strxfrm_l` too. Bytes that are characters
//! alone and two-byte UTF-8 characters that start no longer sequence are
//! looked up in tables filled from the walk once per locale: on those
//! words the walk's dependent loads had been a fifth of the sort's CPU.

use std::ffi::c_char;

/// `_NL_ITEM (__LC_COLLATE, n)`: glibc's `LC_COLLATE` items, in the
/// order of `locale/langinfo.h` (the same in glibc 2.36 and in 2026's
/// master).
const fn collate_item(n: i32) -> libc::nl_item {
    (libc::LC_COLLATE << 16) | n
}
const NRULES: libc::nl_item = collate_item(0);
const RULESETS: libc::nl_item = collate_item(1);
const TABLEMB: libc::nl_item = collate_item(2);
const WEIGHTMB: libc::nl_item = collate_item(3);
const EXTRAMB: libc::nl_item = collate_item(4);
const INDIRECTMB: libc::nl_item = collate_item(5);

/// `enum coll_sort_rule` of `locale/localeinfo.h`.
const SORT_FORWARD: u8 = 1;
const SORT_POSITION: u8 = 4;

/// A locale's `LC_COLLATE` tables (pointers into the locale's data, which
/// live as long as its handle: [`super::Locale`] holds both).
pub(super) struct Primary {
    nrules: usize,
    rulesets: *const u8,
    table: *const i32,
    weights: *const u8,
    extra: *const u8,
    indirect: *const i32,
    /// Each byte's weights where the byte alone is a character of the
    /// tables (their [`Fast`] entry), else [`SLOW`].
    single: Box<[Fast; 256]>,
    /// Each two-byte UTF-8 character's weights (lead byte C2–DF, then a
    /// continuation byte: `(lead - 0xc2) * 64 + (cont - 0x80)`) where no
    /// longer sequence of the tables starts with it, else [`SLOW`].
    double: Box<[Fast; DOUBLE]>,
}

/// A character's primary weights, looked up once: its weights' count in
/// the low byte (0 … 7), then the weights. Most text is ASCII and Latin
/// letters, whose walk is three dependent loads and a rule check per
/// character; a look-up in these tables is one.
type Fast = u64;
/// Not in the fast tables: walk the locale's tables.
const SLOW: Fast = u64::MAX;
/// Two-byte UTF-8 characters: 30 lead bytes of 64 continuations.
const DOUBLE: usize = 30 * 64;

// SAFETY: the tables are read only, and glibc never changes a loaded
// locale's data.
unsafe impl Send for Primary {}
unsafe impl Sync for Primary {}

impl Primary {
    /// The tables of the locale `h` (with collation rules), if walking them
    /// gives what `strxfrm_l` gives on a sample of texts.
    ///
    /// # Safety
    /// `h` must be a live locale handle that outlives the result.
    pub(super) unsafe fn new(h: libc::locale_t) -> Option<Primary> {
        // Other C libraries answer these items otherwise (musl: "").
        if cfg!(not(target_env = "gnu")) {
            return None;
        }
        // SAFETY: the handle is live; the word item comes back in place of
        // the pointer (its low 32 bits), the others are pointers into the
        // locale's data.
        let item = |i| unsafe { libc::nl_langinfo_l(i, h) };
        let nrules = item(NRULES) as usize as u32 as usize;
        let mut p = Primary {
            nrules,
            rulesets: item(RULESETS) as *const u8,
            table: item(TABLEMB) as *const i32,
            weights: item(WEIGHTMB) as *const u8,
            extra: item(EXTRAMB) as *const u8,
            indirect: item(INDIRECTMB) as *const i32,
            single: Box::new([SLOW; 256]),
            double: Box::new([SLOW; DOUBLE]),
        };
        let aligned = |q: *const i32| !q.is_null() && (q as usize).is_multiple_of(4);
        if nrules == 0
            || nrules > 16
            || p.rulesets.is_null()
            || p.weights.is_null()
            || p.extra.is_null()
            || !aligned(p.table)
            || !aligned(p.indirect)
        {
            return None;
        }
        p.fill_fast();
        let mut out = Vec::new();
        for text in sample() {
            out.clear();
            if !p.append(&text, &mut out) || out != by_strxfrm(h, &text) {
                return None;
            }
        }
        Some(p)
    }

    /// Fills [`Primary::single`] and [`Primary::double`] from the walk.
    fn fill_fast(&mut self) {
        for b in 1..=255u8 {
            // SAFETY: the table has 256 entries (`findidx` reads it so).
            if unsafe { *self.table.add(b as usize) } >= 0 {
                self.single[b as usize] = self.fast(&[b]);
            }
        }
        for lead in 0xc2..=0xdfu8 {
            let alone = self.lone_seconds(lead);
            for cont in 0x80..=0xbfu8 {
                if alone[(cont - 0x80) as usize] {
                    self.double[(lead - 0xc2) as usize * 64 + (cont - 0x80) as usize] =
                        self.fast(&[lead, cont]);
                }
            }
        }
    }

    /// The [`Fast`] entry of the character `seq` (followed by a NUL):
    /// [`SLOW`] when the walk takes other than all of it, its rule is not
    /// plain `forward`, it weighs more than 7 bytes or a weight is 01.
    fn fast(&self, seq: &[u8]) -> Fast {
        let mut at = 0;
        let (rule, idx) = self.find(seq, &mut at);
        // SAFETY: indices from the locale's own tables, as in `append`.
        let (rule, len) =
            unsafe { (*self.rulesets.add(rule * self.nrules), *self.weights.add(idx) as usize) };
        if at != seq.len() || rule & (SORT_FORWARD | SORT_POSITION) != SORT_FORWARD || len > 7 {
            return SLOW;
        }
        let mut fast = len as Fast;
        for k in 1..=len {
            // SAFETY: as above: a length byte, then that many weights.
            let w = unsafe { *self.weights.add(idx + k) };
            if w == 1 {
                return SLOW;
            }
            fast |= Fast::from(w) << (8 * k);
        }
        fast
    }

    /// Which continuation bytes (0x80 + i) make with `lead` a character
    /// whose walk never reads past it: the first entry of `lead`'s list
    /// (glibc's `findidx` takes the first that matches) that can match
    /// the byte is a sequence or range of that byte alone.
    fn lone_seconds(&self, lead: u8) -> [bool; 64] {
        let mut alone = [false; 64];
        // SAFETY: the table has 256 entries.
        let i = unsafe { *self.table.add(lead as usize) };
        if i >= 0 {
            // The lead byte is a character alone: not a two-byte one.
            return alone;
        }
        let mut decided = [false; 64];
        let mut decide = |lo: u8, hi: u8, single: bool| {
            for b in lo.max(0x80)..=hi.min(0xbf) {
                let k = (b - 0x80) as usize;
                if !decided[k] {
                    decided[k] = true;
                    alone[k] = single;
                }
            }
        };
        // SAFETY: the list `findidx` walks for this byte, entry by entry
        // as it reads them, up to its last entry, of length 0 ("at the end
        // of each list there is an entry of length zero", weight.h).
        unsafe {
            let mut cp = self.extra.offset(-(i as isize));
            loop {
                let i = (cp as *const i32).read_unaligned();
                let nhere = *cp.add(4) as usize;
                cp = cp.add(5);
                if i >= 0 {
                    if nhere == 0 {
                        return alone;
                    }
                    decide(*cp, *cp, nhere == 1);
                    cp = cp.add((1 + nhere).next_multiple_of(4) - 1);
                } else {
                    decide(*cp, *cp.add(nhere), nhere == 1);
                    cp = cp.add((1 + 2 * nhere).next_multiple_of(4) - 1);
                }
            }
        }
    }

    /// Appends the primary weights of `text` (up to its first NUL), as
    /// `strxfrm_l` writes them before its first level separator (byte 01),
    /// cut at a weight byte 01 as a cut of its output would be. Returns
    /// false, having appended nothing, when a character's first-pass rule
    /// is not plain `forward` (`strxfrm_l` must do it).
    pub(super) fn append(&self, text: &[u8], out: &mut Vec<u8>) -> bool {
        let start = out.len();
        // Latin letters weigh 1 or 2 bytes at the first level.
        out.reserve(2 * text.len() + 8);
        let (mut at, mut ones) = (0, false);
        // As a C string: up to a NUL (no sequence of the tables holds one).
        while at < text.len() && text[at] != 0 {
            let b = text[at];
            let (fast, n) = match self.single[b as usize] {
                SLOW if (0xc2..0xe0).contains(&b) && text.get(at + 1).is_some_and(|c| c & 0xc0 == 0x80) => {
                    (self.double[(b - 0xc2) as usize * 64 + (text[at + 1] - 0x80) as usize], 2)
                }
                fast => (fast, 1),
            };
            if fast != SLOW {
                out.reserve(8);
                let len = out.len();
                // SAFETY: 8 bytes of spare capacity reserved; the first
                // `fast & 0xff` (at most 7) of them are the weights.
                unsafe {
                    (out.as_mut_ptr().add(len) as *mut u64).write_unaligned((fast >> 8).to_le());
                    out.set_len(len + (fast & 0xff) as usize);
                }
                at += n;
                continue;
            }
            let (rule, idx) = self.find(text, &mut at);
            // SAFETY: the rule index and the weight index come from the
            // locale's own tables (`findidx`'s result).
            let rule = unsafe { *self.rulesets.add(rule * self.nrules) };
            if rule & (SORT_FORWARD | SORT_POSITION) != SORT_FORWARD {
                out.truncate(start);
                return false;
            }
            // SAFETY: as above: a length byte, then that many weights.
            unsafe {
                let len = *self.weights.add(idx) as usize;
                // Byte by byte: a call to copy one or two bytes cost more
                // than the walk.
                for k in 1..=len {
                    let b = *self.weights.add(idx + k);
                    ones |= b == 1;
                    out.push(b);
                }
            }
        }
        if ones {
            let sep = out[start..].iter().position(|&b| b == 1).expect("a byte 01");
            out.truncate(start + sep);
        }
        true
    }

    /// glibc's `findidx` (`locale/weight.h`) at `text[*at..]` read as a C
    /// string (0 past its end): the rule index and the weight index of the
    /// longest sequence the table knows there; moves `at` past it.
    fn find(&self, text: &[u8], at: &mut usize) -> (usize, usize) {
        let byte = |i: usize| text.get(i).copied().unwrap_or(0);
        let tmp = |i: i32| ((i >> 24) as u8 as usize, (i & 0x00ff_ffff) as usize);
        // SAFETY: every read below is where glibc's findidx reads, in the
        // locale's tables, for a NUL-terminated string.
        unsafe {
            let i = *self.table.add(byte(*at) as usize);
            *at += 1;
            if i >= 0 {
                return tmp(i);
            }
            let u = *at;
            let mut cp = self.extra.offset(-(i as isize));
            loop {
                let i = (cp as *const i32).read_unaligned();
                cp = cp.add(4);
                let nhere = *cp as usize;
                cp = cp.add(1);
                if i >= 0 {
                    // One sequence: the byte already read, then nhere more.
                    let mut cnt = 0;
                    while cnt < nhere && *cp.add(cnt) == byte(u + cnt) {
                        cnt += 1;
                    }
                    if cnt == nhere {
                        *at += nhere;
                        return tmp(i);
                    }
                    // On to the next entry, 4-aligned (LOCFILE_ALIGN).
                    cp = cp.add((1 + nhere).next_multiple_of(4) - 1);
                } else {
                    // A range of sequences: from cp[..nhere] to cp[nhere..2 nhere].
                    let mut cnt = 0;
                    while cnt < nhere && *cp.add(cnt) == byte(u + cnt) {
                        cnt += 1;
                    }
                    let skip = |cp: *const u8| cp.add((1 + 2 * nhere).next_multiple_of(4) - 1);
                    let mut offset = 0usize;
                    if cnt != nhere {
                        if *cp.add(cnt) > byte(u + cnt) {
                            cp = skip(cp);
                            continue;
                        }
                        let mut c = 0;
                        while c < nhere && *cp.add(nhere + c) == byte(u + c) {
                            c += 1;
                        }
                        if c != nhere && *cp.add(nhere + c) < byte(u + c) {
                            cp = skip(cp);
                            continue;
                        }
                        let mut cnt = 0;
                        while *cp.add(cnt) == byte(u + cnt) {
                            cnt += 1;
                        }
                        loop {
                            offset <<= 8;
                            offset = offset
                                .wrapping_add((i32::from(byte(u + cnt)) - i32::from(*cp.add(cnt))) as usize);
                            cnt += 1;
                            if cnt >= nhere {
                                break;
                            }
                        }
                    }
                    *at += nhere;
                    return tmp(*self.indirect.offset(-(i as isize)).add(offset));
                }
            }
        }
    }
}

/// Texts [`Primary::new`] checks the walk on: every byte alone, the Latin,
/// Greek and Cyrillic letters and combining marks alone and in pairs with
/// letters (contractions), words of the six locales' alphabets, digits and
/// punctuation, invalid UTF-8.
fn sample() -> Vec<Vec<u8>> {
    let mut texts: Vec<Vec<u8>> = (1..=255u8).map(|b| vec![b]).collect();
    let chars: Vec<char> =
        (0x20u32..0x250).chain(0x300..0x370).chain(0x370..0x530).filter_map(char::from_u32).collect();
    texts.extend(chars.iter().map(|c| c.to_string().into_bytes()));
    for a in ['a', 'c', 'd', 'l', 'n', 'o', 's', 'A', 'C', 'L', 'I', 'ı', 'i', 'ü', 'å'] {
        for b in ['h', 'H', 'z', 'l', 'a', 'e', 'j', 'ß', '\u{301}', '\u{308}', '\u{30a}', '̧', '-', ' '] {
            texts.push(format!("{a}{b}").into_bytes());
        }
    }
    for w in [
        "Straße",
        "Äpfel",
        "öl",
        "Öl",
        "Ångström",
        "ärlig",
        "école",
        "côte",
        "coté",
        "côté",
        "İstanbul",
        "ılık",
        "çiçek",
        "Ğ",
        "naïve",
        "co-op",
        "coop",
        "a b",
        "ab",
        "A1",
        "a-1",
        "résumé",
        "resume",
        "x\u{ff}y",
        "\u{c3}",
        "\u{e9}\u{301}",
        "日本語",
        "🙂",
        "0x10Au",
        "И\u{306}",
        "и\u{306}a",
        "ا\u{654}",
        "و\u{654}",
        "ي\u{654}",
    ] {
        texts.push(w.as_bytes().to_vec());
    }
    texts.push(vec![0xc3, 0x28, b'a']);
    texts.push(vec![0xe2, 0x82]);
    texts.push(vec![0xf0, 0x9f, 0x99]);
    texts
}

/// Appends the primary weights of `text`'s first NUL-separated piece by
/// `strxfrm_l` in the locale `h`: its output up to the first level
/// separator (byte 01).
pub(super) fn strxfrm_primary(h: libc::locale_t, text: &[u8], out: &mut Vec<u8>) {
    let first = memchr::memchr(0, text).map_or(text, |n| &text[..n]);
    TEXT.with(|buf| {
        let buf = &mut *buf.borrow_mut();
        buf.clear();
        buf.extend_from_slice(first);
        buf.push(0);
        let start = out.len();
        xfrm(h, buf.as_ptr() as *const c_char, first.len(), out);
        if let Some(sep) = memchr::memchr(1, &out[start..]) {
            out.truncate(start + sep);
        }
    })
}

/// Appends `strxfrm_l` of the C string at `s` (of `len` bytes) in the
/// locale `h`.
pub(super) fn xfrm(h: libc::locale_t, s: *const c_char, len: usize, out: &mut Vec<u8>) {
    let start = out.len();
    // glibc writes about 4 bytes per character for 4 levels.
    out.reserve(4 * len + 16);
    loop {
        let room = out.capacity() - start;
        // SAFETY: `s` is a NUL-terminated string; strxfrm_l writes at
        // most `room` bytes into the spare capacity at `start`.
        let n = unsafe { strxfrm_l(out.as_mut_ptr().add(start) as *mut c_char, s, room, h) };
        if n < room {
            // SAFETY: strxfrm_l wrote n bytes and a NUL (dropped).
            unsafe { out.set_len(start + n) };
            return;
        }
        out.reserve(n + 1);
    }
}

extern "C" {
    fn strxfrm_l(dest: *mut c_char, src: *const c_char, n: usize, loc: libc::locale_t) -> usize;
}

thread_local! {
    /// A text made a C string for `strxfrm_l`, per thread.
    static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A text's primary weights by `strxfrm_l` in the locale `h`, as
/// [`Primary::append`] writes them.
fn by_strxfrm(h: libc::locale_t, text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    strxfrm_primary(h, text, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// In each locale `.ci/run` generates, the tables walk (the check of
    /// [`Primary::new`] passes) and give `strxfrm_l`'s primary weights on
    /// random texts: words of the locales' letters, accents and marks,
    /// punctuation, digits, spaces, other scripts and random bytes.
    #[test]
    fn walked_weights_are_strxfrms_in_each_locale() {
        let alphabet: Vec<char> = "aAbBcCdDhHiIıİlLnNoOsSzZåÅäÄöÖüÜßçÇğĞşŞéÉèêëàâîïôûœæ-' .,0123456789\u{301}\u{308}\u{327}ĳǆ日本語🙂\t"
            .chars()
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for name in ["en_US.UTF-8", "de_DE.UTF-8", "sv_SE.UTF-8", "fr_FR.UTF-8", "tr_TR.UTF-8"] {
            let c = std::ffi::CString::new(name).unwrap();
            // SAFETY: a valid C string; a new handle, freed below.
            let h = unsafe { libc::newlocale(libc::LC_ALL_MASK, c.as_ptr(), std::ptr::null_mut()) };
            assert!(!h.is_null(), "{name} is generated (see .ci/run)");
            // SAFETY: the handle lives until freed at the end.
            let p = unsafe { Primary::new(h) }.unwrap_or_else(|| panic!("{name}: the walk"));
            let mut out = Vec::new();
            for i in 0..20_000 {
                let text: Vec<u8> = if i % 10 == 9 {
                    (0..rng.random_range(1..12)).map(|_| rng.random_range(1..=255u8)).collect()
                } else {
                    let n = rng.random_range(1..16);
                    (0..n)
                        .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                        .collect::<String>()
                        .into_bytes()
                };
                out.clear();
                assert!(p.append(&text, &mut out), "{name}: {text:?} left to strxfrm");
                assert_eq!(out, by_strxfrm(h, &text), "{name}: {:?}", String::from_utf8_lossy(&text));
            }
            // Every character of the BMP and of the next planes (every
            // 3rd) alone and before an `a`: the tables' single characters,
            // their ranges (CJK, Hangul) and what is undefined.
            let chars = (1..0x1_0000u32).chain((0x1_0000..0x3_0000).step_by(3)).filter_map(char::from_u32);
            for c in chars {
                for text in [c.to_string(), format!("{c}a")] {
                    out.clear();
                    assert!(p.append(text.as_bytes(), &mut out), "{name}: {text:?} left to strxfrm");
                    assert_eq!(out, by_strxfrm(h, text.as_bytes()), "{name}: {text:?}");
                }
            }
            // Every two-byte character before each combining mark of the
            // Latin, Cyrillic, Hebrew, Arabic and Syriac blocks: the
            // contractions a two-byte character starts (Cyrillic И and
            // a breve, Arabic alef and a hamza), which the fast table of
            // two-byte characters must leave to the walk.
            let marks: Vec<char> = (0x300..0x370)
                .chain(0x483..0x48a)
                .chain(0x591..0x5c8)
                .chain(0x610..0x61b)
                .chain(0x64b..0x660)
                .chain([0x670, 0x711])
                .chain(0x6d6..0x6ee)
                .chain(0x730..0x74b)
                .filter_map(char::from_u32)
                .collect();
            for c in (0x80..0x800u32).filter_map(char::from_u32) {
                for m in &marks {
                    let text = format!("{c}{m}");
                    out.clear();
                    assert!(p.append(text.as_bytes(), &mut out), "{name}: {text:?} left to strxfrm");
                    assert_eq!(out, by_strxfrm(h, text.as_bytes()), "{name}: {text:?}");
                }
            }
            // SAFETY: from newlocale, no longer used.
            unsafe { libc::freelocale(h) };
        }
    }
}
