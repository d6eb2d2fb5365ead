//! The migrations are embedded by `embed_migrations!`; a new or edited migration must rebuild
//! the crate (cargo does not see files the macro reads).
//!
//! The binary's relative relocations are packed (`DT_RELR`, glibc 2.36 and binutils 2.38 or
//! later, as in the image's Debian bookworm): the loader reads every one of them at start, and
//! unpacked they were 2.6 MB of the file kept resident for the process's life.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/mail");
    let target = |key| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
