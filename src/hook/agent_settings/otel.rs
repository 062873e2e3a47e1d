//! Claude Code's telemetry environment (`hooks install --agent claude --otel`): the `env`
//! entries of its `settings.json` that make it send its own OTLP logs and metrics to
//! `cmstore ingest --otlp-listen`. Pure: edits the parsed document.

use serde_json::{Map, Value};

/// Where `cmstore ingest --otlp-listen` listens unless told otherwise.
pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:4318";

/// The variables set, and their values for `endpoint`.
pub fn variables(endpoint: &str) -> [(&'static str, String); 5] {
    [
        ("CLAUDE_CODE_ENABLE_TELEMETRY", "1".to_string()),
        ("OTEL_LOGS_EXPORTER", "otlp".to_string()),
        ("OTEL_METRICS_EXPORTER", "otlp".to_string()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".to_string()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_string()),
    ]
}

/// Sets [`variables`] in `doc`'s `env` object (created if absent), keeping its other
/// entries; `Err` when `doc` or its `env` is not an object. Returns whether anything changed.
pub fn set_env(doc: &mut Value, endpoint: &str) -> Result<bool, &'static str> {
    let root = doc
        .as_object_mut()
        .ok_or("the settings are not a JSON object")?;
    let env = root
        .entry("env")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("its \"env\" is not an object")?;
    let mut changed = false;
    for (name, value) in variables(endpoint) {
        if env.get(name).and_then(Value::as_str) != Some(value.as_str()) {
            env.insert(name.to_string(), Value::String(value));
            changed = true;
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_the_variables_and_keeps_the_rest() {
        let mut doc = serde_json::json!({"env": {"FOO": "bar"}, "hooks": {}});
        assert_eq!(set_env(&mut doc, DEFAULT_ENDPOINT), Ok(true));
        assert_eq!(doc["env"]["FOO"], "bar");
        assert_eq!(doc["env"]["CLAUDE_CODE_ENABLE_TELEMETRY"], "1");
        assert_eq!(doc["env"]["OTEL_LOGS_EXPORTER"], "otlp");
        assert_eq!(doc["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"], DEFAULT_ENDPOINT);
        assert_eq!(set_env(&mut doc, DEFAULT_ENDPOINT), Ok(false), "idempotent");
        let mut bad = serde_json::json!({"env": []});
        assert!(set_env(&mut bad, DEFAULT_ENDPOINT).is_err());
    }
}
