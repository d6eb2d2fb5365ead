//! Embeddings from the configured provider, for the routes that store or search them, through
//! the caller's own credential when one is stored (see [`crate::byok`]).

use embed::{EmbedError, Passage};

use crate::byok;
use crate::db::decisions;
use crate::db::embeddings::PreviousQuery;
use crate::db::owner::Owner;
use crate::domain::reembedding::Translation;
use crate::domain::search;
use crate::query_rewrite;
use crate::state::AppState;

/// The embedding of a text to store, for `owner` (with the model's passage instruction), or
/// `None` when no provider answered (what is written is stored all the same: keyword search
/// finds it now, and the background pass embeds it later).
pub async fn embed_passage(state: &AppState, owner: Owner<'_>, text: &str) -> Option<Vec<f32>> {
    embed_as(state, owner, Kind::Passage(Passage::plain(text))).await
}

/// [`embed_passage`] of a decision: its own words lead (see [`decisions::embedding_passage`]).
pub async fn embed_decision(
    state: &AppState,
    owner: Owner<'_>,
    decision: &str,
    reasoning: Option<&str>,
) -> Option<Vec<f32>> {
    let passage = decisions::embedding_passage(decision, reasoning);
    embed_as(state, owner, Kind::Passage(passage)).await
}

/// The embedding of a search query, for `owner` (with the model's query instruction), or
/// `None` when no provider answered (the search is then keyword only). With the LLM rewrite on
/// ([`query_rewrite`]), the rewrite's vector (as a record's) is added to the query's.
pub async fn embed_query(state: &AppState, owner: Owner<'_>, text: &str) -> Option<Vec<f32>> {
    let (query, rewritten) = tokio::join!(
        embed_as(state, owner, Kind::Query(text)),
        query_rewrite::rewrite(state, owner, text)
    );
    let mut query = query?;
    if let Some(rewritten) = rewritten
        && let Some(record) = embed_passage(state, owner, &rewritten).await
        && record.len() == query.len()
    {
        embed::passage::mix(&mut query, &record, 0.5);
    }
    Some(query)
}

/// A search query's vector by the previous model, while rows are re-embedded after a model
/// upgrade.
pub struct PreviousVector {
    /// A pgvector literal.
    pub literal: String,
    /// The map of its cosines onto the configured model's scale.
    pub translation: Translation,
}

impl PreviousVector {
    /// What the search queries take.
    pub fn query(&self) -> PreviousQuery<'_> {
        PreviousQuery {
            vector: &self.literal,
            translation: self.translation,
        }
    }
}

/// While rows are re-embedded after a model upgrade: the query's vector by the previous model
/// (with its query instruction, without the LLM rewrite); `None` otherwise, or when it did not
/// answer (rows not re-embedded yet are then not found by meaning).
pub async fn embed_previous_query(
    state: &AppState,
    owner: Owner<'_>,
    text: &str,
) -> Option<PreviousVector> {
    let previous = state.reembedding.previous()?;
    // Owners never share cached query vectors, as with the configured model.
    let asker = format!("{}/{}", owner.user_id, owner.environment);
    match previous.embedder.embed_query_as(&asker, text).await {
        Ok(vector) => Some(PreviousVector {
            literal: search::vector_literal(&vector),
            translation: previous.translation,
        }),
        Err(err) => {
            tracing::warn!(error = %err, "the previous model did not embed the query");
            None
        }
    }
}

enum Kind<'a> {
    Passage(Passage),
    Query(&'a str),
}

async fn embed_as(state: &AppState, owner: Owner<'_>, kind: Kind<'_>) -> Option<Vec<f32>> {
    let embedder = match byok::embedder_for(&state.pool, &state.kek, &state.embedder, owner).await {
        Ok(embedder) => embedder,
        Err(err) => {
            tracing::warn!(error = %err, "not embedded now: the caller's credential could not be taken");
            return None;
        }
    };
    let answer = match kind {
        Kind::Passage(passage) => {
            let lead_weight = search::fusion().lead_weight;
            embed::passage::embed_passages(embedder.as_ref(), &[passage], lead_weight).await
        }
        Kind::Query(text) => {
            // Owners never share cached query vectors (see `embed::with_query_cache`).
            let asker = format!("{}/{}", owner.user_id, owner.environment);
            embedder.embed_query_as(&asker, text).await.map(|v| vec![v])
        }
    };
    match answer {
        Ok(mut vectors) if vectors.len() == 1 => Some(vectors.remove(0)),
        Ok(_) | Err(EmbedError::Disabled) => None,
        Err(err) => {
            tracing::warn!(error = %err, "not embedded now; the background pass will");
            None
        }
    }
}
