//! What a request sees of workspace-divided memory: the [`view`] every use case of it reads and
//! writes through, and the checks that a workspace is one the caller may see.

use auth::Caller;
use diesel_async::AsyncPgConnection;
use http_kit::{ApiError, Cursor};
use uuid::Uuid;

use crate::db::owner::Owner;
use crate::db::view::View;
use crate::db::{agents, workspaces};

/// What the caller's request sees of workspace-divided memory: the workspace it names
/// (`explicit`, which must be one the caller may see: 404 otherwise, see [`check_workspace`]),
/// else the credential's active workspace, else the whole account.
pub async fn view(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    explicit: Option<Uuid>,
) -> Result<View<'static>, ApiError> {
    let owner = Owner::of(caller);
    let workspace = match explicit {
        Some(id) => {
            check_workspace(conn, caller, id).await?;
            Some(id)
        }
        None => workspaces::active(conn, caller.key_id).await?,
    };
    Ok(View { owner, workspace })
}

/// 404 unless `id` is a workspace of the caller's owner that the credential may see: a
/// workspace-bound credential (an agent's token) sees its own workspace only, and another is
/// answered as if it did not exist, like another owner's.
pub async fn check_workspace(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
) -> Result<(), ApiError> {
    if bound_workspace(conn, caller)
        .await?
        .is_some_and(|b| b != id)
    {
        return Err(no_workspace(id));
    }
    workspaces::find(conn, Owner::of(caller), id)
        .await?
        .ok_or_else(|| no_workspace(id))?;
    Ok(())
}

/// The workspace the credential is bound to: an agent's token is bound to its agent's
/// workspace (`None`: not bound, or an account-wide agent).
pub async fn bound_workspace(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
) -> Result<Option<Uuid>, ApiError> {
    Ok(agents::bound_workspace(conn, caller.key_id).await?)
}

/// The 404 of a workspace id the caller does not have.
pub fn no_workspace(id: Uuid) -> ApiError {
    ApiError::not_found(format!("no workspace {id}"))
}

/// What a listing of workspace records was asked for: a workspace, a limit, a cursor.
pub type Listing<'a> = (Option<Uuid>, Option<u32>, Option<&'a str>);

/// A listing's workspace filter (checked to be the caller's: 404 otherwise), its limit and
/// its cursor's id.
pub async fn filters(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    (workspace, limit, cursor): Listing<'_>,
) -> Result<(Option<Uuid>, u32, Option<Uuid>), ApiError> {
    let before = cursor.map(Cursor::decode).transpose()?.map(|c| c.0);
    let workspace = match workspace {
        Some(id) => {
            check_workspace(conn, caller, id).await?;
            Some(id)
        }
        // A workspace-bound credential lists its own workspace only.
        None => bound_workspace(conn, caller).await?,
    };
    let limit = limit.unwrap_or(http_kit::pagination::DEFAULT_LIMIT);
    Ok((workspace, limit, before))
}
