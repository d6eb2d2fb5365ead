//! Keyword and semantic search over the rows of a [`Searchable`] table a [`View`] sees.
//! `product` keeps the rows on (or affecting) that product.

use diesel::QueryResult;
use diesel::sql_types::{BigInt, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use store::Prepared;

use super::table::{Searchable, half_precision};
use crate::db::view::{View, visible};
use crate::domain::reembedding::Translation;
use crate::domain::search::vector_literal;

/// Keyword mode: PostgreSQL full-text search (`websearch_to_tsquery`), best `ts_rank_cd`
/// first, newest first among equals. A query of one lexeme reads the table's postings
/// ([`Searchable::TERMS`]) in that order, so only its best `limit` rows are visited; any
/// other query ranks every row it matches. Both give the same rows in the same order.
pub async fn search_keyword<R: Searchable>(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    query: &str,
    product: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<R>> {
    // One text per table: kept prepared.
    Prepared(
        diesel::sql_query(keyword_sql::<R>())
            .bind::<SqlUuid, _>(view.owner.user_id)
            .bind::<Text, _>(view.owner.environment)
            .bind::<Text, _>(query)
            .bind::<Nullable<Text>, _>(product)
            .bind::<BigInt, _>(limit)
            .bind::<Nullable<SqlUuid>, _>(view.workspace),
    )
    .load(conn)
    .await
}

/// The statement of [`search_keyword`]: `$1` user, `$2` environment, `$3` query, `$4`
/// product, `$5` limit, `$6` workspace.
fn keyword_sql<R: Searchable>() -> String {
    let (columns, table, on_product) = (R::COLUMNS, R::TABLE.name, R::ON_PRODUCT);
    let visible = visible("workspace_id", 6);
    let filters = format!("($4::text IS NULL OR {on_product}) AND {visible}");
    let matches = format!("user_id = $1 AND environment = $2 AND search @@ q AND {filters}");
    let Some(terms) = R::TERMS else {
        return format!(
            "SELECT {columns} FROM {table}, websearch_to_tsquery('english', $3) AS q \
             WHERE {matches} ORDER BY ts_rank_cd(search, q) DESC, id DESC LIMIT $5"
        );
    };
    // Under a generic plan each branch's `numnode` test is a filter checked once per
    // execution, before its scan: only one branch runs.
    format!(
        "SELECT {columns} FROM websearch_to_tsquery('english', $3) AS q, LATERAL ( \
           (SELECT {columns}, t.rank AS search_rank \
            FROM {terms} t JOIN {table} USING (user_id, environment, id) \
            WHERE numnode(q) = 1 AND t.user_id = $1 AND t.environment = $2 AND t.term = q \
              AND {filters} \
            ORDER BY t.rank DESC, t.id DESC LIMIT $5) \
           UNION ALL \
           (SELECT {columns}, ts_rank_cd(search, q) AS search_rank FROM {table} \
            WHERE numnode(q) <> 1 AND {matches} \
            ORDER BY search_rank DESC, id DESC LIMIT $5)) r \
         ORDER BY r.search_rank DESC, r.id DESC"
    )
}

/// The query vector bound as text at `$param`, at half precision for `dimensions` (as
/// [`half_precision`] makes the indexed side), in a sub-select as [`query_vector`].
fn query_half_vector(param: usize, dimensions: usize) -> String {
    format!("(SELECT ${param}::halfvec({dimensions}))")
}

/// The query vector bound as text at `$param`, as a pgvector value. In a sub-select it is an
/// init plan, parsed once per execution. A bare `$n::vector` is parsed once per row under a
/// generic plan (seconds over 10,000 rows), so PostgreSQL never kept one and folded the cast
/// into a custom plan at every execution instead (5.4 ms of planning for the fused query).
pub fn query_vector(param: usize) -> String {
    format!("(SELECT ${param}::vector)")
}

/// The previous model's query vector (a pgvector literal), while rows are re-embedded after a
/// model upgrade: rows with only `embedding_previous` are scored with it, their cosine
/// translated onto the new model's scale.
#[derive(Debug, Clone, Copy)]
pub struct PreviousQuery<'a> {
    pub vector: &'a str,
    pub translation: Translation,
}

/// Semantic mode: nearest by cosine distance to `vector`, among the embedded rows the view
/// sees, both sides at half precision as the tables' vector indexes hold them (the cosine the
/// two models' rows are merged by is the full one). When the planner picks the HNSW index (an
/// owner with many rows), its scan goes on past the first candidates until `limit` of the
/// owner's rows are found (pgvector's iterative scan), so other owners' rows never crowd them
/// out. With `previous`, the rows not re-embedded yet are ranked too, by their previous
/// vector's translated cosine to the previous model's query vector, in one ranking with the
/// others.
pub async fn search_semantic<R: Searchable>(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    vector: &[f32],
    previous: Option<PreviousQuery<'_>>,
    product: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<R>> {
    let (columns, table, on_product) = (R::COLUMNS, R::TABLE.name, R::ON_PRODUCT);
    let visible = visible("workspace_id", 6);
    let owned = format!(
        "user_id = $1 AND environment = $2 AND ($4::text IS NULL OR {on_product}) AND {visible}"
    );
    let (new, previous_vector) = (query_vector(3), query_vector(7));
    let nearest = format!(
        "{} <=> {}",
        half_precision("embedding", vector.len()),
        query_half_vector(3, vector.len())
    );
    let sql = match previous {
        None => format!(
            "SELECT {columns} FROM {table} \
             WHERE {owned} AND embedding IS NOT NULL \
             ORDER BY {nearest} \
             LIMIT $5"
        ),
        // Each side is ranked by its own distance (the new side through the index), then the
        // two by cosine on the new model's scale.
        Some(previous) => {
            let translated = previous
                .translation
                .sql(&format!("1 - (embedding_previous <=> {previous_vector})"));
            format!(
                "SELECT {columns} FROM ( \
                     (SELECT {columns}, 1 - (embedding <=> {new}) AS cosine FROM {table} \
                      WHERE {owned} AND embedding IS NOT NULL \
                      ORDER BY {nearest} LIMIT $5) \
                     UNION ALL \
                     (SELECT {columns}, {translated} AS cosine FROM {table} \
                      WHERE {owned} AND embedding IS NULL AND embedding_previous IS NOT NULL \
                      ORDER BY embedding_previous <=> {previous_vector} LIMIT $5) \
                 ) both_models \
                 ORDER BY cosine DESC, id DESC \
                 LIMIT $5"
            )
        }
    };
    conn.transaction(async |conn| {
        diesel::sql_query("SET LOCAL hnsw.iterative_scan = strict_order")
            .execute(conn)
            .await?;
        // One text per table (two while rows are re-embedded): kept prepared.
        Prepared(
            diesel::sql_query(sql)
                .bind::<SqlUuid, _>(view.owner.user_id)
                .bind::<Text, _>(view.owner.environment)
                .bind::<Text, _>(vector_literal(vector))
                .bind::<Nullable<Text>, _>(product)
                .bind::<BigInt, _>(limit)
                .bind::<Nullable<SqlUuid>, _>(view.workspace)
                .bind::<Nullable<Text>, _>(previous.map(|p| p.vector)),
        )
        .load(conn)
        .await
    })
    .await
}
