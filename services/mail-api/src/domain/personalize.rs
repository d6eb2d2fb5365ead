//! Personalization: the one template language of subjects, HTML and text parts (templates,
//! campaign steps, previews, test sends and `POST /send`), Jinja-style syntax rendered by
//! minijinja. HTML is rendered with HTML auto-escaping (a value holding `<b>` reaches the
//! recipient as `&lt;b&gt;`); subjects and text parts are rendered as they are.
//!
//! - [`check`] compiles a source: a syntax error names its line and column (a 400 at write
//!   time, `TEMPLATE_SYNTAX`).
//! - [`unknown_variables`] lists the names a source reads that no recipient can have (the
//!   HTML check flags them).
//! - [`Renderer::render`] renders one source for one recipient. A missing value renders as
//!   empty (or as the `default` filter's value), never as the raw tag: undefined values are
//!   lenient, lookups through them chain.
//!
//! The variables ([`KNOWN`]): the contact's `email`, `first_name`, `last_name`, `tags` and
//! `properties.*`; `site.name`, `site.slug`, `site.from_name`; `campaign.id`, `campaign.name`;
//! `step.id`, `step.order`; `event.name`, `event.data.*` (the event that enrolled the contact
//! in a triggered campaign); `unsubscribe_url`; `data.*` (`POST /send`'s `data`);
//! `blocks.<name>` (the project's content blocks, inserted as written: not escaped).

use std::collections::{BTreeSet, HashSet};
use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::sync::{LazyLock, Mutex, RwLock};

use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, UndefinedBehavior};

/// The names a template may read: `name` alone, or `name.` followed by what it may hold
/// (`*`: anything).
pub const KNOWN: &[(&str, &[&str])] = &[
    ("email", &[]),
    ("first_name", &[]),
    ("last_name", &[]),
    ("tags", &[]),
    ("properties", &["*"]),
    ("site", &["name", "slug", "from_name"]),
    ("campaign", &["id", "name"]),
    ("step", &["id", "order"]),
    ("event", &["name", "data", "data.*"]),
    ("unsubscribe_url", &[]),
    ("data", &["*"]),
    ("blocks", &["*"]),
];

/// The variable holding the project's content blocks: its members are inserted unescaped.
pub const BLOCKS: &str = "blocks";

/// What the engine provides itself (functions and loop variables), never unknown.
const BUILTIN: &[&str] = &["range", "dict", "namespace", "loop", "debug"];

/// Compiled templates a renderer keeps at most (then it starts again).
const CACHED: usize = 512;

/// Whether a source holds template syntax at all (`{{`, `{%` or `{#`): one without any is
/// sent as written and never compiled.
pub fn has_tags(source: &str) -> bool {
    source.contains("{{") || source.contains("{%") || source.contains("{#")
}

/// A source that does not compile: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// `subject`, `html`, `text` (or the field of the request that held it).
    pub field: String,
    /// From 1.
    pub line: usize,
    /// From 1, in characters.
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: template syntax error at line {}, column {}: {}",
            self.field, self.line, self.column, self.message
        )
    }
}

/// The environment every template is compiled in: lenient undefined values, HTML
/// auto-escaping for templates named `html…`, the builtin filters (`default`, `upper`,
/// `lower`, `title`, `capitalize`, `trim`, …) and `date`.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Chainable);
    env.set_auto_escape_callback(|name| {
        if name.starts_with("html") {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });
    env.set_debug(false);
    env.add_filter("date", date);
    env.add_filter("default", default);
    env.add_filter("d", default);
    env
}

/// `{{ value | default("there") }}`: the value, or the default (empty when not given) when the
/// value is missing or null; with `default(x, true)` also when it is false or empty. Unlike
/// Jinja's, a null counts as missing: a contact field never set is null.
fn default(value: &Value, other: Option<Value>, boolean: Option<bool>) -> Value {
    let missing =
        value.is_undefined() || value.is_none() || (boolean.unwrap_or(false) && !value.is_true());
    if missing {
        other.unwrap_or_else(|| Value::from(""))
    } else {
        value.clone()
    }
}

/// `{{ value | date("%d %B %Y") }}`: an RFC 3339 timestamp or a `YYYY-MM-DD` date written in
/// the format (strftime; default `%Y-%m-%d`); anything else as it is, undefined as empty.
fn date(value: &Value, format: Option<&str>) -> String {
    let format = format.unwrap_or("%Y-%m-%d");
    let Some(text) = value.as_str() else {
        return if value.is_undefined() || value.is_none() {
            String::new()
        } else {
            value.to_string()
        };
    };
    let written = if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        at.format_with_items(chrono::format::StrftimeItems::new(format))
            .to_string_checked()
    } else if let Ok(day) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        day.format_with_items(chrono::format::StrftimeItems::new(format))
            .to_string_checked()
    } else {
        None
    };
    written.unwrap_or_else(|| text.to_owned())
}

trait Checked {
    fn to_string_checked(self) -> Option<String>;
}

impl<T: std::fmt::Display> Checked for T {
    /// A bad format makes `Display` fail: `None` then.
    fn to_string_checked(self) -> Option<String> {
        use std::fmt::Write as _;
        let mut out = String::new();
        write!(out, "{self}").ok().map(|()| out)
    }
}

fn syntax_error(field: &str, source: &str, err: &Error) -> SyntaxError {
    let line = err.line().unwrap_or(1).max(1);
    let column = err
        .range()
        .and_then(|range| {
            let before = source.get(..range.start)?;
            let start_of_line = before.rfind('\n').map_or(0, |i| i + 1);
            Some(before[start_of_line..].chars().count() + 1)
        })
        .unwrap_or(1);
    let message = err
        .detail()
        .map_or_else(|| err.kind().to_string(), str::to_owned);
    SyntaxError {
        field: field.to_owned(),
        line,
        column,
        message,
    }
}

/// The template name that selects the escaping of `field`.
fn escaping_name(field: &str) -> &'static str {
    if field == "html" { "html" } else { "plain" }
}

/// Compiles `source` (the `field` of a request): its syntax error, if any. A source that
/// compiled before is not compiled again ([`Compiled`]).
pub fn check(field: &str, source: &str) -> Result<(), SyntaxError> {
    if !has_tags(source) && !source.contains("%}") && !source.contains("}}") {
        return Ok(());
    }
    if COMPILED.holds(source) {
        return Ok(());
    }
    let env = environment();
    env.template_from_named_str(escaping_name(field), source)
        .map_err(|err| syntax_error(field, source, &err))?;
    COMPILED.keep(source);
    Ok(())
}

/// The sources [`check`] found to compile, compared whole: a sender posting one template with
/// new `data` at every send has it compiled once, not at every request (three sources took
/// about 14 µs to compile, a lookup 0.4 µs). Whether a source compiles depends on the source
/// alone, not on its field's escaping. Bounded: sources longer than [`Compiled::LONGEST`]
/// are not kept, and the set starts again once it holds [`Compiled::MOST_BYTES`].
struct Compiled {
    sources: Mutex<(HashSet<Box<str>>, usize)>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| Compiled {
    sources: Mutex::new((HashSet::new(), 0)),
});

impl Compiled {
    const LONGEST: usize = 64 * 1024;
    const MOST_BYTES: usize = 4 * 1024 * 1024;

    fn holds(&self, source: &str) -> bool {
        let sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        sources.0.contains(source)
    }

    fn keep(&self, source: &str) {
        if source.len() > Self::LONGEST {
            return;
        }
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        let (kept, bytes) = &mut *sources;
        if *bytes + source.len() > Self::MOST_BYTES {
            kept.clear();
            *bytes = 0;
        }
        if kept.insert(source.into()) {
            *bytes += source.len();
        }
    }
}

/// Whether `name` (a dotted path as the template reads it) is a variable a recipient can have.
pub fn is_known(name: &str) -> bool {
    let (head, rest) = name
        .split_once('.')
        .map_or((name, None), |(h, r)| (h, Some(r)));
    if BUILTIN.contains(&head) {
        return true;
    }
    let Some((_, members)) = KNOWN.iter().find(|(known, _)| *known == head) else {
        return false;
    };
    let Some(rest) = rest else {
        return true;
    };
    members.iter().any(|member| {
        *member == "*"
            || *member == rest
            || member
                .strip_suffix('*')
                .is_some_and(|prefix| rest.starts_with(prefix))
    })
}

/// The variables `source` reads that no recipient can have, sorted (none when it does not
/// compile: [`check`] says why).
pub fn unknown_variables(source: &str) -> Vec<String> {
    if !has_tags(source) {
        return Vec::new();
    }
    let env = environment();
    let Ok(template) = env.template_from_str(source) else {
        return Vec::new();
    };
    let names: BTreeSet<String> = template
        .undeclared_variables(true)
        .into_iter()
        .filter(|name| !is_known(name))
        .collect();
    names.into_iter().collect()
}

/// Renders sources for recipients, keeping what it compiled (by field and source) so that a
/// campaign step's template is compiled once for all its recipients.
pub struct Renderer {
    env: RwLock<Environment<'static>>,
}

impl Default for Renderer {
    fn default() -> Self {
        Self {
            env: RwLock::new(environment()),
        }
    }
}

/// Why a render failed (a source that no longer compiles, a filter given a bad argument).
#[derive(Debug, thiserror::Error)]
#[error("{field}: the template could not be rendered: {message}")]
pub struct RenderError {
    pub field: String,
    pub message: String,
}

impl Renderer {
    /// `source` (a `subject`, `html` or `text` field) rendered with `context`; a source without
    /// template syntax as it is.
    pub fn render(
        &self,
        field: &str,
        source: &str,
        context: &Value,
    ) -> Result<String, RenderError> {
        if !has_tags(source) {
            return Ok(source.to_owned());
        }
        let mut hasher = DefaultHasher::new();
        source.hash(&mut hasher);
        let name = format!(
            "{}:{:016x}:{}",
            escaping_name(field),
            hasher.finish(),
            source.len()
        );
        let failed = |err: Error| RenderError {
            field: field.to_owned(),
            message: err.to_string(),
        };
        {
            let env = self.env.read().unwrap_or_else(|e| e.into_inner());
            match env.get_template(&name) {
                // The source is compared too: a hash collision never renders another source.
                Ok(template) if template.source() == source => {
                    return template.render(context).map_err(failed);
                }
                Ok(_) => {
                    return env
                        .template_from_named_str(escaping_name(field), source)
                        .and_then(|t| t.render(context))
                        .map_err(failed);
                }
                Err(err) if err.kind() == ErrorKind::TemplateNotFound => {}
                Err(err) => return Err(failed(err)),
            }
        }
        let mut env = self.env.write().unwrap_or_else(|e| e.into_inner());
        if env.templates().count() >= CACHED {
            env.clear_templates();
        }
        env.add_template_owned(name.clone(), source.to_owned())
            .map_err(failed)?;
        let template = env.get_template(&name).map_err(failed)?;
        template.render(context).map_err(failed)
    }
}

/// Whether any of `sources` may read the content blocks: only then are they loaded.
pub fn reads_blocks<'a>(sources: impl IntoIterator<Item = &'a str>) -> bool {
    sources
        .into_iter()
        .any(|source| has_tags(source) && source.contains(BLOCKS))
}

/// The context of one recipient, from a JSON object of the variables ([`KNOWN`]). The
/// members of `blocks` (the project's HTML blocks) are safe values: HTML auto-escaping leaves
/// them as written.
pub fn context(variables: &serde_json::Value) -> Value {
    let Some(blocks) = variables.get(BLOCKS).and_then(serde_json::Value::as_object) else {
        return Value::from(minijinja::value::Serde(variables));
    };
    let blocks: std::collections::BTreeMap<String, Value> = blocks
        .iter()
        .map(|(name, html)| {
            let html = html.as_str().unwrap_or_default().to_owned();
            (name.clone(), Value::from_safe_string(html))
        })
        .collect();
    let mut rest = variables.clone();
    if let Some(members) = rest.as_object_mut() {
        members.remove(BLOCKS);
    }
    minijinja::context! {
        blocks => Value::from(blocks),
        ..Value::from(minijinja::value::Serde(&rest))
    }
}

/// The variables of a sample recipient (previews): the contact's fields as given, or a sample
/// contact's.
pub fn sample_contact() -> serde_json::Value {
    serde_json::json!({
        "email": "recipient@example.com",
        "first_name": "Ada",
        "last_name": "Lovelace",
        "tags": [],
        "properties": {},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(field: &str, source: &str, vars: serde_json::Value) -> String {
        Renderer::default()
            .render(field, source, &context(&vars))
            .unwrap()
    }

    #[test]
    fn defaults_fill_missing_values_and_raw_tags_never_leak() {
        let source = r#"Hi {{ first_name | default("there") }}{{ properties.plan.tier }}!"#;
        assert_eq!(
            render("subject", source, json!({"first_name": "Ada"})),
            "Hi Ada!"
        );
        assert_eq!(render("subject", source, json!({})), "Hi there!");
        assert_eq!(
            render("subject", source, json!({"first_name": null})),
            "Hi there!"
        );
        assert_eq!(render("subject", source, json!({"first_name": ""})), "Hi !");
        assert_eq!(
            render(
                "subject",
                "{{ first_name | default('you', true) }}",
                json!({"first_name": ""})
            ),
            "you"
        );
    }

    #[test]
    fn html_is_escaped_and_plain_parts_are_not() {
        let vars = json!({"first_name": "<b>Ada</b>"});
        assert_eq!(
            render("html", "<p>{{ first_name }}</p>", vars.clone()),
            "<p>&lt;b&gt;Ada&lt;&#x2f;b&gt;</p>"
        );
        assert_eq!(render("text", "{{ first_name }}", vars), "<b>Ada</b>");
    }

    #[test]
    fn blocks_are_inserted_unescaped_and_other_values_escaped() {
        let vars = json!({"first_name": "<i>", "blocks": {"footer": "<p>Bye &amp; thanks</p>"}});
        assert_eq!(
            render(
                "html",
                "{{ first_name }}{{ blocks.footer }}{{ blocks.nope }}",
                vars
            ),
            "&lt;i&gt;<p>Bye &amp; thanks</p>"
        );
        assert!(reads_blocks(["Hi", "{{ blocks.footer }}"]));
        assert!(!reads_blocks(["blocks without tags", "{{ first_name }}"]));
        assert!(unknown_variables("{{ blocks.footer }}").is_empty());
    }

    #[test]
    fn filters_format() {
        let vars = json!({"first_name": "ada lovelace", "data": {"at": "2026-12-02T10:00:00Z"}});
        assert_eq!(
            render(
                "text",
                r#"{{ first_name | title }} {{ first_name | upper }} {{ data.at | date("%d %B %Y") }}"#,
                vars
            ),
            "Ada Lovelace ADA LOVELACE 02 December 2026"
        );
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let err = check("html", "<p>ok</p>\n<p>Hi {{ first_name </p>").unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("html", 2), "{err:?}");
        assert!(err.column > 1, "{err:?}");
        assert!(check("subject", "Hi {{ first_name | default('x') }}").is_ok());
        assert!(check("html", "{% if x %}open").is_err());
    }

    #[test]
    fn a_source_that_compiled_is_remembered_and_a_broken_one_never_is() {
        let good = "Order {{ data.order }} for {{ first_name | default('you') }}";
        let broken = "Order {{ data.order }} for {{ first_name | default('you') }";
        for _ in 0..2 {
            assert!(check("subject", good).is_ok());
            let err = check("subject", broken).unwrap_err();
            assert_eq!((err.field.as_str(), err.line), ("subject", 1), "{err:?}");
        }
        assert!(COMPILED.holds(good));
        assert!(!COMPILED.holds(broken));

        let long = format!("{{{{ data.x }}}}{}", " ".repeat(Compiled::LONGEST));
        assert!(check("html", &long).is_ok());
        assert!(
            !COMPILED.holds(&long),
            "a source over the bound is not kept"
        );
    }

    #[test]
    fn unknown_variables_are_listed() {
        let source = "{{ first_name }} {{ properties.plan }} {{ site.name }} {{ frist_name }} \
                      {{ site.owner }} {% for t in tags %}{{ t }}{% endfor %} {{ event.data.x }}";
        assert_eq!(unknown_variables(source), ["frist_name", "site.owner"]);
    }
}
