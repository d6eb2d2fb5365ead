//! The migrations are embedded by `embed_migrations!`; a new or edited migration must rebuild
//! the crate (cargo does not see files the macro reads).
//!
//! The binary's relative relocations are packed (`DT_RELR`, glibc 2.36 and binutils 2.38 or
//! later, as in the image's Debian bookworm): the loader reads every one of them at start, and
//! unpacked they were 2.6 MB of the file kept resident for the process's life.
//!
//! A release build on x86-64 Linux with Rust 1.90 or later, which links with its own LLD, also
//! folds identical functions and read-only data whose address nothing takes (`--icf=safe`,
//! going by the address-significance tables rustc writes): 0.8 MB less of the binary, most of
//! it code. The GNU linker of older toolchains has no such option (a build that sets its own
//! linker on this target must take LLD's options too).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/mail");
    let var = |key| std::env::var(key).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        if var("PROFILE") == "release"
            && var("TARGET") == "x86_64-unknown-linux-gnu"
            && links_with_lld(&var("RUSTC"))
        {
            println!("cargo:rustc-link-arg-bins=-Wl,--icf=safe");
        }
    }
}

/// Whether rustc links x86-64 Linux binaries with its own LLD by default (Rust 1.90 on).
fn links_with_lld(rustc: &str) -> bool {
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    let version = String::from_utf8_lossy(&out.stdout);
    let mut parts = version
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
