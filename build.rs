//! Links the `glint` binary as a position-dependent executable: with no
//! relocations to apply at start, the read-only data stays untouched and
//! shared, which takes about half a megabyte off the idle process.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
