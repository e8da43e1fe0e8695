//! Link settings of the shipped binary, on x86_64 Linux with glibc (whose default linker is
//! rust-lld since Rust 1.90):
//!
//! - `-no-pie`: the image needs no relocations at start-up, so the dynamic loader neither
//!   reads nor writes the ~430 KB of `.data.rel.ro` before `main`. Measured: about 0.5 ms and
//!   100 page faults of every start, 0.2 MiB of peak RSS. The price: the executable's own
//!   image is not randomised; its libraries, heap, stacks and mappings still are.
//! - `--symbol-ordering-file=link/symbols.order` (release builds): the functions one prompt
//!   executes, in the order it first reaches them, are placed together at the start of
//!   `.text`. The kernel maps a file's pages in 64 KiB windows around each fault, so code
//!   spread over the whole binary costs the whole binary in RSS; kept together, it costs
//!   what it is. `benches/link-order.sh` writes the file from traced runs; a name it lists
//!   that the build no longer has is skipped, so a stale file costs memory, never a failed
//!   link. `AGENT_SDK_LINK_ORDER=0` leaves it out (e.g. for a linker other than lld).
//!
//! benches/README.md ("where the memory and time go") has the figures.
fn main() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=AGENT_SDK_LINK_ORDER");
    println!("cargo:rerun-if-env-changed=AGENT_SDK_LINK_MAP");
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    if var("CARGO_CFG_TARGET_ARCH") != "x86_64" || var("AGENT_SDK_LINK_ORDER") == "0" {
        return;
    }
    let dir = var("CARGO_MANIFEST_DIR");
    let order = format!("{dir}/link/symbols.order");
    println!("cargo:rerun-if-changed={order}");
    if var("PROFILE") == "release" && std::path::Path::new(&order).is_file() {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={order}");
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    // benches/link-order.sh: the link map that maps a traced address to its function.
    let map = var("AGENT_SDK_LINK_MAP");
    if !map.is_empty() {
        let name = var("CARGO_PKG_NAME");
        println!("cargo:rustc-link-arg-bins=-Wl,-Map={map}/{name}.map");
    }
}
