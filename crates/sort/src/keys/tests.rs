//! The normalised keys against the comparator, on random lines and keys.

use super::*;
use proptest::prelude::*;

fn line() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop::sample::select(vec![
        "", " ", "\t", ",", "-", "+", "0", "00", "1", "9", "12", ".", "5.", ".5", "-0", "1e3", "0x1F", "inf",
        "nan", "K", "2M", "1.5G", "jan", " Feb", "DEC", "1.10", "1.9", "1.0a", "~", "a", "B", "\0", "\u{80}",
        "é", "\r", "É", "e", "ı", "I", "i", "İ", "å", "ä", "Ö", "1,5", "1.234,5", "Mär", "déc.", "janv.",
        "Oca", "Şub", "\u{ff}",
    ]);
    prop::collection::vec(piece, 0..8).prop_map(|p| p.concat().into_bytes())
}

fn key() -> impl Strategy<Value = Key> {
    (1usize..4, 0usize..3, prop::option::of((1usize..4, 0usize..3)), "[bdfgiMhnrV]{0,3}").prop_filter_map(
        "compatible",
        |(f, c, end, mods)| {
            let mut s = format!("{f}");
            if c > 0 {
                s += &format!(".{c}");
            }
            s += &mods;
            if let Some((e, ec)) = end {
                s += &format!(",{e}");
                if ec > 0 {
                    s += &format!(".{ec}");
                }
            }
            let k = Key::parse(&s).ok()?;
            k.check_compatible().ok()?;
            Some(k)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Equal-or-ordered normalised keys order the lines as the comparator
    /// does; a prefix never contradicts it.
    #[test]
    fn normalised_keys_order_like_the_comparator(keys in prop::collection::vec(key(), 1..3), tab in prop::option::of(Just(b',')),
                                                a in line(), b in line(), stable: bool) {
        let order = LineOrder::new(OrderOptions { keys, tab, stable, ..Default::default() }).unwrap();
        let (mut ea, mut eb, mut s) = (Vec::new(), Vec::new(), Scratch::default());
        order.encode(&a, &mut ea, &mut s);
        order.encode(&b, &mut eb, &mut s);
        // Bytewise order of the forms, then the rest of the comparison,
        // is GNU's whole comparison.
        let got = ea.cmp(&eb).then_with(|| order.compare_equal_forms(&a, &b));
        prop_assert_eq!(got, order.compare(&a, &b), "{:?} {:?} {:?}", order.keys(), a, b);
        // No form is a proper prefix of another (the deep radix sort
        // relies on it).
        let n = ea.len().min(eb.len());
        prop_assert!(ea[..n] != eb[..n] || ea.len() == eb.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// The same in each locale the tests use (keys, and lines without
    /// keys: the whole line collated).
    #[test]
    fn normalised_keys_order_like_the_comparator_in_locales(keys in prop::collection::vec(key(), 0..3), tab in prop::option::of(Just(b',')),
                                                            a in line(), b in line(), stable: bool, unique: bool, rev: bool, which in 0usize..6) {
        let name = ["en_US.UTF-8", "de_DE.UTF-8", "sv_SE.UTF-8", "fr_FR.UTF-8", "tr_TR.UTF-8", "C.UTF-8"][which];
        let locale = Some(super::locale::tests::need(name));
        let mut o = OrderOptions { keys, tab, stable, unique, locale, ..Default::default() };
        o.global.reverse = rev;
        let order = LineOrder::new(o).unwrap();
        let (mut ea, mut eb, mut s) = (Vec::new(), Vec::new(), Scratch::default());
        order.encode(&a, &mut ea, &mut s);
        order.encode(&b, &mut eb, &mut s);
        let got = ea.cmp(&eb).then_with(|| order.compare_equal_forms(&a, &b));
        prop_assert_eq!(got, order.compare(&a, &b), "{} {:?} {:?} {:?}", name, order.keys(), a, b);
        let n = ea.len().min(eb.len());
        prop_assert!(ea[..n] != eb[..n] || ea.len() == eb.len());
    }
}

#[test]
fn global_flags_reach_keys_without_modifiers_only() {
    let mut o = OrderOptions::default();
    o.global.set_global('n');
    o.global.set_global('r');
    o.keys.push(Key::parse("1,1").unwrap());
    o.keys.push(Key::parse("2,2f").unwrap());
    let order = LineOrder::new(o).unwrap();
    assert!(order.keys()[0].numeric && order.keys()[0].reverse);
    assert!(!order.keys()[1].numeric && !order.keys()[1].reverse);
    assert!(order.reverse());
}

#[test]
fn last_resort_unless_stable_or_unique() {
    let mut o = OrderOptions::default();
    o.keys.push(Key::parse("1,1").unwrap());
    let order = LineOrder::new(o.clone()).unwrap();
    assert_eq!(order.compare(b"a x", b"a y"), Ordering::Less);
    o.stable = true;
    assert_eq!(LineOrder::new(o).unwrap().compare(b"a x", b"a y"), Ordering::Equal);
}
