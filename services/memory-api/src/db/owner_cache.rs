//! Identity kernels and products one HTTP worker read lately ([`service_kit::row_cache`]),
//! by owner: their triggers notify `<user id> <environment>`.

use service_kit::row_cache::RowCache;
use store::listen::Subscribers;
use uuid::Uuid;

use super::owner::Owner;

/// The NOTIFY channel of the `identity_kernels` triggers.
pub const KERNELS: &str = "identity_kernel_changed";
/// The NOTIFY channel of the `products` triggers.
pub const PRODUCTS: &str = "product_changed";

/// An owner's rows of one table: `(user id, environment)`.
pub type OwnerCache<V> = RowCache<(Uuid, String), V>;

/// A cache of the table whose triggers notify `channel` ([`KERNELS`], [`PRODUCTS`]).
pub fn subscribed<V: Clone + Send + 'static>(
    listen: &Subscribers,
    channel: &'static str,
) -> OwnerCache<V> {
    OwnerCache::subscribed(listen, channel, parse_owner)
}

/// The cache key of an owner.
pub fn key(owner: Owner<'_>) -> (Uuid, String) {
    (owner.user_id, owner.environment.to_owned())
}

/// A notification's `<user id> <environment>`.
fn parse_owner(payload: &str) -> Option<(Uuid, String)> {
    let (user, environment) = payload.split_once(' ')?;
    Some((user.parse().ok()?, environment.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_name_an_owner_or_everyone() {
        let user = Uuid::from_u128(7);
        assert_eq!(
            parse_owner(&format!("{user} live")),
            Some((user, "live".to_owned()))
        );
        assert_eq!(parse_owner("*"), None);
        assert_eq!(parse_owner("not-a-uuid live"), None);
    }
}
