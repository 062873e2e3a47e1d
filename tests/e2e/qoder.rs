//! Qoder CLI (`@qoder-ai/qodercli`, pinned in `.ci/install-agents`), as far as it runs here:
//! every model call needs a Qoder login, which no test can have, so `qodercli -p` stops with
//! "Not logged in". Before it does, it reads the hooks `cmstore hooks install --agent qoder
//! --user` wrote into `~/.qoder/settings.json` (a file naming an event Qoder does not know is
//! refused whole) and ends its session, which fires SessionEnd: one row, Qoder's, with the
//! transcript path Qoder names, under `~/.qoder/projects/`.

use std::path::PathBuf;

use crate::harness::{self, World, AGENT_TIMEOUT};

/// The CLI's launcher (a Node.js script).
fn qoder() -> Option<PathBuf> {
    harness::agent("qoder", "node_modules/.bin/qodercli")
}

#[test]
fn qoder_reads_the_installed_hooks_and_its_session_end_is_recorded() {
    let Some(qoder) = qoder() else { return };
    let world = World::new();
    world.cmstore_ok(&["hooks", "install", "--agent", "qoder", "--user"]);
    let mut cmd = world.command(&qoder);
    cmd.args(["-p", "steps"]).current_dir(world.project());
    let run = harness::spawn(&world, "qoder", cmd).wait(AGENT_TIMEOUT);
    assert!(
        !run.status.success() && run.stdout.contains("Not logged in"),
        "without a login Qoder stops before any model call: {}\n{}",
        run.stdout,
        run.stderr
    );
    world.ingest();
    let rows = world.query(
        "SELECT hook_type, agent, json_extract(entry, '$.reason') AS reason, \
         json_extract(entry, '$.transcriptPath') AS transcript FROM events",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["hook_type"], "SessionEnd", "{rows:?}");
    assert_eq!(rows[0]["agent"], "qoder", "{rows:?}");
    let transcript = rows[0]["transcript"].as_str().unwrap_or_default();
    let projects = world.home().join(".qoder").join("projects");
    assert!(
        transcript.starts_with(projects.to_str().unwrap()) && transcript.ends_with(".jsonl"),
        "{transcript}"
    );
}
