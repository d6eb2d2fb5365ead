//! The caller's own credentials (BYOK) where the service calls a model for them.
//!
//! Every model-backed route calls through the caller's credential when one is stored:
//! [`crate::embeddings`] for embeddings (falling back to the deployment's), and
//! [`require_model_credential`] for routes that cannot run without one (422 otherwise).
//! Taking a credential for a call sets its `last_used_at`.

use std::sync::Arc;

use diesel_async::AsyncPgConnection;
use embed::Embedder;
use http_kit::ApiError;
use secrets::Kek;
use store::Pool;
use uuid::Uuid;

use crate::db::byok;
use crate::db::owner::Owner;
use crate::domain;
use crate::state::AppState;

/// The BYOK service of the OpenAI-compatible endpoint model calls go to.
pub const MODEL_SERVICE: &str = embed::OPENAI_SERVICE;

/// A stored credential, opened for one call. Its `Debug` hides the key.
pub struct ModelCredential {
    pub id: Uuid,
    api_key: String,
}

impl ModelCredential {
    /// The key, to send as `Authorization: Bearer <key>`; never log it.
    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    pub fn into_api_key(self) -> String {
        self.api_key
    }
}

impl std::fmt::Debug for ModelCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ModelCredential {{ id: {}, api_key: .. }}", self.id)
    }
}

/// Why a stored credential could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("{0}")]
    Store(#[from] store::StoreError),
    /// Sealed under another key-encryption key, or damaged.
    #[error("the stored credential {0} cannot be opened with this key-encryption key")]
    Unopenable(Uuid),
}

impl From<diesel::result::Error> for CredentialError {
    fn from(err: diesel::result::Error) -> Self {
        Self::Store(err.into())
    }
}

impl From<CredentialError> for ApiError {
    fn from(err: CredentialError) -> Self {
        ApiError::internal(err)
    }
}

/// The owner's credential for `service`, opened and taken for a call now (its
/// `last_used_at` set); `None` when the owner stored none.
pub async fn take(
    pool: &Pool,
    kek: &Kek,
    owner: Owner<'_>,
    service: &str,
) -> Result<Option<ModelCredential>, CredentialError> {
    let mut conn = store::conn(pool).await?;
    take_on(&mut conn, kek, owner, service).await
}

/// [`take`], on a connection the caller holds.
pub async fn take_on(
    conn: &mut AsyncPgConnection,
    kek: &Kek,
    owner: Owner<'_>,
    service: &str,
) -> Result<Option<ModelCredential>, CredentialError> {
    let Some((id, sealed)) = byok::take_for_use(conn, owner, service).await? else {
        return Ok(None);
    };
    let api_key =
        domain::byok::open(kek, id, &sealed).map_err(|_| CredentialError::Unopenable(id))?;
    Ok(Some(ModelCredential { id, api_key }))
}

/// The caller's model credential (service `openai`), taken for a call now; 422
/// `VALIDATION_ERROR` saying none is configured when the caller stored none. For routes that
/// call a model and have no deployment credential to fall back on.
pub async fn require_model_credential(
    state: &AppState,
    owner: Owner<'_>,
) -> Result<ModelCredential, ApiError> {
    take(&state.pool, &state.kek, owner, MODEL_SERVICE)
        .await?
        .ok_or_else(no_model_credential)
}

/// The 422 of a model-backed route called by an owner without a model credential.
pub fn no_model_credential() -> ApiError {
    ApiError::unprocessable(format!(
        "no model credential is configured: store your {MODEL_SERVICE} key with POST /byok \
         (service \"{MODEL_SERVICE}\")"
    ))
}

/// `embedder` calling with the owner's own credential for its service when one is stored
/// (taken for the call), else `embedder` itself (the deployment's credential). Providers that
/// take no credential are returned as they are, without a lookup.
pub async fn embedder_for(
    pool: &Pool,
    kek: &Kek,
    embedder: &Arc<dyn Embedder>,
    owner: Owner<'_>,
) -> Result<Arc<dyn Embedder>, CredentialError> {
    let Some(service) = embedder.credential_service() else {
        return Ok(Arc::clone(embedder));
    };
    let own = take(pool, kek, owner, service)
        .await?
        .and_then(|credential| embedder.with_credential(credential.into_api_key()));
    Ok(own.unwrap_or_else(|| Arc::clone(embedder)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_credential_the_answer_is_a_422_that_says_so() {
        let err = no_model_credential();
        assert_eq!(err.kind.status().as_u16(), 422);
        let message = err.to_string();
        assert!(
            message.contains("no model credential is configured"),
            "{message}"
        );
        assert!(message.contains("POST /byok"), "{message}");
    }

    #[test]
    fn an_opened_credential_does_not_print_its_key() {
        let credential = ModelCredential {
            id: Uuid::nil(),
            api_key: "sk-very-secret".into(),
        };
        assert!(!format!("{credential:?}").contains("sk-very-secret"));
    }
}
