//! What a platform's webhook says, read from its documented shape: the event's id and type,
//! the customer's address, and the order's total.
//! - Stripe: an Event `{id: "evt_…", type, data: {object}}`; a Checkout Session's address is
//!   `customer_details.email` (or `customer_email`), its total `amount_total` in the currency's
//!   minor units; other objects' `receipt_email` or `email`.
//! - Shopify: the topic and the webhook id come in headers; an order's address is `email` (or
//!   `customer.email`, `contact_email`), its total `total_price`, a decimal string.

use serde_json::Value;

/// An order's total, in the currency's major units.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderTotal {
    /// The platform's id of the order (a Checkout Session's `cs_…`, a Shopify order's id).
    pub order_id: Option<String>,
    pub revenue: f64,
    /// ISO 4217, uppercase.
    pub currency: String,
}

/// One webhook, as the triggers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommerceEvent {
    pub event_id: String,
    pub event_type: String,
    /// The customer's address as the platform gave it (not yet checked).
    pub email: Option<String>,
    pub total: Option<OrderTotal>,
}

/// Why a body was refused (400 naming the field).
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed {
    pub field: &'static str,
    pub problem: &'static str,
}

fn malformed(field: &'static str, problem: &'static str) -> Malformed {
    Malformed { field, problem }
}

/// Event ids and types are short printable strings on both platforms.
fn identifier(field: &'static str, value: Option<&str>) -> Result<String, Malformed> {
    let value = value.map(str::trim).unwrap_or_default();
    if value.is_empty() {
        return Err(malformed(field, "is required"));
    }
    if value.len() > 255 || value.chars().any(char::is_control) {
        return Err(malformed(
            field,
            "must be at most 255 characters without control characters",
        ));
    }
    Ok(value.to_owned())
}

fn text<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))?
        .as_str()
        .filter(|s| !s.trim().is_empty())
}

/// Stripe's zero-decimal and three-decimal currencies (its "Supported currencies" page);
/// every other currency has two decimals.
fn minor_unit_exponent(currency: &str) -> i32 {
    const ZERO: &[&str] = &[
        "BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV",
        "XAF", "XOF", "XPF",
    ];
    const THREE: &[&str] = &["BHD", "JOD", "KWD", "OMR", "TND"];
    if ZERO.contains(&currency) {
        0
    } else if THREE.contains(&currency) {
        3
    } else {
        2
    }
}

/// The largest revenue a conversion takes (so that the analytics sums stay within a double).
const MAX_REVENUE: f64 = 1_000_000_000_000.0;

fn currency(value: Option<&str>) -> Option<String> {
    let code = value?.trim().to_ascii_uppercase();
    (code.len() == 3 && code.chars().all(|c| c.is_ascii_alphabetic())).then_some(code)
}

/// A Stripe Event.
pub fn stripe(body: &Value) -> Result<CommerceEvent, Malformed> {
    let event_id = identifier("id", body.get("id").and_then(Value::as_str))?;
    let event_type = identifier("type", body.get("type").and_then(Value::as_str))?;
    let object = body
        .get("data")
        .and_then(|d| d.get("object"))
        .filter(|o| o.is_object())
        .ok_or_else(|| malformed("data.object", "is required"))?;
    let email = text(object, &["customer_details", "email"])
        .or_else(|| text(object, &["customer_email"]))
        .or_else(|| text(object, &["receipt_email"]))
        .or_else(|| text(object, &["email"]))
        .map(str::to_owned);
    let total = object
        .get("amount_total")
        .and_then(Value::as_i64)
        .zip(currency(object.get("currency").and_then(Value::as_str)))
        .filter(|(amount, _)| *amount >= 0)
        .map(|(amount, currency)| OrderTotal {
            order_id: text(object, &["id"]).map(str::to_owned),
            #[allow(clippy::cast_precision_loss)] // minor units far below 2^53
            revenue: amount as f64 / 10f64.powi(minor_unit_exponent(&currency)),
            currency,
        })
        .filter(|total| total.revenue <= MAX_REVENUE);
    Ok(CommerceEvent {
        event_id,
        event_type,
        email,
        total,
    })
}

/// A Shopify webhook: its topic and id (headers) and its body.
pub fn shopify(
    topic: Option<&str>,
    webhook_id: Option<&str>,
    body: &Value,
) -> Result<CommerceEvent, Malformed> {
    let event_type = identifier("X-Shopify-Topic", topic)?;
    let event_id = identifier("X-Shopify-Webhook-Id", webhook_id)?;
    let email = text(body, &["email"])
        .or_else(|| text(body, &["customer", "email"]))
        .or_else(|| text(body, &["contact_email"]))
        .map(str::to_owned);
    let total = text(body, &["total_price"])
        .and_then(|price| price.trim().parse::<f64>().ok())
        .filter(|price| price.is_finite() && (0.0..=MAX_REVENUE).contains(price))
        .zip(currency(body.get("currency").and_then(Value::as_str)))
        .map(|(revenue, currency)| OrderTotal {
            order_id: match body.get("id") {
                Some(Value::Number(n)) => Some(n.to_string()),
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                _ => None,
            },
            revenue,
            currency,
        });
    Ok(CommerceEvent {
        event_id,
        event_type,
        email,
        total,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_checkout_session_gives_its_customer_and_its_total_in_major_units() {
        let event = json!({
            "id": "evt_1", "object": "event", "type": "checkout.session.completed",
            "data": {"object": {"id": "cs_test_a1", "object": "checkout.session",
                "amount_total": 4999, "currency": "usd",
                "customer_details": {"email": "Buyer@Shop.io", "name": "B"},
                "customer_email": null}}
        });
        assert_eq!(
            stripe(&event),
            Ok(CommerceEvent {
                event_id: "evt_1".into(),
                event_type: "checkout.session.completed".into(),
                email: Some("Buyer@Shop.io".into()),
                total: Some(OrderTotal {
                    order_id: Some("cs_test_a1".into()),
                    revenue: 49.99,
                    currency: "USD".into(),
                }),
            })
        );
        let yen = json!({"id": "evt_2", "type": "checkout.session.completed",
            "data": {"object": {"amount_total": 500, "currency": "jpy", "customer_email": "a@b.io"}}});
        let event = stripe(&yen).unwrap();
        assert_eq!(event.email.as_deref(), Some("a@b.io"));
        assert_eq!(event.total.unwrap().revenue, 500.0);
        assert_eq!(
            stripe(&json!({"id": "evt_3", "type": "x"})),
            Err(malformed("data.object", "is required"))
        );
        assert_eq!(
            stripe(&json!({"type": "x", "data": {"object": {}}})),
            Err(malformed("id", "is required"))
        );
    }

    #[test]
    fn a_shopify_order_gives_its_customer_and_its_total_price() {
        let order = json!({"id": 820_982_911_946_154_508_u64, "email": "jon@example.com",
            "total_price": "199.65", "currency": "USD", "customer": {"email": "other@x.io"}});
        let event = shopify(Some("orders/create"), Some("b54557e4"), &order).unwrap();
        assert_eq!(event.event_type, "orders/create");
        assert_eq!(event.email.as_deref(), Some("jon@example.com"));
        assert_eq!(
            event.total,
            Some(OrderTotal {
                order_id: Some("820982911946154508".into()),
                revenue: 199.65,
                currency: "USD".into(),
            })
        );
        let guest = json!({"id": 1, "email": "", "customer": {"email": "c@x.io"}});
        let event = shopify(Some("orders/paid"), Some("w1"), &guest).unwrap();
        assert_eq!(event.email.as_deref(), Some("c@x.io"));
        assert_eq!(event.total, None);
        assert_eq!(
            shopify(None, Some("w1"), &guest),
            Err(malformed("X-Shopify-Topic", "is required"))
        );
    }
}
