//! Links the binary as a position-dependent executable (`-no-pie`) on Linux with glibc: its
//! image then needs no relocations at start-up, so the dynamic loader neither reads nor
//! writes the ~430 KB of `.data.rel.ro` before `main` (those pages stay clean, shared with
//! the page cache, and are mapped only when touched). Measured: about 0.5 ms and 100 page
//! faults of every start, but only 0.2 MiB of peak RSS, since a run maps most of those pages
//! from the file anyway (benches/README.md, "where the memory and time go"). The price: the
//! executable's own image is not randomised; its libraries, heap, stacks and mappings still
//! are.
fn main() {
    let var = |name| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
