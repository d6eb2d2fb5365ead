//! A segment's rules as one SQL condition on `contacts`: every value is a bind parameter, the
//! SQL text comes only from the constants below, and the project is part of the condition, so
//! no use of it can see another project's contacts. The subqueries on events, email log and
//! subscriptions are uncorrelated `IN`s where they can be (PostgreSQL hashes them once, also
//! under `OR` and `NOT`); every part is true or false, never null, so `NOT` is exact.

use diesel::expression::is_aggregate;
use diesel::expression::{AppearsOnTable, Expression, SelectableExpression, ValidGrouping};
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::result::QueryResult;
use diesel::sql_types::{Array, Bool, Double, Integer, Jsonb, Text, Uuid as SqlUuid};
use serde_json::Value;
use uuid::Uuid;

use super::contacts::like_pattern;
use super::schema::contacts;
use crate::domain::segment_rules::{Engagement, Predicate, PropertyTest, TextColumn};

/// The contacts of `project_id` that satisfy a predicate: a boolean expression on
/// `contacts`, for `filter` (boxed or not) and for `INSERT … SELECT`.
#[derive(Debug, Clone)]
pub struct Matches {
    project_id: Uuid,
    root: Node,
}

impl Matches {
    pub fn new(project_id: Uuid, predicate: &Predicate) -> Self {
        Self {
            project_id,
            root: Node::of(predicate),
        }
    }
}

/// A predicate ready to be written: constant SQL and owned bind values.
#[derive(Debug, Clone)]
enum Node {
    All(Vec<Node>),
    Any(Vec<Node>),
    Not(Box<Node>),
    Leaf(Vec<Part>),
}

#[derive(Debug, Clone)]
enum Part {
    Sql(&'static str),
    Str(String),
    Strs(Vec<String>),
    Json(Value),
    Days(i32),
    Number(f64),
    Id(Uuid),
    /// The project's id.
    Project,
}

use Part::{Days, Id, Json, Number, Project, Sql, Str, Strs};

fn column(c: TextColumn) -> &'static str {
    match c {
        TextColumn::Email => "contacts.email",
        TextColumn::FirstName => "contacts.first_name",
        TextColumn::LastName => "contacts.last_name",
    }
}

/// `contacts.id IN (SELECT … FROM <from> WHERE <project column> = $project <rest>)`.
fn contact_in(select_from: &'static str, mut rest: Vec<Part>) -> Vec<Part> {
    let mut parts = vec![Sql(select_from), Project];
    parts.append(&mut rest);
    parts.push(Sql(")"));
    parts
}

const EVENTS: &str = "contacts.id IN (SELECT ev.contact_id FROM events ev WHERE ev.project_id = ";
const EMAILS: &str = "contacts.id IN (SELECT e.contact_id FROM email_log e \
                      WHERE e.contact_id IS NOT NULL AND e.project_id = ";
/// The contact's engagement score now: the stored one faded since it was computed (no row: 0).
const SCORE_NOW: &str = "coalesce((SELECT s.score * CASE WHEN s.half_life_days = 0 THEN 1.0::float8 \
    ELSE power(0.5::float8, greatest(0, extract(epoch FROM now() - s.as_of))::float8 \
                            / 86400.0 / s.half_life_days) END \
    FROM contact_scores s WHERE s.contact_id = contacts.id AND s.project_id = ";
const SINCE_DAYS: &str = " >= now() - make_interval(days => ";

fn engaged_at(kind: Engagement) -> &'static str {
    match kind {
        // A click counts as an open (greatest() skips nulls).
        Engagement::Opened => " AND greatest(e.last_opened_at, e.last_clicked_at)",
        Engagement::Clicked => " AND e.last_clicked_at",
    }
}

fn property(path: &[String], test: &PropertyTest) -> Vec<Part> {
    let at = || Strs(path.to_vec());
    const VALUE: &str = "(contacts.properties #> ";
    match test {
        PropertyTest::Equals(v) => vec![
            Sql("coalesce((contacts.properties #> "),
            at(),
            Sql(") = "),
            Json(v.clone()),
            Sql(", false)"),
        ],
        PropertyTest::Exists => vec![Sql(VALUE), at(), Sql(") IS NOT NULL")],
        PropertyTest::Contains(Value::String(text)) => vec![
            Sql("coalesce(CASE jsonb_typeof(contacts.properties #> "),
            at(),
            Sql(") WHEN 'string' THEN (contacts.properties #>> "),
            at(),
            Sql(") ILIKE "),
            Str(like_pattern(text)),
            Sql(" WHEN 'array' THEN (contacts.properties #> "),
            at(),
            Sql(") @> jsonb_build_array("),
            Json(Value::String(text.clone())),
            Sql(") ELSE false END, false)"),
        ],
        PropertyTest::Contains(v) => vec![
            Sql("coalesce(jsonb_typeof(contacts.properties #> "),
            at(),
            Sql(") = 'array' AND (contacts.properties #> "),
            at(),
            Sql(") @> jsonb_build_array("),
            Json(v.clone()),
            Sql("), false)"),
        ],
        PropertyTest::Greater(v) | PropertyTest::Less(v) => vec![
            Sql("coalesce(jsonb_typeof(contacts.properties #> "),
            at(),
            Sql(") = jsonb_typeof("),
            Json(v.clone()),
            Sql(") AND (contacts.properties #> "),
            at(),
            Sql(if matches!(test, PropertyTest::Greater(_)) {
                ") > "
            } else {
                ") < "
            }),
            Json(v.clone()),
            Sql(", false)"),
        ],
    }
}

impl Node {
    fn of(predicate: &Predicate) -> Node {
        use Predicate as P;
        let leaf = match predicate {
            P::All(parts) => return Node::All(parts.iter().map(Node::of).collect()),
            P::Any(parts) => return Node::Any(parts.iter().map(Node::of).collect()),
            P::Not(inner) => return Node::Not(Box::new(Node::of(inner))),
            P::TextEquals(TextColumn::Email, value) => {
                vec![Sql("contacts.email = lower("), Str(value.clone()), Sql(")")]
            }
            P::TextEquals(c, value) => vec![
                Sql("coalesce(lower("),
                Sql(column(*c)),
                Sql(") = lower("),
                Str(value.clone()),
                Sql("), false)"),
            ],
            P::TextContains(c, value) => vec![
                Sql("coalesce("),
                Sql(column(*c)),
                Sql(" ILIKE "),
                Str(like_pattern(value)),
                Sql(", false)"),
            ],
            P::TextPresent(c) => vec![Sql("coalesce("), Sql(column(*c)), Sql(" <> '', false)")],
            P::HasTag(tag) => vec![Sql("contacts.tags @> "), Strs(vec![tag.clone()])],
            P::TagContains(text) => vec![
                Sql("EXISTS (SELECT 1 FROM unnest(contacts.tags) AS tag WHERE tag ILIKE "),
                Str(like_pattern(text)),
                Sql(")"),
            ],
            P::HasTags => vec![Sql("cardinality(contacts.tags) > 0")],
            P::HasEvent(name) => {
                contact_in(EVENTS, vec![Sql(" AND ev.name = "), Str(name.clone())])
            }
            P::EventContains(text) => contact_in(
                EVENTS,
                vec![Sql(" AND ev.name ILIKE "), Str(like_pattern(text))],
            ),
            P::HasEvents => contact_in(EVENTS, Vec::new()),
            P::SubscribedTo(site) => vec![
                Sql(
                    "contacts.id IN (SELECT cs.contact_id FROM contact_sites cs WHERE cs.site_id = ",
                ),
                Id(*site),
                Sql(" AND cs.status = 'subscribed')"),
            ],
            P::SubscribedToAny => vec![Sql("EXISTS (SELECT 1 FROM contact_sites cs \
                 WHERE cs.contact_id = contacts.id AND cs.status = 'subscribed')")],
            P::EngagedWithin(kind, days) => contact_in(
                EMAILS,
                vec![
                    Sql(engaged_at(*kind)),
                    Sql(SINCE_DAYS),
                    Days(*days),
                    Sql(")"),
                ],
            ),
            P::EverEngaged(kind) => {
                contact_in(EMAILS, vec![Sql(engaged_at(*kind)), Sql(" IS NOT NULL")])
            }
            P::CreatedWithin(days) => vec![
                Sql("contacts.created_at"),
                Sql(SINCE_DAYS),
                Days(*days),
                Sql(")"),
            ],
            P::ScoreAbove(n) | P::ScoreBelow(n) => vec![
                Sql(SCORE_NOW),
                Project,
                Sql(if matches!(predicate, P::ScoreAbove(_)) {
                    "), 0) > "
                } else {
                    "), 0) < "
                }),
                Number(*n),
            ],
            P::Property { path, test } => property(path, test),
        };
        Node::Leaf(leaf)
    }

    fn walk<'b>(&'b self, project_id: &'b Uuid, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        match self {
            Node::All(parts) | Node::Any(parts) => {
                let joint = if matches!(self, Node::All(_)) {
                    " AND "
                } else {
                    " OR "
                };
                out.push_sql("(");
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        out.push_sql(joint);
                    }
                    part.walk(project_id, out.reborrow())?;
                }
                out.push_sql(")");
            }
            Node::Not(inner) => {
                out.push_sql("(NOT ");
                inner.walk(project_id, out.reborrow())?;
                out.push_sql(")");
            }
            Node::Leaf(parts) => {
                out.push_sql("(");
                for part in parts {
                    match part {
                        Sql(sql) => out.push_sql(sql),
                        Str(text) => out.push_bind_param::<Text, _>(text)?,
                        Strs(texts) => out.push_bind_param::<Array<Text>, _>(texts)?,
                        Json(value) => out.push_bind_param::<Jsonb, _>(value)?,
                        Days(days) => out.push_bind_param::<Integer, _>(days)?,
                        Number(n) => out.push_bind_param::<Double, _>(n)?,
                        Id(id) => out.push_bind_param::<SqlUuid, _>(id)?,
                        Project => out.push_bind_param::<SqlUuid, _>(project_id)?,
                    }
                }
                out.push_sql(")");
            }
        }
        Ok(())
    }
}

impl QueryFragment<Pg> for Matches {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        // The text depends on the rules: one prepared statement per segment would only fill
        // the connection's statement cache.
        out.unsafe_to_cache_prepared();
        out.push_sql("(contacts.project_id = ");
        out.push_bind_param::<SqlUuid, _>(&self.project_id)?;
        out.push_sql(" AND ");
        self.root.walk(&self.project_id, out.reborrow())?;
        out.push_sql(")");
        Ok(())
    }
}

impl Expression for Matches {
    type SqlType = Bool;
}

impl AppearsOnTable<contacts::table> for Matches {}

impl SelectableExpression<contacts::table> for Matches {}

impl<GroupBy> ValidGrouping<GroupBy> for Matches {
    type IsAggregate = is_aggregate::Never;
}

impl QueryId for Matches {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}
