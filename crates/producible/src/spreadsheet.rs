//! The rule every CSV the services write follows for cells a spreadsheet would run (the mail
//! export, producible CSV files): one function, so the two cannot drift apart.

use std::borrow::Cow;

/// A spreadsheet opening the file would evaluate a cell that starts with `=`, `+`, `-`, `@`, a
/// tab or a carriage return as a formula (`=HYPERLINK(…)` sends data away): such a cell gets a
/// leading `'`, which spreadsheets show as text (OWASP, CSV injection).
pub fn neutralise_formula(cell: &mut String) {
    if starts_a_formula(cell) {
        cell.insert(0, '\'');
    }
}

/// [`neutralise_formula`] of a borrowed cell (borrowed again when nothing changes).
pub fn neutralised(cell: &str) -> Cow<'_, str> {
    if starts_a_formula(cell) {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}

fn starts_a_formula(cell: &str) -> bool {
    cell.starts_with(['=', '+', '-', '@', '\t', '\r'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_that_would_start_a_formula_gets_a_quote() {
        for (cell, want) in [
            ("=1+1", "'=1+1"),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("a=1", "a=1"),
            ("'=x", "'=x"),
            ("", ""),
        ] {
            let mut owned = cell.to_owned();
            neutralise_formula(&mut owned);
            assert_eq!(owned, want);
            assert_eq!(neutralised(cell), want);
        }
    }
}
