//! No code: a dependency of each adapter that makes `cargo build -p <adapter>` alone enable
//! the same dependency features as the three adapters built together (see `Cargo.toml`).
