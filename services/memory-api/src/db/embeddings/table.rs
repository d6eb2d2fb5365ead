//! The tables whose rows carry an embedding, and the SQL the embedding queries share.

use diesel::QueryableByName;
use diesel::pg::Pg;

use crate::db::decisions::Decision;
use crate::db::free_form::Entry;

/// A table whose rows carry an `embedding`, the previous model's `embedding_previous` while
/// rows are re-embedded, and the retry columns (`embed_error`, `embed_attempts`,
/// `embed_retry_at`).
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub shape: Shape,
    /// The table's HNSW index over its vectors at half precision ([`half_precision`]), for
    /// semantic search; none where every search is an exact scan.
    pub vector_index: Option<&'static str>,
}

/// `vector` (an expression of type `vector`) at half precision (`halfvec`, 2 bytes a
/// dimension): what the tables' HNSW indexes hold, half the size of the full vectors and
/// cheaper to insert into. A search orders by the same expression, so the planner can use the
/// index; the ranking differs from full precision only among near ties.
pub fn half_precision(vector: &str, dimensions: usize) -> String {
    format!("({vector})::halfvec({dimensions})")
}

/// Where a row's owner is and what a row is embedded from.
#[derive(Debug)]
pub enum Shape {
    /// The row has `user_id` and `environment`; `text` is the SQL expression (over its columns)
    /// it is embedded from, `lead` the one of its lead, if any (see [`embed::passage`]).
    Owned {
        text: &'static str,
        lead: Option<&'static str>,
    },
    /// A product state version: its owner is its product's, only a product's current version
    /// is embedded, and its text is rendered by [`crate::domain::state_text::render`].
    ProductState,
}

pub const DECISIONS: Table = Table {
    name: "decisions",
    // As `db::decisions::embedding_passage` makes it.
    shape: Shape::Owned {
        text: "decision || coalesce(E'\\n' || reasoning, '')",
        lead: Some("decision"),
    },
    vector_index: Some("decisions_embedding_idx"),
};

pub const FREE_FORM: Table = Table {
    name: "free_form_entries",
    shape: Shape::Owned {
        text: "content",
        lead: None,
    },
    vector_index: Some("free_form_entries_embedding_idx"),
};

pub const PRODUCT_STATES: Table = Table {
    name: "product_states",
    shape: Shape::ProductState,
    vector_index: None,
};

/// The SET list of a stored embedding (`$4`, a pgvector literal): no failure left recorded,
/// and no previous model's vector kept (search uses the new one from now on).
pub(super) const SUCCESS_SET: &str = "embedding = $4::vector, embedding_previous = NULL, \
     embed_error = NULL, embed_retry_at = NULL";

/// The SET list of stored embeddings in [`Table::update_many`] (`v.value`, a pgvector literal),
/// as [`SUCCESS_SET`].
pub(super) const SUCCESS_SET_MANY: &str = "embedding = v.value::vector, embedding_previous = NULL, \
     embed_error = NULL, embed_retry_at = NULL";

/// The SET list of a failure (`$4`, the error): one more attempt, and the next try after
/// 1 minute × 2^(attempts before this one), at most a day later.
pub(super) const FAILURE_SET: &str = "embed_error = $4, embed_attempts = embed_attempts + 1, \
     embed_retry_at = now() + least(interval '1 day', \
         interval '1 minute' * power(2, least(embed_attempts, 20)))";

/// The condition a row waiting for its embedding meets: none yet, and no retry time to come.
pub(super) const DUE: &str =
    "embedding IS NULL AND (embed_retry_at IS NULL OR embed_retry_at <= now())";

impl Table {
    /// The statement dropping the table's vector index, if it has one.
    pub(super) fn drop_vector_index(&self) -> Option<String> {
        self.vector_index
            .map(|index| format!("DROP INDEX IF EXISTS {index}"))
    }

    /// The statement building the table's vector index for vectors of `dimensions` (the
    /// dimension is part of the index's expression), if it has one.
    pub(super) fn create_vector_index(&self, dimensions: usize) -> Option<String> {
        let indexed = half_precision("embedding", dimensions);
        self.vector_index.map(|index| {
            format!(
                "CREATE INDEX {index} ON {} USING hnsw (({indexed}) halfvec_cosine_ops)",
                self.name
            )
        })
    }

    /// An UPDATE of one row of one owner (`$1` user, `$2` environment, `$3` id) with `set`.
    /// Ids are unique per owner only (an imported MIF keeps its ids), so the owner is part of
    /// the key.
    pub(super) fn update_one(&self, set: &str) -> String {
        let name = self.name;
        match self.shape {
            Shape::Owned { .. } => format!(
                "UPDATE {name} SET {set} WHERE user_id = $1 AND environment = $2 AND id = $3"
            ),
            Shape::ProductState => format!(
                "UPDATE {name} s SET {set} FROM products p \
                 WHERE p.user_id = $1 AND p.environment = $2 AND s.product_id = p.id AND s.id = $3"
            ),
        }
    }

    /// One UPDATE of many rows, each of its own owner, with `set`: row `v` of
    /// `unnest($1 users, $2 environments, $3 ids, $4 values)` sets the row `v.id` of the owner
    /// `(v.user_id, v.environment)`, its value being `v.value`.
    pub(super) fn update_many(&self, set: &str) -> String {
        let name = self.name;
        let rows = "unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[]) \
                    AS v(user_id, environment, id, value)";
        match self.shape {
            Shape::Owned { .. } => format!(
                "UPDATE {name} t SET {set} FROM {rows} \
                 WHERE t.user_id = v.user_id AND t.environment = v.environment AND t.id = v.id"
            ),
            Shape::ProductState => format!(
                "UPDATE {name} s SET {set} FROM {rows} JOIN products p \
                     ON p.user_id = v.user_id AND p.environment = v.environment \
                 WHERE s.product_id = p.id AND s.id = v.id"
            ),
        }
    }
}

/// Rows searched by keyword and by embedding, read as `Self`. Their table is
/// [`Shape::Owned`] and has a `search` tsvector.
pub trait Searchable: QueryableByName<Pg> + Send + 'static {
    const TABLE: &'static Table;
    /// The columns `Self` is read from.
    const COLUMNS: &'static str;
    /// When a row is on the product `$4` (rows of a table without products are on none).
    const ON_PRODUCT: &'static str;
    /// The table of the rows' keyword postings with their scores (one row per row and lexeme
    /// with `rank` = `ts_rank_cd(search, term)`), if the table has one: a one-word keyword
    /// search reads its best rows from it in order.
    const TERMS: Option<&'static str>;
}

impl Searchable for Decision {
    const TABLE: &'static Table = &DECISIONS;
    const COLUMNS: &'static str =
        "id, decision, reasoning, tags, product_name, affects_products, decided_at";
    const ON_PRODUCT: &'static str = "product_name = $4 OR $4 = ANY (affects_products)";
    const TERMS: Option<&'static str> = Some("decision_terms");
}

impl Searchable for Entry {
    const TABLE: &'static Table = &FREE_FORM;
    const COLUMNS: &'static str = "id, content, tags, source, metadata, created_at";
    const ON_PRODUCT: &'static str = "false";
    const TERMS: Option<&'static str> = None;
}
