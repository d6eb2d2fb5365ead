//! The optional rewrite of a search query by the caller's own model (`MEMORY_SEARCH__LLM_REWRITE`,
//! off by default): the model restates the question as the record that would answer it, and
//! that statement's vector joins the question's (as a hypothetical document would). Only with
//! a configured model endpoint (`MEMORY_LLM__…`) and the caller's stored model credential;
//! any failure, or no answer within [`REWRITE_TIMEOUT`], leaves the question as it is.

use std::time::Duration;

use llm::Message;

use crate::byok;
use crate::db::owner::Owner;
use crate::state::AppState;

/// How long a search waits for the rewrite before going on without it.
pub const REWRITE_TIMEOUT: Duration = Duration::from_secs(3);
/// At most this many characters of the model's answer are used.
const MAX_CHARS: usize = 1000;

const INSTRUCTION: &str = "You rewrite search questions for a memory of product decisions. \
Answer with one sentence stating the decision the question is looking for, as the team would \
have recorded it, using the words such a record would likely use. Answer with the sentence \
only.";

/// The caller's model's restatement of `query`, or `None` (rewrite off, no model or
/// credential, a failure, a timeout or an empty answer).
pub async fn rewrite(state: &AppState, owner: Owner<'_>, query: &str) -> Option<String> {
    if !state.llm_rewrite {
        return None;
    }
    let model = state.model.as_deref()?;
    let credential = match byok::take(&state.pool, &state.kek, owner, byok::MODEL_SERVICE).await {
        Ok(credential) => credential?,
        Err(err) => {
            tracing::warn!(error = %err, "query not rewritten: the caller's credential could not be taken");
            return None;
        }
    };
    let model = model.with_api_key(credential.into_api_key());
    let messages = [Message::system(INSTRUCTION), Message::user(query)];
    match tokio::time::timeout(REWRITE_TIMEOUT, model.complete(&messages)).await {
        Ok(Ok(answer)) => {
            let answer: String = answer.trim().chars().take(MAX_CHARS).collect();
            (!answer.is_empty()).then_some(answer)
        }
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "query not rewritten: the model failed");
            None
        }
        Err(_) => {
            tracing::warn!("query not rewritten: the model did not answer in time");
            None
        }
    }
}
