//! Prices per model, in USD per million tokens: the tables shipped with cmstore (LiteLLM's
//! rates of chat models, `resources/prices-litellm.tsv`, under Anthropic's list prices checked
//! by hand, `resources/prices.toml`), the overrides of cmstore.toml's `[prices."<model>"]`, and
//! how a model id an agent records finds its row ([`resolve`]). Pure: the store holds the
//! effective table and prices usage from it when read (docs/usage.md).

use std::collections::BTreeMap;

/// The hand-checked table, embedded at build time.
const SHIPPED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/resources/prices.toml"
));

/// LiteLLM's rates, pinned (resources/refresh-prices-litellm.py writes it).
const LITELLM: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/resources/prices-litellm.tsv"
));

/// The makers' own providers in LiteLLM's names, in the order a bare model id is tried under
/// them ([`resolve`]): a maker's list price, never a reseller's. Last, GitHub Copilot's, for
/// the ids Copilot spells its own way (`claude-sonnet-4.6`).
const MAKERS: [&str; 11] = [
    "anthropic",
    "openai",
    "gemini",
    "vertex_ai",
    "xai",
    "moonshot",
    "minimax",
    "zai",
    "deepseek",
    "mistral",
    "github_copilot",
];

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
    /// Where it comes from: `shipped` (resources/prices.toml), `litellm`, `free` or
    /// `cmstore.toml`.
    pub origin: &'static str,
}

// Every rate is finite ([`parse_price`] refuses the others), so equality is reflexive.
impl Eq for Price {}

/// The effective price table, by exact model id.
pub type PriceTable = BTreeMap<String, Price>;

/// The shipped table: LiteLLM's rows under the hand-checked ones.
pub fn shipped() -> PriceTable {
    let mut table = litellm();
    table.extend(hand_checked());
    table
}

/// LiteLLM's rows: `model`, then the five rates in the order of [`RATES`], tab-separated;
/// `#` lines are comments, `# as_of: DATE` dates every row.
fn litellm() -> PriceTable {
    let mut as_of = None;
    let mut table = PriceTable::new();
    for line in LITELLM.lines() {
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(date) = comment.trim().strip_prefix("as_of:") {
                as_of = Some(date.trim().to_owned());
            }
            continue;
        }
        let mut fields = line.split('\t');
        let model = fields.next().expect("a model");
        let mut rates = [0.0; 5];
        for slot in &mut rates {
            *slot = fields
                .next()
                .and_then(|f| f.parse::<f64>().ok())
                .filter(|r| r.is_finite() && *r >= 0.0)
                .unwrap_or_else(|| panic!("resources/prices-litellm.tsv: {model}: a bad rate"));
        }
        let price = Price {
            rates,
            as_of: as_of.clone(),
            origin: "litellm",
        };
        table.insert(model.to_owned(), price);
    }
    table
}

/// Anthropic's list prices, checked by hand (resources/prices.toml).
fn hand_checked() -> PriceTable {
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

/// How a model id an agent records found its price: the table's row it took, and that row.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The table's model id (the id itself when it is a row), or `:free` for a free variant.
    pub row: String,
    /// Its rates.
    pub price: Price,
}

/// The price of `model` in `table`, the first of: its own row; free for a `:free` variant
/// (OpenRouter's); the id without an Ollama-style `:tag` (`kimi-k2.5:cloud`); without its
/// provider prefixes, one at a time (`openrouter/x-ai/grok-4` → `x-ai/grok-4` → `grok-4`);
/// the bare id under a maker's own provider (`moonshot/kimi-k2.5`; the makers are listed in
/// this module); and a family id's one dated row (`claude-sonnet-4` → `claude-sonnet-4-20250514`, only when exactly one
/// date exists). Nothing else: no resemblance, no reseller's price.
pub fn resolve(table: &PriceTable, model: &str) -> Option<Resolved> {
    let row = |key: &str| {
        table.get(key).map(|price| Resolved {
            row: key.to_owned(),
            price: price.clone(),
        })
    };
    if let Some(found) = row(model) {
        return Some(found);
    }
    if model.ends_with(":free") {
        return Some(Resolved {
            row: ":free".to_owned(),
            price: Price {
                rates: [0.0; 5],
                as_of: None,
                origin: "free",
            },
        });
    }
    let untagged = model.rsplit_once(':').map_or(model, |(base, _)| base);
    let mut tail = untagged;
    loop {
        if let Some(found) = row(tail) {
            return Some(found);
        }
        match tail.split_once('/') {
            Some((_, rest)) => tail = rest,
            None => break,
        }
    }
    MAKERS
        .iter()
        .find_map(|maker| row(&format!("{maker}/{tail}")))
        .or_else(|| dated_row(table, tail).and_then(row))
}

/// The one row `<family>-YYYYMMDD` of `family`, if exactly one exists.
fn dated_row<'t>(table: &'t PriceTable, family: &str) -> Option<&'t str> {
    let prefix = format!("{family}-");
    let mut dated = table
        .range(prefix.clone()..)
        .map(|(key, _)| key.as_str())
        .take_while(|key| key.starts_with(&prefix))
        .filter(|key| {
            let date = &key[prefix.len()..];
            date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit())
        });
    let first = dated.next()?;
    dated.next().is_none().then_some(first)
}

/// A digest of what [`effective`] builds its table from: the shipped tables' text and
/// `overrides`. The store keeps it beside its table, so that a read can tell the table is
/// current without parsing the shipped ones. Std's SipHash with its fixed keys: stable for a
/// build, which is all it must be (another digest costs one rewrite of the table).
pub fn source_digest(overrides: &PriceTable) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (SHIPPED, LITELLM).hash(&mut hasher);
    for (model, price) in overrides {
        model.hash(&mut hasher);
        price.rates.map(f64::to_bits).hash(&mut hasher);
        (&price.as_of, price.origin).hash(&mut hasher);
    }
    hasher.finish()
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
        assert!(
            table.len() >= 3000,
            "LiteLLM's chat models: {}",
            table.len()
        );
        let sonnet = &table["claude-sonnet-4-20250514"];
        assert_eq!(sonnet.rates, [3.0, 15.0, 3.75, 6.0, 0.3]);
        assert_eq!(sonnet.origin, "shipped", "the hand-checked row wins");
        assert_eq!(
            table["gpt-5.2-codex"].rates,
            [1.75, 14.0, 1.75, 1.75, 0.175]
        );
        assert_eq!(table["gpt-5.2-codex"].origin, "litellm");
        assert!(table.values().all(|p| p.as_of.is_some()));
        // A bare family name is not a row of its own.
        assert!(!table.contains_key("claude-sonnet-4"));
    }

    #[test]
    fn agents_model_ids_find_their_makers_row_and_nothing_is_guessed() {
        let table = shipped();
        let row = |model: &str| resolve(&table, model).map(|r| r.row);
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(row("claude-opus-4-7"), some("claude-opus-4-7"));
        assert_eq!(row("x-ai/grok-4-fast:free"), some(":free"));
        assert_eq!(
            resolve(&table, "x-ai/grok-4-fast:free")
                .unwrap()
                .price
                .rates,
            [0.0; 5]
        );
        assert_eq!(row("kimi-k2.5:cloud"), some("moonshot/kimi-k2.5"));
        assert_eq!(row("MiniMax-M2.1"), some("minimax/MiniMax-M2.1"));
        assert_eq!(
            row("gemini-3-pro-preview"),
            some("vertex_ai/gemini-3-pro-preview")
        );
        assert_eq!(row("openrouter/openai/gpt-5.4"), some("gpt-5.4"));
        assert_eq!(row("claude-sonnet-4"), some("claude-sonnet-4-20250514"));
        assert_eq!(
            row("claude-sonnet-4.6"),
            some("github_copilot/claude-sonnet-4.6")
        );
        // Several dated rows: no family alias. No maker's row: unpriced.
        let mut two = PriceTable::new();
        for key in ["m-20250101", "m-20250601"] {
            two.insert(key.to_owned(), table["gpt-5.2-codex"].clone());
        }
        assert_eq!(resolve(&two, "m"), None);
        assert_eq!(row("glm-5-turbo"), None, "only resellers price it");
        assert_eq!(row("my-local-model"), None);
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
