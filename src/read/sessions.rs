//! Sessions as a person looks for them: the filters every report shares (`--since`, `--until`,
//! `--agent`, `--project`, `--session`), a session named by a unique prefix of its id, and the
//! list `cmstore sessions` prints.

use rusqlite::types::Value;

use crate::read::report::{self, integer, text};
use crate::store::read_only::{Param, QueryError, ReadOnlyDb};
use crate::support::human;

/// Shortest session id prefix shown (and worth typing back).
pub const MIN_PREFIX: usize = 8;

/// Which sessions a report covers. Times are epoch milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    /// Sessions active at or after this moment (their last event is not older).
    pub since: Option<i64>,
    /// Sessions active before this moment (their first event is older).
    pub until: Option<i64>,
    /// Sessions of this agent (`claude`, `vscode`, …).
    pub agent: Option<String>,
    /// Sessions whose working directory is this project: its last component, or the whole path.
    pub project: Option<String>,
    /// This one session (a full id: resolve a prefix with [`resolve`] first).
    pub session: Option<String>,
}

/// `--project`: the last component of `cwd`, whichever separator, or the whole `cwd`, compared
/// exactly (no LIKE: a project name may hold `_` or `%`), both without trailing separators (so
/// `/` is the root, `C:` the drive); a Windows path (a backslash, or a drive letter) ignoring
/// ASCII case too, as Windows does. `:project` is bound as [`project_name`] gives it.
const PROJECT_CONDITION: &str = "(CASE WHEN instr(cwd, '\\') > 0 OR cwd GLOB '[A-Za-z]:*' \
     THEN lower(rtrim(cwd, '/\\')) ELSE rtrim(cwd, '/\\') END = \
       CASE WHEN instr(cwd, '\\') > 0 OR cwd GLOB '[A-Za-z]:*' \
       THEN lower(:project) ELSE :project END \
     OR (length(:project) > 0 AND CASE WHEN instr(cwd, '\\') > 0 OR cwd GLOB '[A-Za-z]:*' \
       THEN lower(substr(rtrim(cwd, '/\\'), -length(:project))) \
       ELSE substr(rtrim(cwd, '/\\'), -length(:project)) END = \
         CASE WHEN instr(cwd, '\\') > 0 OR cwd GLOB '[A-Za-z]:*' \
         THEN lower(:project) ELSE :project END \
       AND substr(rtrim(cwd, '/\\'), -length(:project) - 1, 1) IN ('/', '\\')))";

/// A `--project` value as it is compared: without trailing separators (`app/` is `app`, the
/// root `/` is empty, `C:\` is `C:`), as the working directories are.
pub fn project_name(given: &str) -> &str {
    given.trim_end_matches(['/', '\\'])
}

/// Why a report's filters matched nothing, when one of them names what the store has none of:
/// an agent (with those it has) or a project. `None` when each matches something alone.
pub fn unmatched_filter(db: &ReadOnlyDb, filters: &Filters) -> Result<Option<String>, QueryError> {
    if let Some(agent) = &filters.agent {
        let (_, rows) = report::fetch(
            db,
            "SELECT DISTINCT agent FROM sessions WHERE agent IS NOT NULL ORDER BY agent",
            &[],
        )?;
        let known: Vec<String> = rows.into_iter().filter_map(|r| text(&r[0])).collect();
        if !known.contains(&agent.to_ascii_lowercase()) {
            return Ok(Some(match known.is_empty() {
                true => format!("no session of any agent is stored, so none of {agent:?}"),
                false => format!(
                    "no session of agent {agent:?} is stored; agents: {}",
                    known.join(", ")
                ),
            }));
        }
    }
    if let Some(project) = &filters.project {
        let only_project = Filters {
            project: Some(project.clone()),
            ..Filters::default()
        };
        let (filter, params) = only_project.where_clause();
        let (_, rows) = report::fetch(
            db,
            &format!("SELECT 1 FROM sessions {filter} LIMIT 1"),
            &params,
        )?;
        if rows.is_empty() {
            return Ok(Some(format!(
                "no session in a project {:?} is stored: a project is the last component of \
                 the working directory, or the whole path",
                project
            )));
        }
    }
    Ok(None)
}

impl Filters {
    /// The SQL conditions over a row with the columns `session_id`, `agent`, `cwd`,
    /// `first_seen` and `last_seen` (a `sessions` row, or `v_session_summary`), each value bound
    /// as a parameter, never inlined.
    pub fn conditions(&self) -> (Vec<&'static str>, Vec<Param>) {
        self.conditions_with("last_seen >= :since", "first_seen < :until")
    }

    /// The SQL conditions over an `events` row (`ts`, `session_id`, `agent`, `cwd`): events at
    /// or after `since` and before `until`, of the agent, in the project, of the session.
    pub fn event_conditions(&self) -> (Vec<&'static str>, Vec<Param>) {
        self.conditions_with("ts >= :since", "ts < :until")
    }

    /// The conditions, with `since` and `until` as the two time conditions given.
    fn conditions_with(
        &self,
        since: &'static str,
        until: &'static str,
    ) -> (Vec<&'static str>, Vec<Param>) {
        let mut wheres = Vec::new();
        let mut params = Vec::new();
        let mut bind = |name: &str, value: Value| {
            params.push(Param {
                name: name.into(),
                value,
            })
        };
        if let Some(ms) = self.since {
            wheres.push(since);
            bind("since", Value::Integer(ms));
        }
        if let Some(ms) = self.until {
            wheres.push(until);
            bind("until", Value::Integer(ms));
        }
        if let Some(agent) = &self.agent {
            // Agents are written lower-case (`claude`, `vscode`): `Claude` means `claude`.
            wheres.push("agent = :agent");
            bind("agent", Value::Text(agent.to_ascii_lowercase()));
        }
        if let Some(project) = &self.project {
            wheres.push(PROJECT_CONDITION);
            bind("project", Value::Text(project_name(project).to_string()));
        }
        if let Some(id) = &self.session {
            wheres.push("session_id = :session");
            bind("session", Value::Text(id.clone()));
        }
        (wheres, params)
    }

    /// [`Filters::conditions`] as a `WHERE …` clause (empty when there are none).
    pub fn where_clause(&self) -> (String, Vec<Param>) {
        let (wheres, params) = self.conditions();
        if wheres.is_empty() {
            (String::new(), params)
        } else {
            (format!("WHERE {}", wheres.join(" AND ")), params)
        }
    }
}

/// A session id prefix that names no session, or more than one.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// No session id starts with it.
    #[error("no session in the store matches {0:?} (`cmstore sessions` lists them)")]
    NotFound(String),
    /// Several do: how many, and the first few.
    #[error(
        "{prefix:?} matches {matches} sessions: {}{}; give more characters",
        candidates.join(", "),
        if *matches > candidates.len() as u64 {
            format!(", … (the first {} of {matches} listed)", candidates.len())
        } else {
            String::new()
        }
    )]
    Ambiguous {
        /// What was given.
        prefix: String,
        /// Ids it matches, in order (at most [`MAX_CANDIDATES`]).
        candidates: Vec<String>,
        /// How many ids it matches in all.
        matches: u64,
    },
    /// An empty id, which would match every session.
    #[error("the session id is empty; give an id or its first characters (`cmstore sessions` lists them)")]
    Empty,
    /// The store could not be read.
    #[error(transparent)]
    Query(#[from] QueryError),
}

/// How many matching ids an ambiguous prefix lists.
pub const MAX_CANDIDATES: usize = 8;

/// The one session whose id is `given`, or the one whose id starts with it.
pub fn resolve(db: &ReadOnlyDb, given: &str) -> Result<String, ResolveError> {
    if given.trim().is_empty() {
        return Err(ResolveError::Empty);
    }
    let param = |v: &str| Param {
        name: "id".into(),
        value: Value::Text(v.to_string()),
    };
    let exact = report::fetch(
        db,
        "SELECT session_id FROM sessions WHERE session_id = :id",
        &[param(given)],
    )?;
    if !exact.1.is_empty() {
        return Ok(given.to_string());
    }
    // A range on the primary key, not LIKE: ids may hold `%` and `_`, and the range uses
    // the index. The window counts every match before LIMIT keeps the first few.
    let (_, rows) = report::fetch(
        db,
        &format!(
            "SELECT session_id, count(*) OVER () FROM sessions \
             WHERE session_id > :id AND session_id < :id || char(1114111) \
               AND substr(session_id, 1, length(:id)) = :id \
             ORDER BY session_id LIMIT {MAX_CANDIDATES}"
        ),
        &[param(given)],
    )?;
    let matches = match rows.first().map(|r| &r[1]) {
        Some(Value::Integer(n)) => u64::try_from(*n).unwrap_or(0),
        _ => 0,
    };
    let mut ids: Vec<String> = rows.into_iter().filter_map(|r| text(&r[0])).collect();
    match matches {
        // Ids are UUIDs written lower-case: `4449E6CC` (pasted from elsewhere) means `4449e6cc`.
        0 if given.bytes().any(|b| b.is_ascii_uppercase()) => {
            resolve(db, &given.to_ascii_lowercase()).map_err(|e| match e {
                ResolveError::NotFound(_) => ResolveError::NotFound(given.to_string()),
                other => other,
            })
        }
        0 => Err(ResolveError::NotFound(given.to_string())),
        1 => Ok(ids.remove(0)),
        _ => Err(ResolveError::Ambiguous {
            prefix: given.to_string(),
            candidates: ids,
            matches,
        }),
    }
}

/// Columns of the list, raw (`--wide` and the machine formats). `imported_turns`: the
/// session's turns only `cmstore import` read, from its transcript (no hook recorded them),
/// through the small index of those (migration 0036).
pub const LIST_COLUMNS: &str = "session_id, agent, model, cwd, start, \"end\", duration_ms, \
     ended, prompts, turns, subagent_turns, tool_uses, tool_failures, delegations, \
     estimated_tokens, unknown_total, first_seen, last_seen, \
     (SELECT count(*) FROM turns t WHERE t.session_id = v_session_summary.session_id \
        AND t.imported = 1) AS imported_turns";

/// A session that went nowhere: no prompt, no turn, no tool call, not even one begun or
/// denied (`tools` names every call the session made), such as a start from `clear` or
/// `compact`, or an editor opened and closed. The list leaves them out unless asked.
const WENT_SOMEWHERE: &str = "(prompts > 0 OR turns > 0 OR tool_uses > 0 OR tools <> '')";

/// [`WENT_SOMEWHERE`]'s opposite.
const WENT_NOWHERE: &str = "NOT (prompts > 0 OR turns > 0 OR tool_uses > 0 OR tools <> '')";

/// The statement of the list: sessions newest first (by their last event), filtered; those
/// that went nowhere only `with_empty`.
pub fn list_sql(filters: &Filters, limit: Option<u64>, with_empty: bool) -> (String, Vec<Param>) {
    let (mut wheres, params) = filters.conditions();
    if !with_empty {
        wheres.push(WENT_SOMEWHERE);
    }
    let filter = match wheres.is_empty() {
        true => String::new(),
        false => format!("WHERE {}", wheres.join(" AND ")),
    };
    let limit = limit.map_or(String::new(), |n| format!("\nLIMIT {n}"));
    (
        format!(
            "SELECT {LIST_COLUMNS}\nFROM v_session_summary {filter}\n\
             ORDER BY last_seen DESC, session_id{limit}"
        ),
        params,
    )
}

/// How many sessions `filters` choose that went nowhere (which the list leaves out).
pub fn empty_count(db: &ReadOnlyDb, filters: &Filters) -> Result<i64, QueryError> {
    let (mut wheres, params) = filters.conditions();
    wheres.push(WENT_NOWHERE);
    let (_, rows) = report::fetch(
        db,
        &format!(
            "SELECT count(*) FROM v_session_summary WHERE {}",
            wheres.join(" AND ")
        ),
        &params,
    )?;
    Ok(rows.first().and_then(|r| integer(&r[0])).unwrap_or(0))
}

/// Every session id in the store, sorted: what the shortest unique prefixes are measured
/// against.
pub fn all_ids(db: &ReadOnlyDb) -> Result<Vec<String>, QueryError> {
    let (_, rows) = report::fetch(
        db,
        "SELECT session_id FROM sessions ORDER BY session_id",
        &[],
    )?;
    Ok(rows.into_iter().filter_map(|r| text(&r[0])).collect())
}

/// The readable rows of the list (`columns`/`rows` as [`list_sql`] gave them): session as a
/// unique prefix, project, when, how long, and the counts; `imported` (of the turns, how many
/// only an import read) when a listed session has such turns.
pub fn readable(
    columns: &[String],
    rows: &[Vec<Value>],
    all_ids: &[String],
    now_ms: i64,
) -> (Vec<String>, Vec<Vec<Value>>) {
    let prefixes = human::unique_prefixes(all_ids, MIN_PREFIX);
    let short = |id: &str| match all_ids.binary_search_by(|probe| probe.as_str().cmp(id)) {
        Ok(i) => prefixes[i].clone(),
        Err(_) => id.to_string(),
    };
    let col = |name: &str| columns.iter().position(|c| c == name);
    let [id, agent, model, cwd, duration, prompts, turns, tools, failed, last, imported] = [
        "session_id",
        "agent",
        "model",
        "cwd",
        "duration_ms",
        "prompts",
        "turns",
        "tool_uses",
        "tool_failures",
        "last_seen",
        "imported_turns",
    ]
    .map(col);
    let get = |row: &[Value], i: Option<usize>| i.and_then(|i| row.get(i)).cloned();
    let any_imported = rows
        .iter()
        .any(|row| get(row, imported).as_ref().and_then(integer) > Some(0));
    let mut names = vec![
        "session", "agent", "project", "last", "lasted", "prompts", "turns", "tools", "failed",
        "model",
    ];
    if any_imported {
        names.insert(7, "imported");
    }
    let out = rows
        .iter()
        .map(|row| {
            let t = |i| get(row, i).as_ref().and_then(text).unwrap_or_default();
            let n = |i| get(row, i).as_ref().and_then(integer);
            let mut cells = vec![
                Value::Text(short(&t(id))),
                Value::Text(t(agent)),
                Value::Text(human::project(&t(cwd)).to_string()),
                Value::Text(n(last).map_or(String::new(), |ms| human::ago(ms, now_ms))),
                Value::Text(n(duration).map_or(String::new(), human::duration)),
                n(prompts).map_or(Value::Null, Value::Integer),
                n(turns).map_or(Value::Null, Value::Integer),
                n(tools).map_or(Value::Null, Value::Integer),
                n(failed).map_or(Value::Null, Value::Integer),
                Value::Text(human::model(&t(model)).to_string()),
            ];
            if any_imported {
                cells.insert(7, n(imported).map_or(Value::Null, Value::Integer));
            }
            cells
        })
        .collect();
    (names.iter().map(|s| s.to_string()).collect(), out)
}

/// Columns of the readable list right-aligned as text figures (the counts are numbers,
/// right-aligned anyway): durations line up as they do in `summarize`.
pub const READABLE_RIGHT: &[&str] = &["lasted"];

/// Columns of the readable list that may be cut to fit a narrow terminal; the id prefix and
/// the figures never are.
pub const READABLE_CUTTABLE: &[&str] = &["project", "model", "agent"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filter_is_bound_never_inlined() {
        let f = Filters {
            since: Some(1),
            until: Some(2),
            agent: Some("claude'; drop".into()),
            project: Some("a_b%".into()),
            session: Some("s".into()),
        };
        let (clause, params) = f.where_clause();
        assert!(
            !clause.contains("drop") && !clause.contains("a_b%"),
            "{clause}"
        );
        assert_eq!(params.len(), 5);
        assert_eq!(Filters::default().where_clause().0, "");
    }

    #[test]
    fn event_conditions_filter_on_the_events_own_time() {
        let f = Filters {
            since: Some(1),
            until: Some(2),
            agent: Some("codex".into()),
            ..Filters::default()
        };
        let (wheres, params) = f.event_conditions();
        assert_eq!(wheres[..2], ["ts >= :since", "ts < :until"]);
        assert_eq!(wheres[2], "agent = :agent");
        assert_eq!(params.len(), 3);
        assert_eq!(
            f.conditions().0[..2],
            ["last_seen >= :since", "first_seen < :until"]
        );
    }
}
