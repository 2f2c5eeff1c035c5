//! Compiles `src/keys/general.c`: `sort -g` keys read by the C library's
//! `strtold`, as GNU sort reads them.
fn main() {
    println!("cargo:rerun-if-changed=src/keys/general.c");
    cc::Build::new().file("src/keys/general.c").warnings(true).compile("emsort_general");
}
