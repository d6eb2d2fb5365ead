//! One place to declare a route: a handler's `#[utoipa::path]` attribute states its method and
//! path once, a module lists its handlers in a [`Route`] table with [`route!`], and both the
//! app ([`mount`]) and the OpenAPI document ([`document`]) read that table.
//!
//! ```ignore
//! #[utoipa::path(get, path = "/api/v1/contacts/{id}", tag = "contacts", …)]
//! pub async fn get(…) -> Result<HttpResponse, ApiError> { … }
//!
//! pub const ROUTES: &[Route] = &[route!(list), route!(get), route!(update)];
//! ```
//!
//! Registration order does not matter: [`mount`] sorts the paths so that, segment by segment,
//! a literal (`/contacts/schema`) is tried before a constrained parameter
//! (`/ingest/{id:[0-9a-f-]{36}}`) and that before a free one (`/contacts/{id}`), which is the
//! order in which actix must see them (it takes the first resource whose path matches).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use actix_web::http::Method;
use actix_web::web;
use utoipa::openapi::path::{HttpMethod, Operation};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::{Components, OpenApi, RefOr};

/// The schemas an operation names, as utoipa collects them for its document.
pub type SchemaList = Vec<(String, RefOr<Schema>)>;

/// One documented handler: what the OpenAPI document says of it and how actix reaches it.
#[derive(Clone, Copy)]
pub struct Route {
    /// The documented path, from the server's root (`/api/v1/contacts/{id}`).
    pub path: fn() -> String,
    /// The documented methods.
    pub methods: fn() -> Vec<HttpMethod>,
    /// The documented operation.
    pub operation: fn() -> Operation,
    /// The operation's tags (the attribute's `tag`).
    pub tags: fn() -> Vec<&'static str>,
    /// The schemas the operation names (request and response bodies).
    pub schemas: fn(&mut SchemaList),
    /// The path actix matches, below the mount prefix, when it is not the documented one (a
    /// segment constrained by a pattern, `/ingest/{project_id:[0-9a-f-]{36}}`).
    pub at: Option<&'static str>,
    /// The largest JSON body the route takes, when not the app's (an upload's).
    pub json_limit: Option<usize>,
    /// The handler, for one method.
    pub handler: Handler,
}

/// A [`Route`] for a handler with a `#[utoipa::path]` attribute, named in its own module:
/// `route!(list)`; options after it: `at = "/ingest/{project_id:[0-9a-f-]{36}}"` (the path
/// actix matches, when not the documented one) and `json_limit = MAX_UPLOAD_BODY` (a JSON body
/// limit other than the app's).
#[macro_export]
macro_rules! route {
    ($handler:ident $(, $option:ident = $value:expr)* $(,)?) => {{
        let route = $crate::__pastey::paste! {
            $crate::routes::Route {
                path: <[<__path_ $handler>] as ::utoipa::Path>::path,
                methods: <[<__path_ $handler>] as ::utoipa::Path>::methods,
                operation: <[<__path_ $handler>] as ::utoipa::Path>::operation,
                tags: <[<__path_ $handler>] as ::utoipa::__dev::Tags<'static>>::tags,
                schemas: <[<__path_ $handler>] as ::utoipa::__dev::SchemaReferences>::schemas,
                at: ::core::option::Option::None,
                json_limit: ::core::option::Option::None,
                handler: |method| ::actix_web::web::method(method).to($handler),
            }
        };
        $( let route = $crate::routes::Route { $option: ::core::option::Option::Some($value), ..route }; )*
        route
    }};
}

/// Mounts every route of `tables` (documented paths starting with `prefix`, which the caller's
/// scope already matched), one actix resource per path with all its methods, in the order
/// described in the module documentation.
///
/// # Panics
/// When two routes claim one method of one path, or a documented path is outside `prefix`:
/// both are programming errors the first test run shows.
pub fn mount(cfg: &mut web::ServiceConfig, prefix: &str, tables: &[&[Route]]) {
    mount_as(cfg, prefix, tables, false);
}

/// [`mount`], in one scope per literal first segment of the paths (`/sites` holding `/sites`,
/// `/sites/{id}`, …), so that a request is compared with the paths of its own group only:
/// actix tries resources one by one, a parameter's pattern by regular expression, and with
/// every path in one list most of a cheap read's time went to routing.
///
/// Only for a scope that holds nothing else: a group's scope answers 404 for a request under
/// its segment that none of its paths match, so a service registered beside it under the same
/// segment would never be reached. Nothing is grouped when a path starts with a parameter,
/// for the same reason.
pub fn mount_grouped(cfg: &mut web::ServiceConfig, prefix: &str, tables: &[&[Route]]) {
    mount_as(cfg, prefix, tables, true);
}

fn mount_as(cfg: &mut web::ServiceConfig, prefix: &str, tables: &[&[Route]], grouped: bool) {
    let mut resources: BTreeMap<MountPath, Resource> = BTreeMap::new();
    for route in tables.iter().flat_map(|table| table.iter()) {
        let path = match route.at {
            Some(at) => at.to_owned(),
            None => {
                let documented = (route.path)();
                documented
                    .strip_prefix(prefix)
                    .unwrap_or_else(|| panic!("route {documented} is outside {prefix}"))
                    .to_owned()
            }
        };
        let resource = resources.entry(MountPath(path.clone())).or_default();
        for method in (route.methods)() {
            let method = actix_method(&method);
            assert!(
                resource.methods.iter().all(|(m, _)| *m != method),
                "two routes claim {method} {prefix}{path}"
            );
            resource.methods.push((method, route.handler));
        }
        if let Some(limit) = route.json_limit {
            assert!(
                resource.json_limit.is_none_or(|l| l == limit),
                "two JSON body limits on {prefix}{path}"
            );
            resource.json_limit = Some(limit);
        }
    }
    let groupable = grouped && resources.keys().all(|path| path.first_literal().is_some());
    let mut groups: BTreeMap<String, Vec<(String, Resource)>> = BTreeMap::new();
    for (path, resource) in resources {
        match path.first_literal().filter(|_| groupable) {
            Some(first) => {
                let rest = path.0[first.len() + 1..].to_owned();
                groups
                    .entry(first.to_owned())
                    .or_default()
                    .push((rest, resource));
            }
            None => {
                cfg.service(resource.into_actix(&path.0));
            }
        }
    }
    for (first, members) in groups {
        let scope = members.into_iter().fold(
            web::scope(&format!("/{first}")),
            |scope, (rest, resource)| scope.service(resource.into_actix(&rest)),
        );
        cfg.service(scope);
    }
}

impl Resource {
    fn into_actix(self, path: &str) -> actix_web::Resource {
        let mut mounted = web::resource(path);
        if let Some(limit) = self.json_limit {
            mounted = mounted.app_data(crate::json_config(limit));
        }
        self.methods
            .into_iter()
            .fold(mounted, |mounted, (method, handler)| {
                mounted.route(handler(method))
            })
    }
}

/// Adds every route of `tables` to `document`: its operation under its path, and the schemas
/// it names to the components (as `#[openapi(paths(…))]` would).
pub fn document(document: &mut OpenApi, tables: &[&[Route]]) {
    let mut schemas = SchemaList::new();
    for route in tables.iter().flat_map(|table| table.iter()) {
        let mut operation = (route.operation)();
        let tags = (route.tags)();
        if !tags.is_empty() {
            operation
                .tags
                .get_or_insert_with(Vec::new)
                .extend(tags.into_iter().map(str::to_owned));
        }
        document
            .paths
            .add_path_operation((route.path)(), (route.methods)(), operation);
        (route.schemas)(&mut schemas);
    }
    document
        .components
        .get_or_insert_with(Components::new)
        .schemas
        .extend(schemas);
}

/// Every documented `(method, path)` of `tables`, in table order (for tests that walk them).
pub fn operations(tables: &[&[Route]]) -> Vec<(HttpMethod, String)> {
    tables
        .iter()
        .flat_map(|table| table.iter())
        .flat_map(|route| {
            let path = (route.path)();
            (route.methods)()
                .into_iter()
                .map(move |method| (method, path.clone()))
        })
        .collect()
}

/// A handler, given the method it answers.
pub type Handler = fn(Method) -> actix_web::Route;

/// The methods of one path, and its body limit.
#[derive(Default)]
struct Resource {
    methods: Vec<(Method, Handler)>,
    json_limit: Option<usize>,
}

pub(crate) fn actix_method(method: &HttpMethod) -> Method {
    match method {
        HttpMethod::Get => Method::GET,
        HttpMethod::Put => Method::PUT,
        HttpMethod::Post => Method::POST,
        HttpMethod::Delete => Method::DELETE,
        HttpMethod::Options => Method::OPTIONS,
        HttpMethod::Head => Method::HEAD,
        HttpMethod::Patch => Method::PATCH,
        HttpMethod::Trace => Method::TRACE,
    }
}

/// A mount path, ordered so that actix tries the more specific of two paths first.
#[derive(PartialEq, Eq)]
struct MountPath(String);

impl MountPath {
    /// The first segment when it is a literal (`contacts` of `/contacts/{id}`).
    fn first_literal(&self) -> Option<&str> {
        let first = self.0.strip_prefix('/')?.split('/').next()?;
        (!first.is_empty() && !first.contains('{')).then_some(first)
    }

    /// Per segment: 0 for a literal, 1 for a parameter with a pattern, 2 for a free one.
    fn ranks(&self) -> impl Iterator<Item = (u8, &str)> {
        self.0.split('/').map(|segment| {
            if !segment.starts_with('{') {
                (0, segment)
            } else if segment.contains(':') {
                (1, "")
            } else {
                (2, "")
            }
        })
    }
}

impl Ord for MountPath {
    fn cmp(&self, other: &Self) -> Ordering {
        self.ranks()
            .cmp(other.ranks())
            .then_with(|| self.0.cmp(&other.0))
    }
}

impl PartialOrd for MountPath {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::{MountPath, Route, mount_grouped};
    use actix_web::test as actix_test;
    use actix_web::{App, HttpRequest, HttpResponse, web};
    use utoipa::openapi::path::{HttpMethod, Operation};

    /// A route at `at` answering with the path pattern actix matched.
    fn echo(at: &'static str, method: fn() -> Vec<HttpMethod>) -> Route {
        async fn pattern(req: HttpRequest) -> HttpResponse {
            HttpResponse::Ok().body(req.match_pattern().unwrap_or_default())
        }
        Route {
            path: || String::new(),
            methods: method,
            operation: Operation::default,
            tags: Vec::new,
            schemas: |_| {},
            at: Some(at),
            json_limit: None,
            handler: |method| web::method(method).to(pattern),
        }
    }

    async fn answer(routes: &'static [Route], method: &str, uri: &str) -> (u16, String) {
        let app =
            actix_test::init_service(
                // As the services mount them: in a scope of no path of its own (for its
                // middleware) within the prefix's scope.
                App::new().service(web::scope("/api/v1").service(
                    web::scope("").configure(|cfg| mount_grouped(cfg, "/api/v1", &[routes])),
                )),
            )
            .await;
        let req = actix_test::TestRequest::default()
            .method(method.parse().unwrap())
            .uri(uri)
            .to_request();
        let res = actix_test::call_service(&app, req).await;
        let status = res.status().as_u16();
        let body = actix_test::read_body(res).await;
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[actix_web::test]
    async fn requests_reach_the_same_resource_whether_paths_are_grouped_or_not() {
        let grouped: &'static [Route] = Box::leak(Box::new([
            echo("/sites", || vec![HttpMethod::Get, HttpMethod::Post]),
            echo("/sites/{id}", || vec![HttpMethod::Get]),
            echo("/sites/{id}/stats", || vec![HttpMethod::Get]),
            echo("/contacts/schema", || vec![HttpMethod::Get]),
            echo("/contacts/{id}", || vec![HttpMethod::Get]),
            echo("/send", || vec![HttpMethod::Post]),
        ]));
        // One path starting with a parameter: nothing is grouped.
        let flat: &'static [Route] = Box::leak(Box::new([
            echo("/sites", || vec![HttpMethod::Get]),
            echo("/sites/{id}", || vec![HttpMethod::Get]),
            echo("/{kind}/export", || vec![HttpMethod::Get]),
        ]));
        // Requests and the patterns they match, below /api/v1.
        let cases: &[(&'static [Route], &str, u16, &str)] = &[
            (grouped, "GET /sites", 200, "/sites"),
            (grouped, "POST /sites", 200, "/sites"),
            (grouped, "GET /sites/7", 200, "/sites/{id}"),
            (grouped, "GET /sites/7/stats", 200, "/sites/{id}/stats"),
            (grouped, "GET /contacts/schema", 200, "/contacts/schema"),
            (grouped, "GET /contacts/9", 200, "/contacts/{id}"),
            (grouped, "POST /send", 200, "/send"),
            (grouped, "DELETE /sites/7", 405, ""),
            (grouped, "GET /sites/", 404, ""),
            (grouped, "GET /sitesx", 404, ""),
            (grouped, "GET /sites/7/other", 404, ""),
            (flat, "GET /sites/export", 200, "/sites/{id}"),
            (flat, "GET /lists/export", 200, "/{kind}/export"),
        ];
        for (routes, request, status, pattern) in cases {
            let (method, path) = request.split_once(' ').unwrap();
            let (got_status, got_body) = answer(routes, method, &format!("/api/v1{path}")).await;
            assert_eq!(got_status, *status, "{request}: body {got_body:?}");
            if *status == 200 {
                assert_eq!(got_body, format!("/api/v1{pattern}"), "{request}");
            }
        }
    }

    fn sorted(paths: &[&str]) -> Vec<String> {
        let mut paths: Vec<MountPath> = paths.iter().map(|p| MountPath((*p).to_owned())).collect();
        paths.sort();
        paths.into_iter().map(|p| p.0).collect()
    }

    #[test]
    fn a_literal_segment_is_tried_before_a_parameter_in_its_place() {
        assert_eq!(
            sorted(&[
                "/contacts/{id}",
                "/contacts/{id}/export",
                "/ingest/{project_id:[0-9a-f-]{36}}",
                "/contacts/schema",
                "/ingest/events",
                "/contacts",
            ]),
            [
                "/contacts",
                "/contacts/schema",
                "/contacts/{id}",
                "/contacts/{id}/export",
                "/ingest/events",
                "/ingest/{project_id:[0-9a-f-]{36}}",
            ]
        );
    }

    #[test]
    fn a_pattern_constrained_parameter_is_tried_before_a_free_one() {
        assert_eq!(
            sorted(&["/w/{id}", "/w/{id:[0-9]+}"]),
            ["/w/{id:[0-9]+}", "/w/{id}"]
        );
    }
}

#[cfg(test)]
mod mounting {
    use actix_web::test as actix_test;
    use actix_web::{App, HttpResponse, web};
    use utoipa::OpenApi;

    use super::{Route, document, mount};

    /// One contact.
    #[utoipa::path(get, path = "/api/v1/contacts/{id}", responses((status = 200)))]
    async fn get() -> HttpResponse {
        HttpResponse::Ok().body("one")
    }

    /// The contact schema.
    #[utoipa::path(get, path = "/api/v1/contacts/schema", responses((status = 200)))]
    async fn schema() -> HttpResponse {
        HttpResponse::Ok().body("schema")
    }

    /// Merges contacts.
    #[utoipa::path(post, path = "/api/v1/contacts/{id}", responses((status = 200)))]
    async fn update() -> HttpResponse {
        HttpResponse::Ok().body("updated")
    }

    // The parameterised path first: the mount still tries the literal one first.
    const ROUTES: &[Route] = &[
        route!(get),
        route!(update, json_limit = 10),
        route!(schema, at = "/contacts/schema"),
    ];

    #[actix_web::test]
    async fn a_table_mounts_in_any_order_with_every_method_of_a_path_on_one_resource() {
        let app = actix_test::init_service(
            App::new()
                .service(web::scope("/api/v1").configure(|cfg| mount(cfg, "/api/v1", &[ROUTES]))),
        )
        .await;
        for (method, uri, expected) in [
            ("GET", "/api/v1/contacts/schema", "schema"),
            ("GET", "/api/v1/contacts/7", "one"),
            ("POST", "/api/v1/contacts/7", "updated"),
        ] {
            let request = actix_test::TestRequest::default()
                .method(method.parse().unwrap())
                .uri(uri)
                .to_request();
            let body = actix_test::call_and_read_body(&app, request).await;
            assert_eq!(body, expected.as_bytes(), "{method} {uri}");
        }
        let wrong_method = actix_test::TestRequest::delete()
            .uri("/api/v1/contacts/7")
            .to_request();
        let response = actix_test::call_service(&app, wrong_method).await;
        assert_eq!(response.status(), 405, "DELETE on a GET+POST resource");
    }

    #[derive(OpenApi)]
    #[openapi()]
    struct Empty;

    #[test]
    fn the_document_states_each_route_under_its_path() {
        let mut doc = Empty::openapi();
        document(&mut doc, &[ROUTES]);
        let paths: Vec<_> = doc.paths.paths.keys().cloned().collect();
        assert_eq!(paths, ["/api/v1/contacts/{id}", "/api/v1/contacts/schema"]);
        let item = &doc.paths.paths["/api/v1/contacts/{id}"];
        assert!(
            item.get.is_some() && item.post.is_some(),
            "{}",
            serde_json::to_string(item).unwrap_or_default()
        );
    }
}
