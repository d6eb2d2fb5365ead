//! Queries on the OAuth tables. Secrets arrive here hashed; nothing in them is plaintext.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use crate::schema::{
    oauth_accounts, oauth_clients, oauth_codes, oauth_grants, oauth_sessions, oauth_tokens,
};

pub const ACCESS: &str = "access";
pub const REFRESH: &str = "refresh";

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = oauth_accounts)]
pub struct Account {
    pub id: Uuid,
    pub email: String,
    pub password_hash: String,
    pub owner_id: Uuid,
    pub disabled_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = oauth_clients)]
pub struct Client {
    pub id: Uuid,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub secret_hash: Option<Vec<u8>>,
    pub token_endpoint_auth_method: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = oauth_grants)]
pub struct Grant {
    pub id: Uuid,
    pub client_id: Uuid,
    pub account_id: Uuid,
    pub owner_id: Uuid,
    pub scopes: Vec<String>,
    pub resource: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = oauth_codes)]
pub struct Code {
    pub code_hash: Vec<u8>,
    pub grant_id: Uuid,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = oauth_tokens)]
pub struct Token {
    pub id: Uuid,
    pub grant_id: Uuid,
    pub kind: String,
    pub key_hash: Vec<u8>,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// Emails are compared in lower case.
pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

pub async fn create_account(
    conn: &mut AsyncPgConnection,
    email: &str,
    password: &str,
    owner_id: Uuid,
) -> QueryResult<Account> {
    diesel::insert_into(oauth_accounts::table)
        .values((
            oauth_accounts::id.eq(Uuid::now_v7()),
            oauth_accounts::email.eq(normalize_email(email)),
            oauth_accounts::password_hash.eq(crate::password::hash(password)),
            oauth_accounts::owner_id.eq(owner_id),
        ))
        .returning(Account::as_returning())
        .get_result(conn)
        .await
}

/// Disables (or enables again) an account; a disabled account's sessions and grants end.
pub async fn set_account_disabled(
    conn: &mut AsyncPgConnection,
    email: &str,
    disabled: bool,
) -> QueryResult<Option<Account>> {
    let at = disabled.then(Utc::now);
    let account: Option<Account> = diesel::update(oauth_accounts::table)
        .filter(oauth_accounts::email.eq(normalize_email(email)))
        .set(oauth_accounts::disabled_at.eq(at))
        .returning(Account::as_returning())
        .get_result(conn)
        .await
        .optional()?;
    if let Some(account) = account.as_ref().filter(|_| disabled) {
        diesel::delete(oauth_sessions::table.filter(oauth_sessions::account_id.eq(account.id)))
            .execute(conn)
            .await?;
        let grants: Vec<Uuid> = oauth_grants::table
            .filter(oauth_grants::account_id.eq(account.id))
            .filter(oauth_grants::revoked_at.is_null())
            .select(oauth_grants::id)
            .load(conn)
            .await?;
        for grant in grants {
            revoke_grant(conn, grant).await?;
        }
    }
    Ok(account)
}

pub async fn find_account_by_email(
    conn: &mut AsyncPgConnection,
    email: &str,
) -> QueryResult<Option<Account>> {
    oauth_accounts::table
        .filter(oauth_accounts::email.eq(normalize_email(email)))
        .select(Account::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn create_session(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    token_hash: &[u8; 32],
    expires_at: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::insert_into(oauth_sessions::table)
        .values((
            oauth_sessions::token_hash.eq(&token_hash[..]),
            oauth_sessions::account_id.eq(account_id),
            oauth_sessions::expires_at.eq(expires_at),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// The enabled account of a live session.
pub async fn session_account(
    conn: &mut AsyncPgConnection,
    token_hash: &[u8; 32],
) -> QueryResult<Option<Account>> {
    oauth_sessions::table
        .inner_join(oauth_accounts::table)
        .filter(oauth_sessions::token_hash.eq(&token_hash[..]))
        .filter(oauth_sessions::expires_at.gt(Utc::now()))
        .filter(oauth_accounts::disabled_at.is_null())
        .select(Account::as_select())
        .first(conn)
        .await
        .optional()
}

pub struct NewClient<'a> {
    pub client_name: &'a str,
    pub redirect_uris: &'a [String],
    pub secret_hash: Option<[u8; 32]>,
    pub token_endpoint_auth_method: &'a str,
}

pub async fn register_client(
    conn: &mut AsyncPgConnection,
    new: NewClient<'_>,
) -> QueryResult<Client> {
    diesel::insert_into(oauth_clients::table)
        .values((
            oauth_clients::id.eq(Uuid::now_v7()),
            oauth_clients::client_name.eq(new.client_name),
            oauth_clients::redirect_uris.eq(new.redirect_uris),
            oauth_clients::secret_hash.eq(new.secret_hash.as_ref().map(|h| &h[..])),
            oauth_clients::token_endpoint_auth_method.eq(new.token_endpoint_auth_method),
        ))
        .returning(Client::as_returning())
        .get_result(conn)
        .await
}

pub async fn find_client(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Client>> {
    oauth_clients::table
        .find(id)
        .select(Client::as_select())
        .first(conn)
        .await
        .optional()
}

pub struct NewGrant<'a> {
    pub client_id: Uuid,
    pub account: &'a Account,
    pub scopes: &'a [String],
    pub resource: &'a str,
    pub code_hash: [u8; 32],
    pub redirect_uri: &'a str,
    pub code_challenge: &'a str,
    pub code_expires_at: DateTime<Utc>,
}

/// A grant and its authorization code.
pub async fn create_grant(conn: &mut AsyncPgConnection, new: NewGrant<'_>) -> QueryResult<Uuid> {
    let id = Uuid::now_v7();
    diesel::insert_into(oauth_grants::table)
        .values((
            oauth_grants::id.eq(id),
            oauth_grants::client_id.eq(new.client_id),
            oauth_grants::account_id.eq(new.account.id),
            oauth_grants::owner_id.eq(new.account.owner_id),
            oauth_grants::scopes.eq(new.scopes),
            oauth_grants::resource.eq(new.resource),
        ))
        .execute(conn)
        .await?;
    diesel::insert_into(oauth_codes::table)
        .values((
            oauth_codes::code_hash.eq(&new.code_hash[..]),
            oauth_codes::grant_id.eq(id),
            oauth_codes::redirect_uri.eq(new.redirect_uri),
            oauth_codes::code_challenge.eq(new.code_challenge),
            oauth_codes::expires_at.eq(new.code_expires_at),
        ))
        .execute(conn)
        .await?;
    Ok(id)
}

/// What presenting a code found.
pub enum CodeUse {
    /// First use: the code is now spent.
    First(Box<(Code, Grant)>),
    /// The code was spent already: its grant has been revoked.
    Replayed,
    Unknown,
}

pub async fn use_code(conn: &mut AsyncPgConnection, code_hash: &[u8; 32]) -> QueryResult<CodeUse> {
    let spent: Option<Code> = diesel::update(oauth_codes::table)
        .filter(oauth_codes::code_hash.eq(&code_hash[..]))
        .filter(oauth_codes::used_at.is_null())
        .set(oauth_codes::used_at.eq(Utc::now()))
        .returning(Code::as_returning())
        .get_result(conn)
        .await
        .optional()?;
    if let Some(code) = spent {
        let grant = find_grant(conn, code.grant_id).await?;
        return Ok(CodeUse::First(Box::new((code, grant))));
    }
    let replayed: Option<Uuid> = oauth_codes::table
        .filter(oauth_codes::code_hash.eq(&code_hash[..]))
        .select(oauth_codes::grant_id)
        .first(conn)
        .await
        .optional()?;
    match replayed {
        Some(grant) => {
            revoke_grant(conn, grant).await?;
            Ok(CodeUse::Replayed)
        }
        None => Ok(CodeUse::Unknown),
    }
}

pub async fn find_grant(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Grant> {
    oauth_grants::table
        .find(id)
        .select(Grant::as_select())
        .first(conn)
        .await
}

/// Stores one token of `kind` under the grant.
pub async fn insert_token(
    conn: &mut AsyncPgConnection,
    grant_id: Uuid,
    kind: &str,
    hash: &[u8; 32],
    expires_at: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::insert_into(oauth_tokens::table)
        .values((
            oauth_tokens::id.eq(Uuid::now_v7()),
            oauth_tokens::grant_id.eq(grant_id),
            oauth_tokens::kind.eq(kind),
            oauth_tokens::key_hash.eq(&hash[..]),
            oauth_tokens::expires_at.eq(expires_at),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Revokes a grant and every token issued under it (the tokens' trigger notifies every
/// replica's credential cache).
pub async fn revoke_grant(conn: &mut AsyncPgConnection, grant_id: Uuid) -> QueryResult<()> {
    let now = Utc::now();
    diesel::update(oauth_grants::table.find(grant_id))
        .filter(oauth_grants::revoked_at.is_null())
        .set(oauth_grants::revoked_at.eq(now))
        .execute(conn)
        .await?;
    diesel::update(oauth_tokens::table)
        .filter(oauth_tokens::grant_id.eq(grant_id))
        .filter(oauth_tokens::revoked_at.is_null())
        .set(oauth_tokens::revoked_at.eq(now))
        .execute(conn)
        .await
        .map(drop)
}

/// A token by hash, with its grant.
pub async fn find_token(
    conn: &mut AsyncPgConnection,
    hash: &[u8; 32],
) -> QueryResult<Option<(Token, Grant)>> {
    oauth_tokens::table
        .inner_join(oauth_grants::table)
        .filter(oauth_tokens::key_hash.eq(&hash[..]))
        .select((Token::as_select(), Grant::as_select()))
        .first(conn)
        .await
        .optional()
}

/// Marks a refresh token spent; `false` when another request spent it first.
pub async fn spend_refresh(conn: &mut AsyncPgConnection, token_id: Uuid) -> QueryResult<bool> {
    diesel::update(oauth_tokens::table.find(token_id))
        .filter(oauth_tokens::used_at.is_null())
        .filter(oauth_tokens::revoked_at.is_null())
        .set(oauth_tokens::used_at.eq(Utc::now()))
        .execute(conn)
        .await
        .map(|n| n == 1)
}

/// An access token with what the credential store needs: its grant and client.
pub async fn find_access_token(
    conn: &mut AsyncPgConnection,
    hash: &[u8; 32],
) -> QueryResult<Option<(Token, Grant)>> {
    Ok(find_token(conn, hash)
        .await?
        .filter(|(token, _)| token.kind == ACCESS))
}

/// The live grants an owner gave, newest first, with their clients.
pub async fn active_grants(
    conn: &mut AsyncPgConnection,
    owner_id: Uuid,
) -> QueryResult<Vec<(Grant, Client)>> {
    oauth_grants::table
        .inner_join(oauth_clients::table)
        .filter(oauth_grants::owner_id.eq(owner_id))
        .filter(oauth_grants::revoked_at.is_null())
        .order(oauth_grants::created_at.desc())
        .select((Grant::as_select(), Client::as_select()))
        .load(conn)
        .await
}

/// Revokes one of the owner's live grants; `false` when the owner has no such live grant.
pub async fn revoke_owned_grant(
    conn: &mut AsyncPgConnection,
    owner_id: Uuid,
    grant_id: Uuid,
) -> QueryResult<bool> {
    let owned: Option<Uuid> = oauth_grants::table
        .filter(oauth_grants::id.eq(grant_id))
        .filter(oauth_grants::owner_id.eq(owner_id))
        .filter(oauth_grants::revoked_at.is_null())
        .select(oauth_grants::id)
        .first(conn)
        .await
        .optional()?;
    match owned {
        Some(id) => revoke_grant(conn, id).await.map(|()| true),
        None => Ok(false),
    }
}

/// Ends a browser session.
pub async fn delete_session(
    conn: &mut AsyncPgConnection,
    token_hash: &[u8; 32],
) -> QueryResult<()> {
    diesel::delete(oauth_sessions::table.filter(oauth_sessions::token_hash.eq(&token_hash[..])))
        .execute(conn)
        .await
        .map(drop)
}
