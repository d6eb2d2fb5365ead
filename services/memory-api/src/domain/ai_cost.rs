//! AI cost telemetry: the payload of an `ai_cost` event, and costs in exact decimal.
//!
//! A cost is kept as decimal text from the request to PostgreSQL (`numeric`), summed there, and
//! written back into JSON as a number with exactly the digits PostgreSQL summed: no value
//! passes through floating-point arithmetic.

use std::cell::Cell;
use std::io;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// The `event_type` of AI cost telemetry.
pub const EVENT_TYPE: &str = "ai_cost";
/// The largest cost of one event, in USD.
pub const COST_MAX_USD: u64 = 100_000;
/// At most this many decimal places in a cost.
pub const COST_SCALE: usize = 10;
/// The largest token count of one event, per direction.
pub const TOKENS_MAX: u64 = 1_000_000_000;
pub const PRODUCT_MAX: usize = 100;
pub const MODEL_MAX: usize = 200;

/// The typed payload of an `ai_cost` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AiCost {
    pub product: String,
    pub model: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Canonical decimal text: digits, an optional fraction without trailing zeros.
    pub cost_usd: String,
}

/// A refused payload member: its path under the body, and what is wrong.
#[derive(Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub problem: String,
}

fn problem(member: &str, problem: impl Into<String>) -> Problem {
    Problem {
        path: format!("payload.{member}"),
        problem: problem.into(),
    }
}

/// Reads the payload of an `ai_cost` event (other members are kept by the event, unread here).
pub fn read(payload: &Map<String, Value>) -> Result<AiCost, Problem> {
    Ok(AiCost {
        product: text(payload, "product", PRODUCT_MAX)?,
        model: text(payload, "model", MODEL_MAX)?,
        input_tokens: tokens(payload, "input_tokens")?,
        output_tokens: tokens(payload, "output_tokens")?,
        cost_usd: cost(payload.get("cost_usd"))?,
    })
}

fn text(payload: &Map<String, Value>, member: &str, max: usize) -> Result<String, Problem> {
    let Some(value) = payload.get(member).filter(|v| !v.is_null()) else {
        return Err(problem(member, "is required for an ai_cost event"));
    };
    let Some(raw) = value.as_str() else {
        return Err(problem(member, "must be a string"));
    };
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(problem(member, "must not be blank"));
    }
    if trimmed.chars().count() > max {
        return Err(problem(member, format!("must be at most {max} characters")));
    }
    Ok(trimmed.to_owned())
}

fn tokens(payload: &Map<String, Value>, member: &str) -> Result<i64, Problem> {
    let Some(value) = payload.get(member).filter(|v| !v.is_null()) else {
        return Ok(0);
    };
    match value.as_u64() {
        Some(n) if n <= TOKENS_MAX => Ok(i64::try_from(n).unwrap_or(i64::MAX)),
        _ => Err(problem(
            member,
            format!("must be an integer from 0 to {TOKENS_MAX}"),
        )),
    }
}

fn cost_rule() -> String {
    format!(
        "must be a number (or a decimal string) from 0 to {COST_MAX_USD} with at most \
         {COST_SCALE} decimal places"
    )
}

/// The cost as canonical decimal text. A JSON number is read as the shortest decimal that
/// names the same double (what was written, for every value these bounds allow: at most 15
/// significant digits); a string must be plain decimal digits.
fn cost(value: Option<&Value>) -> Result<String, Problem> {
    let text = match value {
        None | Some(Value::Null) => {
            return Err(problem("cost_usd", "is required for an ai_cost event"));
        }
        Some(Value::Number(n)) => {
            if let Some(whole) = n.as_u64() {
                whole.to_string()
            } else {
                match n.as_f64() {
                    // `{}` of a double is its shortest round-trip decimal, never an exponent.
                    Some(f) if f.is_finite() && f >= 0.0 => format!("{}", f.abs()),
                    _ => return Err(problem("cost_usd", cost_rule())),
                }
            }
        }
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(problem("cost_usd", cost_rule())),
    };
    canonical_decimal(&text).ok_or_else(|| problem("cost_usd", cost_rule()))
}

/// `text` as canonical decimal (no leading zeros, no trailing fraction zeros) when it is plain
/// digits with an optional fraction, within 0..=COST_MAX_USD and COST_SCALE places.
pub fn canonical_decimal(text: &str) -> Option<String> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || (text.contains('.') && fraction.is_empty())
    {
        return None;
    }
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > COST_SCALE {
        return None;
    }
    let whole = whole.trim_start_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    let whole_value: u64 = if whole.len() > 7 {
        return None;
    } else {
        whole.parse().ok()?
    };
    if whole_value > COST_MAX_USD || (whole_value == COST_MAX_USD && !fraction.is_empty()) {
        return None;
    }
    Some(if fraction.is_empty() {
        whole.to_owned()
    } else {
        format!("{whole}.{fraction}")
    })
}

/// An exact decimal amount in USD, as PostgreSQL's `numeric` text renders it. Written by
/// [`to_exact_json`] as a JSON number with exactly these digits; any other serializer gets a
/// string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usd(String);

impl Usd {
    /// `text` when it is plain decimal (digits, an optional fraction), else `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
        let plain = !whole.is_empty()
            && !fraction.is_empty()
            && whole.bytes().all(|b| b.is_ascii_digit())
            && fraction.bytes().all(|b| b.is_ascii_digit());
        plain.then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

thread_local! {
    /// Set while a [`Usd`] serializes, so that [`ExactFormatter`] writes its digits unquoted.
    static RAW_NUMBER: Cell<bool> = const { Cell::new(false) };
}

impl Serialize for Usd {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RAW_NUMBER.set(true);
        let result = serializer.serialize_str(&self.0);
        RAW_NUMBER.set(false);
        result
    }
}

/// serde_json's compact output, except that a [`Usd`] is written as a bare number.
#[derive(Default)]
struct ExactFormatter {
    raw: bool,
}

impl serde_json::ser::Formatter for ExactFormatter {
    fn begin_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.raw = RAW_NUMBER.get();
        if self.raw {
            Ok(())
        } else {
            writer.write_all(b"\"")
        }
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        if std::mem::take(&mut self.raw) {
            Ok(())
        } else {
            writer.write_all(b"\"")
        }
    }
}

/// `value` as compact JSON, its [`Usd`] amounts as exact JSON numbers.
pub fn to_exact_json<T: Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(512);
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut out, ExactFormatter::default());
    let result = value.serialize(&mut serializer);
    RAW_NUMBER.set(false);
    result.map(|()| out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn payload(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn costs_are_read_as_exact_decimals() {
        for (given, expected) in [
            (json!(0.1), "0.1"),
            (json!(0.2), "0.2"),
            (json!(0), "0"),
            (json!(-0.0), "0"),
            (json!(12), "12"),
            (json!(0.0000000001), "0.0000000001"),
            (json!(99999.9999999999), "99999.9999999999"),
            (json!(100000), "100000"),
            (json!("0.30"), "0.3"),
            (json!("007.5"), "7.5"),
            (json!("100000.000"), "100000"),
        ] {
            assert_eq!(cost(Some(&given)).unwrap(), expected, "{given}");
        }
        for bad in [
            json!(-0.01),
            json!(-1),
            json!(100000.5),
            json!(0.00000000001),
            json!(1e20),
            json!("1e3"),
            json!("-1"),
            json!(".5"),
            json!("5."),
            json!(""),
            json!(" 1"),
            json!("0.00000000001"),
            json!("100000.1"),
            json!("12345678"),
            json!(true),
            json!([1]),
        ] {
            assert!(cost(Some(&bad)).is_err(), "{bad}");
        }
        assert!(cost(None).is_err());
    }

    #[test]
    fn the_payload_is_checked_member_by_member() {
        let ok = read(&payload(json!({"product": " atlas ", "model": "gpt-x",
            "input_tokens": 10, "output_tokens": 0, "cost_usd": 0.1, "extra": 1})))
        .unwrap();
        assert_eq!(ok.product, "atlas");
        assert_eq!(ok.input_tokens, 10);
        assert_eq!(ok.cost_usd, "0.1");
        let defaults = read(&payload(
            json!({"product": "a", "model": "m", "cost_usd": "1"}),
        ))
        .unwrap();
        assert_eq!((defaults.input_tokens, defaults.output_tokens), (0, 0));
        for (body, path) in [
            (json!({"model": "m", "cost_usd": 1}), "payload.product"),
            (
                json!({"product": " ", "model": "m", "cost_usd": 1}),
                "payload.product",
            ),
            (
                json!({"product": "p".repeat(101), "model": "m", "cost_usd": 1}),
                "payload.product",
            ),
            (
                json!({"product": "p", "model": 3, "cost_usd": 1}),
                "payload.model",
            ),
            (
                json!({"product": "p", "model": "m", "input_tokens": -1, "cost_usd": 1}),
                "payload.input_tokens",
            ),
            (
                json!({"product": "p", "model": "m", "output_tokens": 1.5, "cost_usd": 1}),
                "payload.output_tokens",
            ),
            (
                json!({"product": "p", "model": "m", "output_tokens": 1_000_000_001u64, "cost_usd": 1}),
                "payload.output_tokens",
            ),
            (json!({"product": "p", "model": "m"}), "payload.cost_usd"),
        ] {
            assert_eq!(
                read(&payload(body.clone())).unwrap_err().path,
                path,
                "{body}"
            );
        }
    }

    #[derive(Serialize)]
    struct Sample {
        name: &'static str,
        total: Usd,
        parts: Vec<Usd>,
    }

    #[test]
    fn usd_is_written_as_an_exact_number() {
        let sample = Sample {
            name: "a \"quoted\" name",
            total: Usd::parse("0.3").unwrap(),
            parts: vec![
                Usd::parse("12345678901234567890.0123456789").unwrap(),
                Usd::parse("0").unwrap(),
            ],
        };
        let text = String::from_utf8(to_exact_json(&sample).unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"name":"a \"quoted\" name","total":0.3,"parts":[12345678901234567890.0123456789,0]}"#
        );
        // Any other serializer: a string.
        assert_eq!(serde_json::to_value(&sample).unwrap()["total"], "0.3");
        for bad in ["", "1e3", "-1", ".5", "1.", "NaN"] {
            assert!(Usd::parse(bad).is_none(), "{bad}");
        }
    }
}
