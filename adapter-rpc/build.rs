//! Links the binary with packed relative relocations (`DT_RELR`) on Linux with glibc: the
//! dynamic loader then reads a few KiB of relocations at start-up instead of about 0.8 MB of
//! `.rela.dyn`, and the process maps fewer pages of the file (benches/README.md, "Where the
//! memory and time go"). A linker without the option ignores it with a warning.
fn main() {
    let var = |name| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
