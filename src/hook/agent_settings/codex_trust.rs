//! Codex's hook review (Codex 0.129 and later), so that the doctor can say which of
//! cmstore's hooks Codex will leave out.
//!
//! A hook from a user's or a project's files runs only once the user's `config.toml` holds
//! `[hooks.state."<key>"] trusted_hash = "<hash>"` equal to the hash of what the hook is now.
//! A new or changed hook is left out without a word by `codex exec`, and waits for the
//! interactive Codex's "Hooks need review" (or `/hooks`). A project's `.codex/` is not read at
//! all unless the project is trusted (`[projects."<dir>"] trust_level = "trusted"`).
//!
//! The key and the hash are Codex's own, as `codex-rs/hooks/src/engine/discovery.rs`
//! (`hook_hash`, `normalize_command_hook`) and `codex-rs/config/src/fingerprint.rs`
//! (`version_for_toml`) compute them (rust-v0.148.0): the key is the file's absolute path, the
//! event in snake case and the handler's group and place; the hash is SHA-256 over the compact
//! JSON, keys sorted, of the event, the group's matcher and the one handler, normalised.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// What Codex will do with one handler of a hooks file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Reviewed as it is now: it runs.
    Trusted,
    /// Never reviewed: left out.
    Untrusted,
    /// Reviewed, then changed (a new cmstore's command, a moved binary): left out.
    Modified,
    /// Turned off in its state (`enabled = false`): left out whatever its trust.
    Disabled,
}

/// One handler of a hooks file as Codex's review sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    /// The handler's key in `hooks.state`.
    pub key: String,
    /// The hash Codex computes for it now.
    pub hash: String,
    /// Whether it runs.
    pub trust: Trust,
}

/// Codex's verdict on each handler of the hooks file `doc`, read from `path`, that `ours`
/// picks, by the `hooks.state` of the user's `config.toml` (`user_config`).
pub fn review(
    path: &Path,
    doc: &Value,
    user_config: &toml::Table,
    ours: impl Fn(&Value) -> bool,
) -> Vec<Review> {
    let states = user_config
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(toml::Value::as_table);
    let mut found = Vec::new();
    let Some(events) = doc.get("hooks").and_then(Value::as_object) else {
        return found;
    };
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str);
            let handlers = group.get("hooks").and_then(Value::as_array);
            for (h, handler) in handlers.into_iter().flatten().enumerate() {
                if !ours(handler) {
                    continue;
                }
                let Some(hash) = hook_hash(event, matcher, handler) else {
                    continue;
                };
                let key = format!("{}:{}:{g}:{h}", path.display(), event_label(event));
                let state = states.and_then(|s| s.get(&key));
                let trust = trust_of(state, &hash);
                found.push(Review { key, hash, trust });
            }
        }
    }
    found
}

fn trust_of(state: Option<&toml::Value>, hash: &str) -> Trust {
    let field = |name: &str| state.and_then(|s| s.get(name));
    if field("enabled").and_then(toml::Value::as_bool) == Some(false) {
        return Trust::Disabled;
    }
    match field("trusted_hash").and_then(toml::Value::as_str) {
        Some(trusted) if trusted.trim() == hash => Trust::Trusted,
        Some(_) => Trust::Modified,
        None => Trust::Untrusted,
    }
}

/// Codex's hash of one command handler of `event` in a group with `matcher`; `None` for a
/// handler that is no command (Codex's `mcp_tool` handlers are none of cmstore's).
pub fn hook_hash(event: &str, matcher: Option<&str>, handler: &Value) -> Option<String> {
    if handler.get("type").and_then(Value::as_str) != Some("command") {
        return None;
    }
    let command = if cfg!(windows) {
        handler
            .get("commandWindows")
            .or_else(|| handler.get("command_windows"))
            .and_then(Value::as_str)
            .or_else(|| handler.get("command").and_then(Value::as_str))
    } else {
        handler.get("command").and_then(Value::as_str)
    }?;
    let timeout = handler.get("timeout").and_then(Value::as_u64);
    let mut normalized = Map::new();
    normalized.insert("type".into(), json!("command"));
    normalized.insert("command".into(), json!(command));
    normalized.insert("timeout".into(), json!(timeout_for(event, timeout)));
    normalized.insert(
        "async".into(),
        json!(handler.get("async").and_then(Value::as_bool) == Some(true)),
    );
    if let Some(status) = handler.get("statusMessage").and_then(Value::as_str) {
        normalized.insert("statusMessage".into(), json!(status));
    }
    let context_limit = handler
        .get("additionalContextLimit")
        .and_then(Value::as_u64);
    if let Some(limit) = context_limit.filter(|l| *l != DEFAULT_CONTEXT_LIMIT) {
        if EVENTS_WITH_CONTEXT.contains(&event) {
            normalized.insert("additionalContextLimit".into(), json!(limit));
        }
    }
    let mut identity = Map::new();
    identity.insert("event_name".into(), json!(event_label(event)));
    if let Some(matcher) = matcher.filter(|_| !matches!(event, "UserPromptSubmit" | "Stop")) {
        identity.insert("matcher".into(), json!(matcher));
    }
    identity.insert(
        "hooks".into(),
        Value::Array(vec![Value::Object(normalized)]),
    );
    let bytes = serde_json::to_vec(&sorted(&Value::Object(identity))).ok()?;
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("sha256:{hex}"))
}

/// Codex's `additionalContext` spill threshold when a hook names none.
const DEFAULT_CONTEXT_LIMIT: u64 = 2500;

/// The events whose hooks may return `additionalContext`: only theirs keep a limit.
const EVENTS_WITH_CONTEXT: [&str; 5] = [
    "PreToolUse",
    "PostToolUse",
    "SessionStart",
    "UserPromptSubmit",
    "SubagentStart",
];

/// The timeout Codex hashes: the handler's, 600 s when it names none; a `SessionEnd` hook's
/// is 1 s by default and at most 3 s.
fn timeout_for(event: &str, timeout: Option<u64>) -> u64 {
    match event {
        "SessionEnd" => timeout.unwrap_or(1).clamp(1, 3),
        _ => timeout.unwrap_or(600).max(1),
    }
}

/// `PreToolUse` as Codex writes it in a key: `pre_tool_use`.
fn event_label(event: &str) -> String {
    let mut label = String::with_capacity(event.len() + 4);
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            label.push('_');
        }
        label.push(c.to_ascii_lowercase());
    }
    label
}

/// `value` with every object's keys in order, as Codex hashes it (cmstore's `serde_json`
/// keeps insertion order).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Whether the user's `config.toml` trusts the project at `dir`: `Some(false)` when it names
/// it untrusted, `None` when it does not name it, and Codex will ask on the project's first
/// interactive run. Codex looks for the folder itself, then the git checkout it lies in, then
/// that repository's main checkout (for a linked worktree), each as written and made
/// canonical; on Windows it compares keys case-blind (`project_trust_for_lookup_key` in
/// `codex-rs/config/src/loader/mod.rs`).
pub fn project_trusted(user_config: &toml::Table, dir: &Path) -> Option<bool> {
    trusted_among(user_config, dir, cfg!(windows))
}

fn trusted_among(user_config: &toml::Table, dir: &Path, case_blind: bool) -> Option<bool> {
    let projects = user_config
        .get("projects")
        .and_then(toml::Value::as_table)?;
    let checkout = checkout_root(dir);
    let main = checkout.as_deref().and_then(main_checkout);
    let folders = [Some(dir.to_path_buf()), checkout, main];
    let keys = folders.into_iter().flatten().flat_map(|d| {
        let canonical = d.canonicalize().ok();
        [canonical, Some(d)].into_iter().flatten()
    });
    let level_of = |key: &str| -> Option<bool> {
        let entry = projects.get(key).or_else(|| {
            // Case-blind, the first of the keys that match in sorted order, as Codex picks.
            let mut matching: Vec<_> = projects
                .iter()
                .filter(|(k, _)| case_blind && k.eq_ignore_ascii_case(key))
                .collect();
            matching.sort_by(|a, b| a.0.cmp(b.0));
            matching.first().map(|(_, v)| *v)
        })?;
        Some(entry.get("trust_level")?.as_str()? == "trusted")
    };
    keys.map(|d| d.display().to_string())
        .find_map(|key| level_of(&key))
}

/// The root of the git checkout `dir` lies in (the nearest folder with a `.git`, a folder or
/// a linked worktree's file).
pub fn checkout_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The main checkout of the linked worktree whose root is `checkout`; `None` for a main
/// checkout or no worktree. Read as Codex reads it, from the files: the worktree's `.git`
/// file says `gitdir: <main>/.git/worktrees/<name>` (`resolve_root_git_project_for_trust`
/// in `codex-rs/git-utils/src/info.rs`).
pub fn main_checkout(checkout: &Path) -> Option<PathBuf> {
    let dot_git = checkout.join(".git");
    if dot_git.is_dir() {
        return None;
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let git_dir = text.trim().strip_prefix("gitdir:")?.trim();
    if git_dir.is_empty() {
        return None;
    }
    let git_dir = checkout.join(git_dir);
    let worktrees = git_dir.parent()?;
    if worktrees.file_name()? != "worktrees" {
        return None;
    }
    Some(worktrees.parent()?.parent()?.to_path_buf())
}

/// Where Codex takes the project hooks of `dir` from when `dir` lies in a linked worktree:
/// the same folder in the main checkout (`root_checkout_hooks_folder_for_dir`); `None`
/// outside a linked worktree.
pub fn worktree_hooks_folder(dir: &Path) -> Option<PathBuf> {
    let checkout = checkout_root(dir)?;
    let main = main_checkout(&checkout)?;
    let within = dir.strip_prefix(&checkout).ok()?;
    Some(main.join(within).join(".codex"))
}

/// Why Codex 0.129 or later will leave out cmstore's hooks (those `ours` picks) in the hooks
/// file `doc` at `path`, by the user's `config.toml` at `config_path` (its text, if any);
/// `project` is the project's folder when the file is a project's. Each reason says the fix.
pub fn will_not_fire(
    path: &Path,
    doc: &Value,
    config_path: &Path,
    config_text: Option<&str>,
    project: Option<&Path>,
    ours: impl Fn(&Value) -> bool,
) -> Vec<String> {
    let config = match parse_config(config_path, config_text) {
        Ok(config) => config,
        Err(why) => return vec![why],
    };
    let mut off: Vec<String> = project
        .and_then(|dir| project_reason(&config, config_path, dir))
        .into_iter()
        .collect();
    let reviews = review(path, doc, &config, ours);
    let of =
        |trust: Trust| -> Vec<&Review> { reviews.iter().filter(|r| r.trust == trust).collect() };
    let disabled = of(Trust::Disabled);
    if !disabled.is_empty() {
        off.push(format!(
            "{} of cmstore's {} hooks are turned off in {} (enabled = false under \
             [hooks.state]): remove those lines, or turn them on in Codex's /hooks",
            disabled.len(),
            reviews.len(),
            config_path.display()
        ));
    }
    let (untrusted, modified) = (of(Trust::Untrusted), of(Trust::Modified));
    if !untrusted.is_empty() || !modified.is_empty() {
        off.push(left_out_reason(
            &untrusted,
            &modified,
            reviews.len(),
            config_path,
        ));
    }
    off
}

/// The user's `config.toml` as a table (none: empty); a text Codex cannot read either is a
/// reason the hooks will not fire.
fn parse_config(config_path: &Path, text: Option<&str>) -> Result<toml::Table, String> {
    match text.map(str::parse::<toml::Table>) {
        Some(Ok(config)) => Ok(config),
        Some(Err(err)) => {
            let why = err.to_string();
            let first = why.lines().next().unwrap_or_default();
            Err(format!(
                "Codex cannot read {} ({first}): it runs none of its hooks until the file \
                 parses",
                config_path.display()
            ))
        }
        None => Ok(toml::Table::new()),
    }
}

/// The key Codex asks to trust the project at `dir` by: its repository's main checkout,
/// else the checkout it lies in, else the folder itself, made canonical (`decision_for_dir`).
pub fn trust_key(dir: &Path) -> PathBuf {
    let checkout = checkout_root(dir);
    let root = checkout
        .as_deref()
        .and_then(main_checkout)
        .or(checkout)
        .unwrap_or_else(|| dir.to_path_buf());
    root.canonicalize().unwrap_or(root)
}

/// Why Codex reads nothing of the project at `dir`'s `.codex/`, if it does not.
fn project_reason(config: &toml::Table, config_path: &Path, dir: &Path) -> Option<String> {
    let key = toml::Value::String(trust_key(dir).display().to_string());
    match project_trusted(config, dir) {
        Some(true) => None,
        Some(false) => Some(format!(
            "Codex reads nothing of this project's .codex/: {} names it untrusted \
             ([projects.{key}]); trust it there, or install with --user",
            config_path.display()
        )),
        None => Some(format!(
            "Codex reads a project's .codex/ only once you trust the project: in `codex`, or \
             for `codex exec` add to {}:{}",
            config_path.display(),
            indented(&[
                format!("[projects.{key}]"),
                "trust_level = \"trusted\"".into()
            ])
        )),
    }
}

/// The reason for the hooks never reviewed and those changed since, with the lines that trust
/// them as they are: a table to add for each new one, the hash to set in the table a changed
/// one has already (a second table would make the file unreadable).
fn left_out_reason(
    untrusted: &[&Review],
    modified: &[&Review],
    of_all: usize,
    config_path: &Path,
) -> String {
    let mut kinds = Vec::new();
    let mut fix = Vec::new();
    if !untrusted.is_empty() {
        kinds.push(format!("{} not reviewed", untrusted.len()));
        fix.push(format!(
            "add to {}:{}",
            config_path.display(),
            indented(&trust_lines(untrusted))
        ));
    }
    if !modified.is_empty() {
        kinds.push(format!("{} changed since you trusted them", modified.len()));
        let lines: Vec<String> = modified
            .iter()
            .flat_map(|r| {
                [
                    format!("under [hooks.state.{}]", key_of(r)),
                    format!("  trusted_hash = \"{}\"", r.hash),
                ]
            })
            .collect();
        fix.push(format!(
            "in {}, set each changed one's trusted_hash:{}",
            config_path.display(),
            indented(&lines)
        ));
    }
    format!(
        "Codex leaves out {} of cmstore's {of_all} hooks ({}) until you trust them in `codex` \
         (\"Hooks need review\", or /hooks); for `codex exec`, pass it \
         --dangerously-bypass-hook-trust, or {}",
        untrusted.len() + modified.len(),
        kinds.join(", "),
        fix.join("; and ")
    )
}

/// `lines`, each on a line of its own under the reason that gives them.
fn indented(lines: &[String]) -> String {
    lines.iter().map(|l| format!("\n        {l}")).collect()
}

/// A review's key as TOML writes it in a table's name.
fn key_of(review: &Review) -> String {
    toml::Value::String(review.key.clone()).to_string()
}

/// The `config.toml` lines that trust `reviews` as they are now, for a machine that runs only
/// `codex exec`, which has no review to ask in.
pub fn trust_lines(reviews: &[&Review]) -> Vec<String> {
    reviews
        .iter()
        .flat_map(|r| {
            [
                format!("[hooks.state.{}]", key_of(r)),
                format!("trusted_hash = \"{}\"", r.hash),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hash Codex 0.129 wrote when a person trusted a hook in `/hooks`, as recorded in
    /// stablyai/orca's `config-toml-trust.test.ts`: a `PreToolUse` group without a matcher.
    #[test]
    fn the_hash_is_the_one_codex_writes() {
        let handler = json!({"type": "command",
            "command": "/bin/sh \"/tmp/orca-case-b-mCmCe6/agent-hooks/codex-hook.sh\""});
        assert_eq!(
            hook_hash("PreToolUse", None, &handler).unwrap(),
            "sha256:bc013489dba495431d3790fda62ee5a7d907a7c491e29ad26238c3a5d6d2b163"
        );
        // What Codex leaves out of the hash changes nothing; what it keeps changes it.
        let marked = json!({"type": "command", "cmstore": "hooks-v3", "timeout": 600,
            "command": "/bin/sh \"/tmp/orca-case-b-mCmCe6/agent-hooks/codex-hook.sh\""});
        assert_eq!(
            hook_hash("PreToolUse", None, &marked),
            hook_hash("PreToolUse", None, &handler)
        );
        assert_ne!(
            hook_hash("PreToolUse", Some("Bash"), &handler),
            hook_hash("PreToolUse", None, &handler)
        );
        // Stop and UserPromptSubmit have no matcher to hash.
        assert_eq!(
            hook_hash("Stop", Some("x"), &handler),
            hook_hash("Stop", None, &handler)
        );
        assert_eq!(hook_hash("Stop", None, &json!({"type": "mcp_tool"})), None);
    }

    #[test]
    fn labels_and_timeouts_are_codexs() {
        assert_eq!(event_label("PreToolUse"), "pre_tool_use");
        assert_eq!(event_label("UserPromptSubmit"), "user_prompt_submit");
        assert_eq!(event_label("Stop"), "stop");
        assert_eq!(timeout_for("SessionEnd", Some(10)), 3);
        assert_eq!(timeout_for("SessionEnd", None), 1);
        assert_eq!(timeout_for("Stop", None), 600);
        assert_eq!(timeout_for("Stop", Some(0)), 1);
    }

    #[test]
    fn each_handler_is_trusted_untrusted_modified_or_off() {
        let doc = json!({"hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "other"},
                                {"type": "command", "command": "cmstore capture", "cmstore": "v"}]}],
            "PreToolUse": [{"hooks": [{"type": "command", "command": "cmstore capture", "cmstore": "v"}]}],
            "PostToolUse": [{"hooks": [{"type": "command", "command": "cmstore capture", "cmstore": "v"}]}],
            "SessionStart": [{"hooks": [{"type": "command", "command": "cmstore capture", "cmstore": "v"}]}]
        }});
        let path = Path::new("/h/.codex/hooks.json");
        let ours = |h: &Value| h.get("cmstore").is_some();
        let hash = |event: &str| {
            hook_hash(
                event,
                None,
                &json!({"type": "command", "command": "cmstore capture"}),
            )
            .unwrap()
        };
        let config: toml::Table = format!(
            "[hooks.state.\"/h/.codex/hooks.json:stop:0:1\"]\ntrusted_hash = \"{}\"\n\
             [hooks.state.\"/h/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:old\"\n\
             [hooks.state.\"/h/.codex/hooks.json:session_start:0:0\"]\ntrusted_hash = \"{}\"\nenabled = false\n",
            hash("Stop"),
            hash("SessionStart")
        )
        .parse()
        .unwrap();
        let found = review(path, &doc, &config, ours);
        let by_key = |k: &str| found.iter().find(|r| r.key.ends_with(k)).unwrap().trust;
        assert_eq!(found.len(), 4, "{found:?}");
        assert_eq!(by_key(":stop:0:1"), Trust::Trusted);
        assert_eq!(by_key(":pre_tool_use:0:0"), Trust::Modified);
        assert_eq!(by_key(":post_tool_use:0:0"), Trust::Untrusted);
        assert_eq!(by_key(":session_start:0:0"), Trust::Disabled);
        // The lines that trust them parse back into the state that trusts them.
        let untrusted: Vec<&Review> = found.iter().filter(|r| r.trust != Trust::Trusted).collect();
        let lines = trust_lines(&untrusted[..1]).join("\n");
        let back: toml::Table = lines.parse().unwrap();
        assert_eq!(
            review(path, &doc, &back, ours)
                .iter()
                .find(|r| r.key == untrusted[0].key)
                .unwrap()
                .trust,
            Trust::Trusted
        );
    }

    #[test]
    fn a_config_toml_codex_cannot_read_is_said() {
        let doc = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "c", "cmstore": "v"}]}]}});
        let off = will_not_fire(
            Path::new("/h/.codex/hooks.json"),
            &doc,
            Path::new("/h/.codex/config.toml"),
            Some("[a]\nx = 1\n[a]\n"),
            None,
            |h| h.get("cmstore").is_some(),
        );
        assert_eq!(off.len(), 1, "{off:?}");
        assert!(
            off[0].starts_with("Codex cannot read /h/.codex/config.toml ("),
            "{off:?}"
        );
    }

    #[test]
    fn a_project_is_trusted_by_its_folder_or_its_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let sub = repo.join("sub");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        let table = |d: &Path, level: &str| -> toml::Table {
            format!(
                "[projects.{}]\ntrust_level = \"{level}\"\n",
                toml::Value::String(d.display().to_string())
            )
            .parse()
            .unwrap()
        };
        assert_eq!(project_trusted(&table(&sub, "trusted"), &sub), Some(true));
        assert_eq!(project_trusted(&table(&repo, "trusted"), &sub), Some(true));
        assert_eq!(
            project_trusted(&table(&repo, "untrusted"), &sub),
            Some(false)
        );
        assert_eq!(project_trusted(&toml::Table::new(), &sub), None);
    }

    /// A linked worktree (`git worktree add`) is trusted by its main checkout's entry, and
    /// takes its project hooks from the main checkout's same folder.
    #[test]
    fn a_linked_worktree_is_its_main_checkouts() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let tree = dir.path().join("feature");
        std::fs::create_dir_all(main.join(".git/worktrees/feature")).unwrap();
        std::fs::create_dir_all(tree.join("sub")).unwrap();
        std::fs::write(
            tree.join(".git"),
            format!(
                "gitdir: {}\n",
                main.join(".git/worktrees/feature").display()
            ),
        )
        .unwrap();
        assert_eq!(main_checkout(&tree), Some(main.clone()));
        assert_eq!(main_checkout(&main), None);
        assert_eq!(
            worktree_hooks_folder(&tree.join("sub")),
            Some(main.join("sub").join(".codex"))
        );
        assert_eq!(worktree_hooks_folder(&main), None);
        let trusted: toml::Table = format!(
            "[projects.{}]\ntrust_level = \"trusted\"\n",
            toml::Value::String(main.display().to_string())
        )
        .parse()
        .unwrap();
        assert_eq!(project_trusted(&trusted, &tree.join("sub")), Some(true));
        // A relative gitdir is read against the worktree.
        std::fs::write(tree.join(".git"), "gitdir: ../main/.git/worktrees/feature").unwrap();
        assert_eq!(
            main_checkout(&tree).map(|m| m.canonicalize().unwrap()),
            Some(main.canonicalize().unwrap())
        );
        // A submodule's `.git` file points elsewhere: no worktree.
        std::fs::write(tree.join(".git"), "gitdir: ../main/.git/modules/feature").unwrap();
        assert_eq!(main_checkout(&tree), None);
    }

    /// On Windows Codex matches project keys case-blind; elsewhere exactly.
    #[test]
    fn windows_keys_match_case_blind() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("Proj");
        std::fs::create_dir_all(&project).unwrap();
        let shouted = project.display().to_string().to_uppercase();
        let config: toml::Table = format!(
            "[projects.{}]\ntrust_level = \"trusted\"\n",
            toml::Value::String(shouted)
        )
        .parse()
        .unwrap();
        assert_eq!(trusted_among(&config, &project, true), Some(true));
        assert_eq!(trusted_among(&config, &project, false), None);
    }
}
