//! What memory-api's landing page (`/`, for browsers) links to besides the API reference; the
//! pages themselves are the shared ones ([`http_kit::pages`]).

use http_kit::pages::{Landing, Link, Section};

pub static LANDING: Landing = Landing {
    service: "memory-api",
    about: "Product memory for people and their AI tools: products and their state, \
            decisions found by meaning, identity, workspaces, and connectors that propose \
            what a person approves.",
    openapi: "/api/v1/openapi.json",
    sections: &[
        Section {
            title: "Contract",
            links: &[Link {
                href: "/api/v1/openapi.yaml",
                label: "OpenAPI document (YAML)",
                note: "the same document",
            }],
        },
        Section {
            title: "Dashboard",
            links: &[
                Link {
                    href: "/dashboard/sign-in",
                    label: "Sign in",
                    note: "with a sign-in account (admin memory create-sign-in)",
                },
                Link {
                    href: "/dashboard/proposals",
                    label: "Pending proposals",
                    note: "what connectors propose, to approve or reject",
                },
                Link {
                    href: "/dashboard/apps",
                    label: "Connected apps",
                    note: "the connectors you authorized, to revoke",
                },
            ],
        },
        Section {
            title: "Operations",
            links: &[
                Link {
                    href: "/healthz",
                    label: "/healthz",
                    note: "the process is up",
                },
                Link {
                    href: "/readyz",
                    label: "/readyz",
                    note: "it can serve (its database answers)",
                },
            ],
        },
    ],
};

/// Mounts `/`, `/docs` and the reference page's files.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    http_kit::pages::configure(cfg, &LANDING);
}
