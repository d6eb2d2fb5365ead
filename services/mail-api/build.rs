//! The migrations are embedded by `embed_migrations!`; a new or edited migration must rebuild
//! the crate (cargo does not see files the macro reads).

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/mail");
}
