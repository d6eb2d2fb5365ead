//! The raw statements of this service's `db` modules, each in `sql/<module>/<name>.sql` and read
//! at build time; `statements()` lists them all for the test that prepares each one against the
//! migrated schema (`tests/api/sql.rs`). A new file is declared here (that test fails on a file
//! not declared). See docs/CONTRIBUTING.md, "Add a raw SQL statement".

store::statements! {
    bridge {
        MEMORY = "memory";
    }
    competitor_watches {
        CLAIM_DUE = "claim_due";
    }
    consolidation {
        SIMILAR_PAIRS = "similar_pairs";
    }
    datasets {
        WRITE_ROWS = "write_rows";
    }
    events {
        SUMMARY = "summary";
    }
    inbox_drafts {
        UPSERT = "upsert";
    }
    search {
        PRODUCT_STATES = "product_states";
    }
    signals {
        RECORD_PROJECT_SIGNAL = "record_project_signal";
        UPSERT = "upsert";
    }
}
