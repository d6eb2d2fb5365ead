//! RFC 8414 authorization-server metadata and RFC 9728 protected-resource metadata.

use serde_json::{Value, json};

use crate::OAuth;
use crate::flow::AUTH_METHODS;

pub fn authorization_server(oauth: &OAuth, base: &str) -> Value {
    let paths = &oauth.config.paths;
    json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}{}", paths.authorize),
        "token_endpoint": format!("{base}{}", paths.token),
        "registration_endpoint": format!("{base}{}", paths.register),
        "revocation_endpoint": format!("{base}{}", paths.revoke),
        "scopes_supported": oauth.config.scopes_supported,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": AUTH_METHODS,
        "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
    })
}

/// The metadata of the resource at `resource` (RFC 9728).
pub fn protected_resource(oauth: &OAuth, base: &str, resource: &str) -> Value {
    json!({
        "resource": resource,
        "authorization_servers": [base],
        "scopes_supported": oauth.config.scopes_supported,
        "bearer_methods_supported": ["header"],
        "resource_name": oauth.config.service_name,
    })
}

/// Where the metadata of the resource at `path` is served (RFC 9728 §3.1).
pub fn protected_resource_url(base: &str, path: &str) -> String {
    format!("{base}/.well-known/oauth-protected-resource{path}")
}
