//! The service files in `resources/` say what `docs/running.md` says they do.

use std::path::Path;

fn resource(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("resources")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

#[test]
fn systemd_unit_runs_ingest_and_restarts_on_failure() {
    let unit = resource("systemd/cmstore-ingest.service");
    for line in [
        "[Service]",
        "ExecStart=%h/.cargo/bin/cmstore ingest",
        "Restart=on-failure",
        "UMask=0077",
        "[Install]",
        "WantedBy=default.target",
    ] {
        assert!(unit.lines().any(|l| l == line), "missing {line:?}");
    }
}

#[test]
fn launchd_plist_runs_ingest_and_restarts_on_failure() {
    let plist = resource("launchd/dev.cmstore.ingest.plist");
    assert!(plist.starts_with("<?xml"));
    for needle in [
        "<string>dev.cmstore.ingest</string>",
        r#"exec "$HOME/.cargo/bin/cmstore" ingest"#,
        "<key>RunAtLoad</key>",
        "<key>SuccessfulExit</key>\n        <false/>",
    ] {
        assert!(plist.contains(needle), "missing {needle:?}");
    }
    // Every element opened is closed, in order: a cheap well-formedness check.
    let mut stack: Vec<&str> = Vec::new();
    for piece in plist.split('<').skip(1) {
        let tag = piece.split('>').next().unwrap();
        if tag.starts_with('?') || tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        match tag.strip_prefix('/') {
            Some(name) => assert_eq!(stack.pop(), Some(name), "misnested </{name}>"),
            None => stack.push(tag.split(' ').next().unwrap()),
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

#[test]
fn the_collector_config_takes_otlp_http_to_clickhouse() {
    let config = resource("otelcol/cmstore-clickhouse.yaml");
    for needle in [
        "receivers:\n  otlp:",
        "endpoint: 0.0.0.0:4318",
        "exporters:\n  clickhouse:",
        "traces_table_name: otel_traces",
        "receivers: [otlp]",
        "exporters: [clickhouse]",
        "authenticator: bearertokenauth",
    ] {
        assert!(config.contains(needle), "missing {needle:?}");
    }
    assert!(!config.contains('\t'), "YAML is indented with spaces");
}
