//! Segment rules (ruled): a group `{"all": [...]}` or `{"any": [...]}` of conditions
//! `{"field", "op", "value"}` and nested groups, read into a [`Predicate`] on one contact.
//! What each field and operator means, and the limits, are stated once, in the schema
//! ([`super::segment_schema`]); requests are checked against it before they get here.

use http_kit::ApiError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Groups nest at most this deep; the rules object itself is the first level.
pub const MAX_DEPTH: usize = 4;
/// Items (conditions and groups) in one group.
pub const MAX_GROUP_ITEMS: usize = 50;
/// Conditions in all the groups of one segment together.
pub const MAX_CONDITIONS: usize = 100;
/// The `*_within_days` fields count 1..=this many days.
pub const MAX_DAYS: i64 = 3650;
/// Longest text value of a condition.
pub const MAX_VALUE_CHARS: usize = 500;
/// Longest `field` (`properties.` and a dotted path included).
pub const MAX_FIELD_CHARS: usize = 200;
/// The `score` field compares with numbers in -this..=this.
pub const MAX_SCORE: i32 = 1_000_000;
/// Longest tag and event name: what contacts and `/events` store.
pub const MAX_TAG_CHARS: usize = 100;
pub const MAX_EVENT_CHARS: usize = 200;

/// A group: every item holds (`all`), or at least one does (`any`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    All(Vec<Item>),
    Any(Vec<Item>),
}

/// An item of a group: a condition (it has a `field`) or a nested group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Item {
    Condition(Condition),
    Group(Group),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    pub field: String,
    pub op: Op,
    pub value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Eq,
    Neq,
    Contains,
    Exists,
    Gt,
    Lt,
}

impl Op {
    pub const ALL: [Op; 6] = [Op::Eq, Op::Neq, Op::Contains, Op::Exists, Op::Gt, Op::Lt];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Neq => "neq",
            Op::Contains => "contains",
            Op::Exists => "exists",
            Op::Gt => "gt",
            Op::Lt => "lt",
        }
    }
}

/// A text column of the contact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextColumn {
    Email,
    FirstName,
    LastName,
}

/// What the email log records of a contact's engagement. A click counts as an open too
/// (as in analytics: a clicked email was opened, whether or not its pixel loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engagement {
    Opened,
    Clicked,
}

/// A test on one contact of the project. Every one is true or false (never unknown), so a
/// [`Predicate::Not`] is its exact complement.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    All(Vec<Predicate>),
    Any(Vec<Predicate>),
    Not(Box<Predicate>),
    /// Equal, ignoring case.
    TextEquals(TextColumn, String),
    /// Holds the text, ignoring case.
    TextContains(TextColumn, String),
    /// Set and not empty.
    TextPresent(TextColumn),
    HasTag(String),
    /// A tag holds the text, ignoring case.
    TagContains(String),
    HasTags,
    /// Has recorded the event of exactly this name.
    HasEvent(String),
    /// Has recorded an event whose name holds the text, ignoring case.
    EventContains(String),
    HasEvents,
    /// Subscribed (not unsubscribed) to the site.
    SubscribedTo(Uuid),
    SubscribedToAny,
    /// Within the last so many days.
    EngagedWithin(Engagement, i32),
    EverEngaged(Engagement),
    CreatedWithin(i32),
    /// The engagement score now is above (below) the number.
    ScoreAbove(f64),
    ScoreBelow(f64),
    /// A value at a path into `properties` (nested objects, one key per step).
    Property {
        path: Vec<String>,
        test: PropertyTest,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum PropertyTest {
    /// Equal as JSON (a number equals only a number: `1` and `1.0` do, `"1"` does not).
    Equals(Value),
    /// A string property holding the text (ignoring case), or an array with the element.
    Contains(Value),
    /// The key is there (whatever its value, `null` included).
    Exists,
    /// Greater or smaller than a value of the same JSON type: numbers by value, strings in
    /// the database's text order (ISO dates compare as dates).
    Greater(Value),
    Less(Value),
}

/// The rules read into a predicate, with the sites they name (and where).
#[derive(Debug, Clone)]
pub struct Compiled {
    pub predicate: Predicate,
    /// `(path, site id)` of every `site_id` condition naming a site.
    pub sites: Vec<(String, Uuid)>,
}

impl Group {
    fn items(&self) -> &[Item] {
        match self {
            Group::All(items) | Group::Any(items) => items,
        }
    }

    fn key(&self) -> &'static str {
        match self {
            Group::All(_) => "all",
            Group::Any(_) => "any",
        }
    }

    /// Conditions in this group and every group nested in it.
    pub fn conditions(&self) -> usize {
        self.items()
            .iter()
            .map(|item| match item {
                Item::Condition(_) => 1,
                Item::Group(group) => group.conditions(),
            })
            .sum()
    }

    /// The rules as a predicate; `at` is where they are in the request (`rules`), for the
    /// 400 naming the part at fault. The schema has been checked already, so a refusal here
    /// means rules that did not come through it.
    pub fn compile(&self, at: &str) -> Result<Compiled, ApiError> {
        let count = self.conditions();
        if count > MAX_CONDITIONS {
            return Err(ApiError::invalid_field(
                at,
                &format!("holds {count} conditions: at most {MAX_CONDITIONS} are allowed"),
            ));
        }
        let mut sites = Vec::new();
        let predicate = self.predicate(at, 1, &mut sites)?;
        Ok(Compiled { predicate, sites })
    }

    fn predicate(
        &self,
        at: &str,
        depth: usize,
        sites: &mut Vec<(String, Uuid)>,
    ) -> Result<Predicate, ApiError> {
        let here = format!("{at}.{}", self.key());
        let items = self.items();
        if items.is_empty() || items.len() > MAX_GROUP_ITEMS {
            return Err(ApiError::invalid_field(
                &here,
                &format!("must have 1 to {MAX_GROUP_ITEMS} items"),
            ));
        }
        let mut parts = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let at = format!("{here}[{i}]");
            parts.push(match item {
                Item::Condition(condition) => condition.predicate(&at, sites)?,
                Item::Group(_) if depth == MAX_DEPTH => {
                    return Err(ApiError::invalid_field(
                        &at,
                        &format!("groups nest at most {MAX_DEPTH} deep"),
                    ));
                }
                Item::Group(group) => group.predicate(&at, depth + 1, sites)?,
            });
        }
        Ok(match self {
            Group::All(_) => Predicate::All(parts),
            Group::Any(_) => Predicate::Any(parts),
        })
    }
}

/// What a condition's `field` names.
#[derive(Debug, Clone, PartialEq)]
enum Field {
    Text(TextColumn),
    Tag,
    Event,
    Site,
    Engaged(Engagement),
    Created,
    Score,
    Property(Vec<String>),
}

impl Field {
    fn parse(name: &str) -> Option<Field> {
        Some(match name {
            "email" => Field::Text(TextColumn::Email),
            "first_name" => Field::Text(TextColumn::FirstName),
            "last_name" => Field::Text(TextColumn::LastName),
            "tag" => Field::Tag,
            "event" => Field::Event,
            "site_id" => Field::Site,
            "opened_within_days" => Field::Engaged(Engagement::Opened),
            "clicked_within_days" => Field::Engaged(Engagement::Clicked),
            "created_within_days" => Field::Created,
            "score" => Field::Score,
            _ => {
                let path: Vec<String> = name
                    .strip_prefix("properties.")?
                    .split('.')
                    .map(str::to_owned)
                    .collect();
                if path.iter().any(String::is_empty) {
                    return None;
                }
                Field::Property(path)
            }
        })
    }
}

impl Condition {
    fn predicate(&self, at: &str, sites: &mut Vec<(String, Uuid)>) -> Result<Predicate, ApiError> {
        let field = Field::parse(&self.field).ok_or_else(|| {
            ApiError::invalid_field(&format!("{at}.field"), "is not a segment field")
        })?;
        let value_at = format!("{at}.value");
        let bad_value = |problem: &str| ApiError::invalid_field(&value_at, problem);
        let text = || {
            self.value
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| bad_value("must be a non-empty string"))
        };
        let days = || {
            self.value
                .as_i64()
                .filter(|d| (1..=MAX_DAYS).contains(d))
                .and_then(|d| i32::try_from(d).ok())
                .ok_or_else(|| bad_value(&format!("must be an integer between 1 and {MAX_DAYS}")))
        };
        let number = || {
            self.value
                .as_f64()
                .filter(|n| (-f64::from(MAX_SCORE)..=f64::from(MAX_SCORE)).contains(n))
                .ok_or_else(|| {
                    bad_value(&format!(
                        "must be a number between -{MAX_SCORE} and {MAX_SCORE}"
                    ))
                })
        };
        // `neq` is `eq` negated, `exists: false` is `exists: true` negated.
        let (op, negated) = match self.op {
            Op::Neq => (Op::Eq, true),
            Op::Exists => {
                let present = self
                    .value
                    .as_bool()
                    .ok_or_else(|| bad_value("must be true or false"))?;
                (Op::Exists, !present)
            }
            op => (op, false),
        };
        use Predicate as P;
        let predicate = match (field, op) {
            (Field::Text(column), Op::Eq) => P::TextEquals(column, text()?),
            (Field::Text(column), Op::Contains) => P::TextContains(column, text()?),
            (Field::Text(column), Op::Exists) => P::TextPresent(column),
            (Field::Tag, Op::Eq) => P::HasTag(text()?),
            (Field::Tag, Op::Contains) => P::TagContains(text()?),
            (Field::Tag, Op::Exists) => P::HasTags,
            (Field::Event, Op::Eq) => P::HasEvent(text()?),
            (Field::Event, Op::Contains) => P::EventContains(text()?),
            (Field::Event, Op::Exists) => P::HasEvents,
            (Field::Site, Op::Eq) => {
                let site = text()?
                    .parse()
                    .map_err(|_| bad_value("must be a site id (a UUID)"))?;
                sites.push((value_at.clone(), site));
                P::SubscribedTo(site)
            }
            (Field::Site, Op::Exists) => P::SubscribedToAny,
            (Field::Engaged(kind), Op::Eq) => P::EngagedWithin(kind, days()?),
            (Field::Engaged(kind), Op::Exists) => P::EverEngaged(kind),
            (Field::Created, Op::Eq) => P::CreatedWithin(days()?),
            (Field::Score, Op::Gt) => P::ScoreAbove(number()?),
            (Field::Score, Op::Lt) => P::ScoreBelow(number()?),
            (Field::Property(path), op) => P::Property {
                path,
                test: match op {
                    Op::Eq => PropertyTest::Equals(self.value.clone()),
                    Op::Contains => PropertyTest::Contains(self.value.clone()),
                    Op::Gt => PropertyTest::Greater(self.value.clone()),
                    Op::Lt => PropertyTest::Less(self.value.clone()),
                    Op::Exists | Op::Neq => PropertyTest::Exists,
                },
            },
            (_, op) => {
                return Err(ApiError::invalid_field(
                    &format!("{at}.op"),
                    &format!("`{}` does not apply to `{}`", op.as_str(), self.field),
                ));
            }
        };
        Ok(if negated {
            P::Not(Box::new(predicate))
        } else {
            predicate
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn compile(rules: Value) -> Result<Compiled, String> {
        let group: Group = serde_json::from_value(rules).unwrap();
        group.compile("rules").map_err(|e| {
            let field = e.details().unwrap()["field"].as_str().unwrap().to_owned();
            assert!(
                e.message.starts_with(&format!("{field}: ")),
                "{}",
                e.message
            );
            e.message.to_string()
        })
    }

    #[test]
    fn groups_and_conditions_read_into_predicates() {
        let site = Uuid::now_v7();
        let compiled = compile(json!({"all": [
            {"field": "tag", "op": "eq", "value": "vip"},
            {"any": [
                {"field": "opened_within_days", "op": "eq", "value": 30},
                {"field": "properties.plan.tier", "op": "neq", "value": "free"},
                {"field": "first_name", "op": "exists", "value": false},
            ]},
            {"field": "site_id", "op": "eq", "value": site.to_string()},
            {"field": "score", "op": "gt", "value": 2.5},
        ]}))
        .unwrap();
        assert_eq!(
            compiled.predicate,
            Predicate::All(vec![
                Predicate::HasTag("vip".into()),
                Predicate::Any(vec![
                    Predicate::EngagedWithin(Engagement::Opened, 30),
                    Predicate::Not(Box::new(Predicate::Property {
                        path: vec!["plan".into(), "tier".into()],
                        test: PropertyTest::Equals(json!("free")),
                    })),
                    Predicate::Not(Box::new(Predicate::TextPresent(TextColumn::FirstName))),
                ]),
                Predicate::SubscribedTo(site),
                Predicate::ScoreAbove(2.5),
            ])
        );
        assert_eq!(compiled.sites, [("rules.all[2].value".to_owned(), site)]);
    }

    #[test]
    fn a_bad_part_is_named_by_its_path() {
        let refused = |rules| compile(rules).unwrap_err();
        assert_eq!(
            refused(json!({"any": [{"field": "tag", "op": "eq", "value": "a"},
                                   {"field": "tag", "op": "gt", "value": "b"}]})),
            "rules.any[1].op: `gt` does not apply to `tag`"
        );
        assert_eq!(
            refused(json!({"all": [{"field": "score", "op": "eq", "value": 1}]})),
            "rules.all[0].op: `eq` does not apply to `score`"
        );
        assert!(
            refused(json!({"all": [{"field": "score", "op": "lt", "value": "1"}]}))
                .starts_with("rules.all[0].value: must be a number")
        );
        assert!(
            refused(json!({"all": [{"any": [{"field": "created_within_days", "op": "eq", "value": 0}]}]}))
                .starts_with("rules.all[0].any[0].value: ")
        );
        assert!(
            refused(json!({"all": [{"field": "properties.", "op": "exists", "value": true}]}))
                .starts_with("rules.all[0].field: ")
        );
        let nested = json!({"all": [{"all": [{"all": [{"all": [{"all": [
            {"field": "tag", "op": "exists", "value": true}]}]}]}]}]});
        assert!(refused(nested).starts_with("rules.all[0].all[0].all[0].all[0]: groups nest"));
        let many: Vec<Value> = (0..=MAX_CONDITIONS)
            .map(|i| json!({"field": "tag", "op": "eq", "value": format!("t{i}")}))
            .collect();
        let halves = json!({"any": [{"all": many[..50]}, {"all": many[50..]}]});
        assert!(refused(halves).starts_with("rules: holds 101 conditions"));
    }
}
