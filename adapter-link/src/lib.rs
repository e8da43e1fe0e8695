#![warn(missing_docs)]
//! Link settings of the front ends' binaries (`adapter-stream-json`, `adapter-rpc`,
//! `adapter-acp`), shared by their build scripts: `fn main() { adapter_link::configure() }`.
//!
//! On Linux with glibc:
//!
//! - `-no-pie`: the image needs no relocations at start-up, so the dynamic loader neither
//!   reads nor writes the ~430 KB of `.data.rel.ro` before `main`. Measured: about 0.5 ms and
//!   100 page faults of every start. The price: the executable's own image is not
//!   randomised; its libraries, heap, stacks and mappings still are.
//! - On x86_64 (where rust-lld is the default linker since Rust 1.90), in release builds,
//!   `--symbol-ordering-file=link/symbols.order` of the package: the functions one prompt
//!   executes, in the order it first reaches them, are placed together at the start of
//!   `.text`. The kernel maps a file's pages in 64 KiB windows around each fault, so code
//!   spread over the whole binary costs the whole binary in memory; kept together, it costs
//!   what it is (peak RSS of one prompt: 9.6 → 5.6 MiB for exec, 11.5 → 6.4 MiB for acp).
//!   `benches/link-order.sh` writes the files from traced runs. A name the file lists that
//!   the build no longer has is skipped, so a stale file costs memory, never a failed link;
//!   rerun the script after a change of dependencies or toolchain, which renames symbols.
//!   `AGENT_SDK_LINK_ORDER=0` leaves the file out (e.g. for a linker other than lld).
//! - `AGENT_SDK_LINK_MAP=DIR` writes the link map of each binary to `DIR/<package>.map`
//!   (what `benches/link-order.sh` maps traced addresses with).
//!
//! benches/README.md ("Budgets") has the figures.

use std::path::Path;

/// Emits the `cargo:` lines of the calling package's build script (see the crate docs).
pub fn configure() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    println!("cargo:rerun-if-env-changed=AGENT_SDK_LINK_ORDER");
    println!("cargo:rerun-if-env-changed=AGENT_SDK_LINK_MAP");
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    if var("CARGO_CFG_TARGET_ARCH") != "x86_64" || var("AGENT_SDK_LINK_ORDER") == "0" {
        return;
    }
    let order = format!("{}/link/symbols.order", var("CARGO_MANIFEST_DIR"));
    // Watched even while missing, so a file written later is picked up.
    println!("cargo:rerun-if-changed={order}");
    if var("PROFILE") == "release" && Path::new(&order).is_file() {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={order}");
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    let map = var("AGENT_SDK_LINK_MAP");
    if !map.is_empty() {
        let name = var("CARGO_PKG_NAME");
        println!("cargo:rustc-link-arg-bins=-Wl,-Map={map}/{name}.map");
    }
}
