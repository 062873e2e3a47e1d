//! The dashboard's data on a team store (`cmstore serve --store postgres://…`): the same
//! endpoints and JSON as [`super::api`] gives for the local store, from the statements of
//! `cmstore summarize --store`, `sessions --store` and `show --store`
//! ([`crate::read::push::team_reports`], [`crate::read::push::team_story`]) and the
//! dashboard's own ([`crate::read::push::team_dashboard`]), plus the team's dimensions: the
//! overview's figures per user and per machine, each session's machine and user, and the
//! machines and users the filters offer.
//!
//! Every statement runs in a read-only transaction of its own (the overview's parts are read
//! one after another, not in one snapshot), on the worker's own connection, connected again
//! when the server went away. Days are UTC days, as on every team report.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::Client;
use serde_json::{json, Value as Json};

use super::api::{self, SqlResult};
use crate::config::Config;
use crate::read::gate::{self, tally};
use crate::read::push::server::ServerError;
use crate::read::push::team_dashboard as dash;
use crate::read::push::team_query::{self, Rows};
use crate::read::push::team_reports::{self, TeamBy, TeamFilters, TeamPlan};
use crate::read::push::team_story;
use crate::read::render::json_objects as objects;
use crate::read::report::{integer, text};

/// Where the team store is, and what the dashboard shows of it.
#[derive(Debug, Clone)]
pub struct TeamSource {
    /// `postgres://…`, completed by the `PG*` variables and the password file.
    pub url: String,
    /// The configuration (`[push] ca_file` for TLS).
    pub config: Config,
    /// Only this machine, whatever a page asks (`--machine`).
    pub machine: Option<String>,
    /// Only this user label, whatever a page asks (`--user`).
    pub user: Option<String>,
}

/// One worker's connection to the team store.
pub struct TeamDb {
    source: Arc<TeamSource>,
    client: Mutex<Option<Client>>,
}

impl TeamDb {
    /// Connects to the store `source` names.
    pub fn connect(source: Arc<TeamSource>) -> Result<TeamDb, ServerError> {
        let client = team_query::connect_store(&source.url, &source.config)?;
        Ok(TeamDb {
            source,
            client: Mutex::new(Some(client)),
        })
    }

    /// A worker's: it connects at its first request. The server has read the store once
    /// before it gave its address; a worker must not stop it because the store went away
    /// since (it answers 503 until the store is back).
    pub fn lazy(source: Arc<TeamSource>) -> TeamDb {
        TeamDb {
            source,
            client: Mutex::new(None),
        }
    }

    /// Runs `work` on the connection, connecting again first when the last one was lost.
    fn with<T>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, ServerError>,
    ) -> Result<T, ServerError> {
        let mut slot = self.client.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_none_or(Client::is_closed) {
            *slot = Some(team_query::connect_store(
                &self.source.url,
                &self.source.config,
            )?);
        }
        let client = slot.as_mut().expect("connected above");
        let result = work(client);
        if client.is_closed() {
            *slot = None;
        }
        result
    }

    fn report(&self, plan: &TeamPlan) -> Result<Rows, ServerError> {
        self.statement(&plan.sql, &plan.params)
    }

    fn statement(&self, sql: &str, params: &[String]) -> Result<Rows, ServerError> {
        self.with(|c| team_query::run_report(c, sql, params))
    }

    /// The filters of a page's request, within the machine and user the dashboard is
    /// limited to: `machine` and `user` count only where the command line gave none.
    pub fn filters(
        &self,
        common: crate::read::sessions::Filters,
        machine: Option<&str>,
        user: Option<&str>,
    ) -> TeamFilters {
        TeamFilters {
            common,
            machine: self.source.machine.clone().or(machine.map(str::to_string)),
            user: self.source.user.clone().or(user.map(str::to_string)),
        }
    }
}

/// The store's version: the machines and their newest push.
pub fn version(db: &TeamDb) -> Result<String, ServerError> {
    let (_, rows) = db.statement(dash::VERSION, &[])?;
    Ok(format!("team-{}", api::version_of(&rows)))
}

/// The overview, as [`api::overview`], with the figures per user and per machine.
pub fn overview(db: &TeamDb, filters: &TeamFilters) -> Result<Json, ServerError> {
    let (columns, rows) = db.report(&dash::days(filters))?;
    let days = objects(columns, &rows);
    let mut tools = tools(db, filters)?;
    tools.truncate(10);
    let gate = gate_report(db, filters)?;
    let (_, rows) = db.report(&dash::projects(filters))?;
    let (projects, sessions) = api::busiest(&rows);
    let by = |by: TeamBy| -> Result<Vec<Json>, ServerError> {
        let (columns, rows) = db.report(&team_reports::plan(by, filters))?;
        Ok(objects(columns, &rows))
    };
    let (_, newest) = db.statement(dash::NEWEST_DAY, &[])?;
    Ok(json!({
        "store": "team",
        "totals": api::totals(&days, sessions),
        "days": days,
        "tools": tools,
        "gate": gate,
        "projects": projects,
        "users": by(TeamBy::User)?,
        "machines": by(TeamBy::Machine)?,
        "newest_day": newest.first().and_then(|r| text(&r[0])),
        "zone": "UTC",
    }))
}

/// `summarize --store --by tool`: one object per tool, the most called first.
pub fn tools(db: &TeamDb, filters: &TeamFilters) -> Result<Vec<Json>, ServerError> {
    let (columns, rows) = db.report(&team_reports::plan(TeamBy::Tool, filters))?;
    Ok(objects(columns, &rows))
}

/// `gate report`'s figures over the calls of every machine `filters` choose.
pub fn gate_report(db: &TeamDb, filters: &TeamFilters) -> Result<Json, ServerError> {
    let (_, calls) = db.report(&dash::gate_calls(filters))?;
    let calls = calls
        .first()
        .and_then(|r| r.first())
        .and_then(integer)
        .unwrap_or(0);
    let (_, rows) = db.report(&dash::gate_findings(filters))?;
    let findings: Vec<tally::Finding> = rows.iter().map(|r| gate::finding(r)).collect();
    let (totals, rows) = tally::tally_findings(calls, &findings);
    Ok(api::gate_json(&totals, &rows))
}

/// `sessions --store --format json`, with a short id to show (`short`: the shortest prefix
/// no other listed session shares), how many that went nowhere it left out (`hidden`), and
/// what the filters offer: agents, machines and users.
pub fn sessions(
    db: &TeamDb,
    filters: &TeamFilters,
    limit: u64,
    all: bool,
) -> Result<Json, ServerError> {
    let hidden = match all {
        true => 0,
        false => {
            let (_, rows) = db.report(&team_reports::nowhere_count(filters))?;
            rows.first()
                .and_then(|r| r.first())
                .and_then(integer)
                .unwrap_or(0)
        }
    };
    let (columns, rows) = db.report(&team_reports::sessions_list(filters, Some(limit), all))?;
    let mut list = objects(columns, &rows);
    let mut ids: Vec<String> = list
        .iter()
        .filter_map(|s| s["session_id"].as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids.dedup();
    api::add_shorts(&mut list, &ids);
    let (_, agents) = db.statement(dash::AGENTS, &[])?;
    let agents: Vec<_> = agents.iter().filter_map(|r| text(&r[0])).collect();
    let (_, machines) = db.statement(dash::MACHINES, &[])?;
    let mut users: Vec<String> = machines.iter().filter_map(|r| text(&r[1])).collect();
    users.sort();
    users.dedup();
    let machines: Vec<Json> = machines
        .iter()
        .map(|r| json!({"machine_id": text(&r[0]), "user_label": text(&r[1]), "host": text(&r[2])}))
        .collect();
    Ok(json!({
        "store": "team",
        "sessions": list,
        "agents": agents,
        "machines": machines,
        "users": users,
        "hidden": hidden,
    }))
}

/// One session of the team store: its story (`show --store --format json`) under `story`
/// and its tool calls for the timeline under `calls`. `given` is an id or a unique prefix,
/// among the sessions of the machine and user `filters` choose. `Err(Settings)` says why
/// no one session was found.
pub fn session(db: &TeamDb, given: &str, filters: &TeamFilters) -> Result<Json, ServerError> {
    let found = db.with(|c| {
        team_story::resolve(
            c,
            given,
            filters.machine.as_deref(),
            filters.user.as_deref(),
        )
    })?;
    let story = db.with(|c| team_story::load(c, &found))?.ok_or_else(|| {
        ServerError::Settings(format!(
            "session {} went from the team store while reading it",
            found.session_id
        ))
    })?;
    let key = [found.machine_id.clone(), found.session_id.clone()];
    let (_, rows) = db.statement(dash::TIMELINE_CALLS, &key)?;
    let calls = api::timeline(&rows);
    let story = serde_json::to_value(&story).unwrap_or(Json::Null);
    Ok(json!({ "story": story, "calls": calls }))
}

/// One tool call's input and output, for the timeline's detail pane, on `machine` (of `user`'s
/// sessions, when given); `Ok(None)` when the session has no call with that key.
pub fn call(
    db: &TeamDb,
    machine: &str,
    user: Option<&str>,
    session: &str,
    key: &str,
) -> Result<Option<Json>, ServerError> {
    let params = [
        machine.to_string(),
        session.to_string(),
        key.to_string(),
        user.unwrap_or_default().to_string(),
    ];
    let (_, rows) = db.statement(dash::CALL, &params)?;
    Ok(rows.first().map(|r| api::call_detail(r)))
}

/// One statement of the SQL page, as `cmstore query --store` runs it: a read-only
/// transaction, the time limit (`None`: none), at most `max_rows` rows. Refused when the
/// dashboard is limited to a machine or user: SQL reads the whole store.
pub fn sql(
    db: &TeamDb,
    sql: &str,
    max_rows: u64,
    timeout: Option<Duration>,
) -> Result<SqlResult, ServerError> {
    if db.source.machine.is_some() || db.source.user.is_some() {
        return Err(ServerError::Refused(
            "the SQL page reads the whole team store: it is not offered on a dashboard \
             limited with --machine or --user"
                .into(),
        ));
    }
    let started = std::time::Instant::now();
    let ((columns, rows), cut) = db.with(|c| team_query::run_capped(c, sql, timeout, max_rows))?;
    Ok(SqlResult {
        columns,
        rows,
        cut,
        elapsed_ms: started.elapsed().as_millis(),
    })
}
