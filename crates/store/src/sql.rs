//! Raw SQL statements kept in `.sql` files next to the `db` module that runs them, read at build
//! time with `include_str!`, and listed so that one test can prepare every one of them against
//! the migrated schema (a renamed column fails the suite, not production).
//!
//! A service declares its files once, in `db/sql.rs`, with [`statements!`](crate::statements):
//!
//! ```ignore
//! store::statements! {
//!     scheduler {
//!         ADVANCE = "advance";
//!         // `{DELIVERY_COUNTS}` in the file is replaced by the constant fragment.
//!         SITES = "sites" with { DELIVERY_COUNTS = crate::db::sql::fragments::DELIVERY_COUNTS };
//!     }
//! }
//! ```
//!
//! which makes `sql::scheduler::ADVANCE` (the text of `db/sql/scheduler/advance.sql`, a
//! `&'static str`), `sql::scheduler::SITES` (a [`Template`]: `SITES.render()` is the statement)
//! and `sql::statements()`, every declared file with its statement text, for the test.

/// A statement whose file has `{NAME}` placeholders for constant fragments the code shares
/// between several statements; [`Template::render`] substitutes them.
#[derive(Debug, Clone, Copy)]
pub struct Template {
    /// The file's text, placeholders included.
    pub text: &'static str,
    /// Each placeholder's name (without braces) and the fragment that replaces it.
    pub fragments: &'static [(&'static str, &'static str)],
}

impl Template {
    /// The statement: the text with every placeholder replaced by its fragment.
    pub fn render(&self) -> String {
        self.fragments
            .iter()
            .fold(self.text.to_owned(), |text, (name, fragment)| {
                text.replace(&format!("{{{name}}}"), fragment)
            })
    }
}

/// The text a declared statement runs: a plain file's text, or a template rendered.
pub trait StatementText {
    fn statement_text(&self) -> String;
}

impl StatementText for &str {
    fn statement_text(&self) -> String {
        (*self).to_owned()
    }
}

impl StatementText for Template {
    fn statement_text(&self) -> String {
        self.render()
    }
}

/// Declares a service's statement files (`sql/<module>/<file>.sql` relative to the invoking
/// file): one module of constants per directory, and `statements()`, every file's path (relative
/// to `sql/`) with the statement it holds, for the test that prepares them all.
#[macro_export]
macro_rules! statements {
    (@one $module:ident $name:ident $file:literal) => {
        pub const $name: &str =
            include_str!(concat!("sql/", stringify!($module), "/", $file, ".sql"));
    };
    (@one $module:ident $name:ident $file:literal { $($fragment:ident = $value:expr),+ }) => {
        pub const $name: $crate::sql::Template = $crate::sql::Template {
            text: include_str!(concat!("sql/", stringify!($module), "/", $file, ".sql")),
            fragments: &[$((stringify!($fragment), $value)),+],
        };
    };
    ($($module:ident { $($name:ident = $file:literal $(with { $($fragment:ident = $value:expr),+ $(,)? })?;)* })*) => {
        $(
            pub mod $module {
                $($crate::statements!(@one $module $name $file $({ $($fragment = $value),+ })?);)*
            }
        )*

        /// Every statement file (its path under `sql/`) and the statement it holds, templates
        /// rendered.
        pub fn statements() -> Vec<(&'static str, String)> {
            use $crate::sql::StatementText as _;
            vec![$($((
                concat!(stringify!($module), "/", $file, ".sql"),
                $module::$name.statement_text(),
            ),)*)*]
        }
    };
}
