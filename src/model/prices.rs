//! Prices per model, in USD per million tokens: the table shipped with cmstore
//! (`resources/prices.toml`) and the overrides of cmstore.toml's `[prices."<model>"]`. Pure:
//! the store holds the effective table and prices usage from it when read (docs/usage.md).

use std::collections::BTreeMap;

/// The shipped table, embedded at build time.
const SHIPPED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/resources/prices.toml"
));

/// The five rate names, as cmstore.toml and `resources/prices.toml` spell them.
pub const RATES: [&str; 5] = [
    "input",
    "output",
    "cache_write_5m",
    "cache_write_1h",
    "cache_read",
];

/// One model's rates, USD per million tokens, in the order of [`RATES`]; each finite and
/// not negative.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    /// input, output, cache write 5 m, cache write 1 h, cache read.
    pub rates: [f64; 5],
    /// When the price was taken, when known.
    pub as_of: Option<String>,
    /// Where it comes from: `shipped` or `cmstore.toml`.
    pub origin: &'static str,
}

// Every rate is finite ([`parse_price`] refuses the others), so equality is reflexive.
impl Eq for Price {}

/// The effective price table, by exact model id.
pub type PriceTable = BTreeMap<String, Price>;

/// The shipped table.
pub fn shipped() -> PriceTable {
    let table: toml::Table = SHIPPED.parse().expect("resources/prices.toml parses");
    let as_of = table
        .get("as_of")
        .and_then(|v| v.as_str())
        .map(str::to_owned);
    let models = table
        .get("models")
        .and_then(|v| v.as_table())
        .expect("resources/prices.toml has [models]");
    models
        .iter()
        .map(|(model, v)| {
            let mut price = parse_price(v, "shipped")
                .unwrap_or_else(|e| panic!("resources/prices.toml: {model}: {e}"));
            price.as_of = price.as_of.or_else(|| as_of.clone());
            (model.clone(), price)
        })
        .collect()
}

/// The shipped table with `overrides` (cmstore.toml) replacing or adding rows.
pub fn effective(overrides: &PriceTable) -> PriceTable {
    let mut table = shipped();
    table.extend(overrides.iter().map(|(m, p)| (m.clone(), p.clone())));
    table
}

/// One model's rates from a TOML table holding all five of [`RATES`] (and optionally
/// `as_of`); the error says what is wrong.
pub fn parse_price(value: &toml::Value, origin: &'static str) -> Result<Price, String> {
    let table = value
        .as_table()
        .ok_or_else(|| format!("expected a table of {}", RATES.join(", ")))?;
    let mut rates = [0.0; 5];
    for (slot, name) in rates.iter_mut().zip(RATES) {
        let v = table
            .get(name)
            .ok_or_else(|| format!("{name} is missing"))?;
        let n = v
            .as_float()
            .or_else(|| v.as_integer().map(|i| i as f64))
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| format!("{name} = {v}: expected a number of dollars, 0 or more"))?;
        *slot = n;
    }
    if let Some(key) = table
        .keys()
        .find(|k| k.as_str() != "as_of" && !RATES.contains(&k.as_str()))
    {
        return Err(format!("unknown rate {key}"));
    }
    Ok(Price {
        rates,
        as_of: table
            .get("as_of")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_parses_and_dates_every_row() {
        let table = shipped();
        assert!(table.len() >= 10);
        let sonnet = &table["claude-sonnet-4-20250514"];
        assert_eq!(sonnet.rates, [3.0, 15.0, 3.75, 6.0, 0.3]);
        assert!(table.values().all(|p| p.as_of.is_some()));
        // Never matched by a guess: a bare family name is not a model id.
        assert!(!table.contains_key("claude-sonnet-4"));
    }

    #[test]
    fn overrides_replace_and_extend() {
        let value: toml::Value = toml::from_str(
            "input = 1\noutput = 2\ncache_write_5m = 3\ncache_write_1h = 4\ncache_read = 0.5",
        )
        .unwrap();
        let price = parse_price(&value, "cmstore.toml").unwrap();
        let overrides = PriceTable::from([
            ("claude-sonnet-4".to_string(), price.clone()),
            ("claude-haiku-4-5".to_string(), price.clone()),
        ]);
        let table = effective(&overrides);
        assert_eq!(table["claude-sonnet-4"], price);
        assert_eq!(table["claude-haiku-4-5"].rates, [1.0, 2.0, 3.0, 4.0, 0.5]);
        assert_eq!(table["claude-haiku-4-5-20251001"].origin, "shipped");
    }

    #[test]
    fn incomplete_or_odd_prices_are_refused() {
        for (text, why) in [
            ("input = 1", "output is missing"),
            (
                "input = -1\noutput = 2\ncache_write_5m = 3\ncache_write_1h = 4\ncache_read = 0",
                "input = -1",
            ),
            (
                "input = 1\noutput = 2\ncache_write_5m = 3\ncache_write_1h = 4\ncache_read = 0\ncache_wirte = 1",
                "unknown rate cache_wirte",
            ),
        ] {
            let value: toml::Value = toml::from_str(text).unwrap();
            let err = parse_price(&value, "cmstore.toml").unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }
}
