//! Per-project delivery settings: the provider configuration and the provider's webhook
//! secret, both stored sealed (AES-256-GCM under the key-encryption key, bound to the project
//! and to what the value is). Plaintext never reaches the database or the logs.

use delivery::ProviderConfig;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use secrets::Kek;
use uuid::Uuid;

use super::schema::project_delivery;

fn context(project_id: Uuid, what: &str) -> Vec<u8> {
    format!("mail/project/{project_id}/{what}").into_bytes()
}

pub fn seal_provider(kek: &Kek, project_id: Uuid, config: &ProviderConfig) -> Vec<u8> {
    let plain = serde_json::to_vec(config).expect("a provider config serializes");
    kek.seal(&plain, &context(project_id, "provider"))
}

pub fn open_provider(kek: &Kek, project_id: Uuid, sealed: &[u8]) -> anyhow::Result<ProviderConfig> {
    let plain = kek
        .open(sealed, &context(project_id, "provider"))
        .map_err(|e| anyhow::anyhow!("provider config of project {project_id}: {e}"))?;
    serde_json::from_slice(&plain)
        .map_err(|_| anyhow::anyhow!("provider config of project {project_id} does not parse"))
}

pub fn seal_webhook_secret(kek: &Kek, project_id: Uuid, secret: &str) -> Vec<u8> {
    kek.seal(secret.as_bytes(), &context(project_id, "webhook-secret"))
}

pub fn open_webhook_secret(kek: &Kek, project_id: Uuid, sealed: &[u8]) -> anyhow::Result<String> {
    let plain = kek
        .open(sealed, &context(project_id, "webhook-secret"))
        .map_err(|e| anyhow::anyhow!("webhook secret of project {project_id}: {e}"))?;
    String::from_utf8(plain).map_err(|_| anyhow::anyhow!("webhook secret is not UTF-8"))
}

/// The sealed provider configuration and webhook secret of a project.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> QueryResult<(Option<Vec<u8>>, Option<Vec<u8>>)> {
    Ok(project_delivery::table
        .find(project_id)
        .select((
            project_delivery::provider_config,
            project_delivery::webhook_secret,
        ))
        .first(conn)
        .await
        .optional()?
        .unwrap_or((None, None)))
}

/// Stores (or, with `None`, clears) the sealed provider configuration.
pub async fn set_provider(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    sealed: Option<&[u8]>,
) -> QueryResult<()> {
    diesel::insert_into(project_delivery::table)
        .values((
            project_delivery::project_id.eq(project_id),
            project_delivery::provider_config.eq(sealed),
        ))
        .on_conflict(project_delivery::project_id)
        .do_update()
        .set((
            project_delivery::provider_config.eq(sealed),
            project_delivery::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn set_webhook_secret(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    sealed: &[u8],
) -> QueryResult<()> {
    diesel::insert_into(project_delivery::table)
        .values((
            project_delivery::project_id.eq(project_id),
            project_delivery::webhook_secret.eq(sealed),
        ))
        .on_conflict(project_delivery::project_id)
        .do_update()
        .set((
            project_delivery::webhook_secret.eq(sealed),
            project_delivery::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await?;
    Ok(())
}
