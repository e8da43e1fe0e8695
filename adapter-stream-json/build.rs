//! How the binary is linked on Linux: see the `adapter-link` crate.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    adapter_link::configure();
}
