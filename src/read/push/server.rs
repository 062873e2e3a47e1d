//! The team store's side of `cmstore push`: the connection (a URL, or the standard `PG*`
//! variables, TLS through rustls), the team schema's migrations, and the transactions that
//! write a batch.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::{Client, Config};

use super::local::PriceRow;
use super::rows::Rows;
use crate::config::EnvLookup;

/// The team schema's migrations, in order; a server's `team_schema` table says how many ran.
/// They add tables, nullable columns, views and triggers and never change what a push writes,
/// so an older cmstore keeps pushing into a schema a newer one has moved on.
pub const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_team_tables",
        include_str!("../../../migrations/team/0001_team_tables.sql"),
    ),
    (
        "0002_rollups",
        include_str!("../../../migrations/team/0002_rollups.sql"),
    ),
    (
        "0003_check_results",
        include_str!("../../../migrations/team/0003_check_results.sql"),
    ),
    (
        "0004_rollup_gate",
        include_str!("../../../migrations/team/0004_rollup_gate.sql"),
    ),
    (
        "0005_call_decided_by",
        include_str!("../../../migrations/team/0005_call_decided_by.sql"),
    ),
    (
        "0006_session_turns_and_tool_days",
        include_str!("../../../migrations/team/0006_session_turns_and_tool_days.sql"),
    ),
    (
        "0007_premium_requests",
        include_str!("../../../migrations/team/0007_premium_requests.sql"),
    ),
    (
        "0008_chain",
        include_str!("../../../migrations/team/0008_chain.sql"),
    ),
    (
        "0009_premium_index",
        include_str!("../../../migrations/team/0009_premium_index.sql"),
    ),
    (
        "0010_event_content",
        include_str!("../../../migrations/team/0010_event_content.sql"),
    ),
    (
        "0011_imported_turns",
        include_str!("../../../migrations/team/0011_imported_turns.sql"),
    ),
];

/// The advisory lock key one migrating machine holds, so that two never migrate at once.
const MIGRATION_LOCK: i64 = 0x0063_6d73_746f_7265; // "cmstore" in ASCII

/// How long a connection attempt may take, unless the URL says otherwise.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the server could not be reached or written.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The URL or the variables do not make a connection string.
    #[error("{0}")]
    Settings(String),
    /// A statement cmstore does not run on a store it only reads.
    #[error("{0}")]
    Refused(String),
    /// The server refused, failed or went away.
    #[error("{context}: {source}")]
    Postgres {
        context: String,
        #[source]
        source: postgres::Error,
    },
}

impl ServerError {
    /// What a person reads: with the server's own message (and its detail and hint) where
    /// the server said why, which the error's `Display` leaves to its source.
    pub fn explained(&self) -> String {
        match self {
            ServerError::Postgres { context, source } => match source.as_db_error() {
                Some(db) => {
                    let mut text = format!("{context}: {}", db.message());
                    for more in [db.detail(), db.hint()].into_iter().flatten() {
                        text.push_str(&format!(" ({more})"));
                    }
                    text
                }
                None => format!("{context}: {source}"),
            },
            other => other.to_string(),
        }
    }

    pub(crate) fn pg(context: &str) -> impl FnOnce(postgres::Error) -> ServerError + '_ {
        move |source| ServerError::Postgres {
            context: context.to_string(),
            source,
        }
    }
}

/// Where to connect, read from `[push] url` or the `PG*` variables, as libpq reads them:
/// a URL (`postgres://user:password@host:port/db?sslmode=require`) or `key=value` words;
/// what it leaves out, `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE` and
/// `PGSSLMODE` give, then libpq's defaults (`localhost`, port 5432, the login name as user and
/// database), and a password still missing comes from the password file (`PGPASSFILE`,
/// `~/.pgpass`). A service (`service=NAME` in the string, else `PGSERVICE`) fills in what the
/// string leaves out before the variables do ([`super::service`]).
pub fn settings(url: Option<&str>, env: EnvLookup<'_>) -> Result<Config, ServerError> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let (url, service) = super::service::take_service(url, env);
    let url = url.as_deref();
    let mut config = match url {
        Some(url) => url
            .parse::<Config>()
            .map_err(|e| ServerError::Settings(format!("push.url: {e}")))?,
        None => Config::new(),
    };
    let mut mode = None;
    if let Some(name) = service {
        let given = super::service::lookup(&name, env).map_err(ServerError::Settings)?;
        mode = from_service(&mut config, &name, &given)?;
    }
    if config.get_hosts().is_empty() {
        let host = var("PGHOST").unwrap_or_else(|| "localhost".to_string());
        for host in host.split(',') {
            config.host(host.trim());
        }
    }
    if config.get_ports().is_empty() {
        if let Some(port) = var("PGPORT") {
            let port = port
                .trim()
                .parse()
                .map_err(|_| ServerError::Settings(format!("PGPORT={port}: not a port")))?;
            config.port(port);
        }
    }
    if config.get_user().is_none() {
        if let Some(user) = var("PGUSER")
            .or_else(|| var("USER"))
            .or_else(|| var("USERNAME"))
        {
            config.user(&user);
        }
    }
    if config.get_password().is_none() {
        if let Some(password) = var("PGPASSWORD") {
            config.password(password);
        }
    }
    if config.get_dbname().is_none() {
        if let Some(db) = var("PGDATABASE").or_else(|| config.get_user().map(str::to_owned)) {
            config.dbname(&db);
        }
    }
    if config.get_password().is_none() {
        if let Some(password) = pgpass_file(env).and_then(|file| from_pgpass(&file, &config)) {
            config.password(password);
        }
    }
    if url.is_none_or(|u| !u.contains("sslmode")) {
        let from_env = || var("PGSSLMODE").map(|m| ssl_mode(&m, "PGSSLMODE"));
        if let Some(mode) = mode.map(Ok).or_else(from_env) {
            config.ssl_mode(mode?);
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    config.application_name("cmstore push");
    Ok(config)
}

/// An `sslmode` as libpq names it (`source` says where it was given).
fn ssl_mode(mode: &str, source: &str) -> Result<SslMode, ServerError> {
    match mode.trim() {
        "disable" | "allow" => Ok(SslMode::Disable),
        "prefer" => Ok(SslMode::Prefer),
        // rustls always verifies the certificate and the name: verify-full.
        "require" | "verify-ca" | "verify-full" => Ok(SslMode::Require),
        other => Err(ServerError::Settings(format!(
            "{source}={other}: expected disable, prefer, require, verify-ca or verify-full"
        ))),
    }
}

/// Fills in from service `name`'s `given` settings what the connection string left out; gives
/// back its `sslmode`, which applies only when the string has none.
fn from_service(
    config: &mut Config,
    name: &str,
    given: &[(String, String)],
) -> Result<Option<SslMode>, ServerError> {
    let source = |key: &str| format!("service \"{name}\" {key}");
    let mut mode = None;
    for (key, value) in given {
        match key.as_str() {
            "host" if config.get_hosts().is_empty() => {
                for host in value.split(',') {
                    config.host(host.trim());
                }
            }
            "port" if config.get_ports().is_empty() => {
                let port = value.parse().map_err(|_| {
                    ServerError::Settings(format!("{}={value}: not a port", source("port")))
                })?;
                config.port(port);
            }
            "dbname" if config.get_dbname().is_none() => {
                config.dbname(value);
            }
            "user" if config.get_user().is_none() => {
                config.user(value);
            }
            "password" if config.get_password().is_none() => {
                config.password(value);
            }
            "connect_timeout" if config.get_connect_timeout().is_none() => {
                let secs: u64 = value.parse().map_err(|_| {
                    ServerError::Settings(format!(
                        "{}={value}: not a number of seconds",
                        source("connect_timeout")
                    ))
                })?;
                config.connect_timeout(Duration::from_secs(secs.max(2)));
            }
            "sslmode" => mode = Some(ssl_mode(value, &source("sslmode"))?),
            // The string's own, or this program's name.
            _ => {}
        }
    }
    Ok(mode)
}

/// The password file libpq reads: `PGPASSFILE`, else `~/.pgpass` (on Windows
/// `%APPDATA%\postgresql\pgpass.conf`). On Unix a file that others may read is not used, as
/// libpq does not use it.
fn pgpass_file(env: EnvLookup<'_>) -> Option<String> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let path = var("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            if cfg!(windows) {
                var("APPDATA").map(|d| Path::new(&d).join("postgresql").join("pgpass.conf"))
            } else {
                var("HOME").map(|h| Path::new(&h).join(".pgpass"))
            }
        })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            return None;
        }
    }
    std::fs::read_to_string(path).ok()
}

/// The password of the first line of a password file (`host:port:database:user:password`,
/// `*` for any, `\` before a `:` or `\` in a field) that matches where `config` connects.
/// A socket directory matches `localhost`, as in libpq.
fn from_pgpass(text: &str, config: &Config) -> Option<String> {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        #[cfg(unix)]
        Some(Host::Unix(_)) => "localhost".to_string(),
        None => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let want = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or(""),
    ];
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .map(pgpass_fields)
        .find(|fields| {
            fields.len() == 5
                && fields[..4]
                    .iter()
                    .zip(want)
                    .all(|(field, want)| field == "*" || field == want)
        })
        .map(|mut fields| fields.remove(4))
}

/// A password file line's fields: split at `:`, a `\` taking the next character as it is.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("one field").extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

/// The server as the push names it in its cursor and messages: user, host, port and
/// database, never the password.
pub fn destination(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        #[cfg(unix)]
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{host}:{port}/{}",
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or("")
    )
}

/// Connects, with TLS as the settings ask (rustls: the certificate is always verified, against
/// the built-in roots and `ca_file`'s).
pub fn connect(config: &Config, ca_file: Option<&Path>) -> Result<Client, ServerError> {
    let tls = tls(ca_file)?;
    config.connect(tls).map_err(|source| {
        let untrusted =
            crate::support::failure::chain(&source).contains("invalid peer certificate");
        let hint = match untrusted {
            true => {
                " (the server's certificate is not one the built-in roots or push.ca_file \
                     vouch for: name its authority in ca_file, or sslmode=disable on a network \
                     you trust)"
            }
            false => "",
        };
        ServerError::Postgres {
            context: format!("cannot connect to {}{hint}", destination(config)),
            source,
        }
    })
}

fn tls(ca_file: Option<&Path>) -> Result<tokio_postgres_rustls::MakeRustlsConnect, ServerError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_file {
        let bad = |e: &dyn std::fmt::Display| {
            ServerError::Settings(format!("push.ca_file {}: {e}", path.display()))
        };
        let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))?;
        for cert in certs {
            roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Settings(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// Brings the team schema up to date, under an advisory lock so that machines starting
/// together migrate once; returns the schema's version. A schema newer than this cmstore is
/// fine (migrations only add) as long as it has run this cmstore's migrations.
pub fn migrate(client: &mut Client) -> Result<i64, ServerError> {
    let mut tx = client
        .transaction()
        .map_err(ServerError::pg("cannot start the schema's migration"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(ServerError::pg("cannot lock the schema"))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS team_schema (
             version    bigint PRIMARY KEY,
             name       text   NOT NULL,
             applied_at bigint NOT NULL
         )",
    )
    .map_err(ServerError::pg("cannot create team_schema"))?;
    let found: i64 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM team_schema", &[])
        .map_err(ServerError::pg("cannot read team_schema"))?
        .get(0);
    for (n, (name, sql)) in MIGRATIONS.iter().enumerate() {
        let version = n as i64 + 1;
        if version <= found {
            continue;
        }
        tx.batch_execute(sql)
            .map_err(|source| ServerError::Postgres {
                context: format!("team migration {name}"),
                source,
            })?;
        tx.execute(
            "INSERT INTO team_schema (version, name, applied_at) VALUES ($1, $2, $3)",
            &[&version, name, &crate::support::clock::now_ms()],
        )
        .map_err(ServerError::pg("cannot record the migration"))?;
    }
    tx.commit()
        .map_err(ServerError::pg("cannot commit the schema's migration"))?;
    Ok(found.max(MIGRATIONS.len() as i64))
}

/// Who is pushing: the machine and its labels, carried on every row.
pub struct Machine {
    pub id: String,
    pub user: Option<String>,
    pub team: Option<String>,
    pub host: Option<String>,
    pub content: &'static str,
}

/// Writes `tables` in one transaction, with the machine's row; nothing of them is on the
/// server unless all is. `replace_usage_of`: sessions whose usage rows are replaced whole (a
/// row the local store deleted, such as a session's totals replaced by its responses, goes).
pub fn write(
    client: &mut Client,
    machine: &Machine,
    tables: &[&Rows],
    replace_usage_of: &[String],
) -> Result<(), ServerError> {
    let mut tx = client
        .transaction()
        .map_err(ServerError::pg("cannot start a transaction"))?;
    let now = crate::support::clock::now_ms();
    tx.execute(
        "INSERT INTO machines (machine_id, user_label, team_label, host, cmstore_version,
                               content, first_push, last_push)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
         ON CONFLICT (machine_id) DO UPDATE SET user_label = EXCLUDED.user_label,
           team_label = EXCLUDED.team_label, host = EXCLUDED.host,
           cmstore_version = EXCLUDED.cmstore_version, content = EXCLUDED.content,
           last_push = EXCLUDED.last_push",
        &[
            &machine.id,
            &machine.user,
            &machine.team,
            &machine.host,
            &env!("CARGO_PKG_VERSION"),
            &machine.content,
            &now,
        ],
    )
    .map_err(ServerError::pg("cannot write the machine's row"))?;
    if !replace_usage_of.is_empty() {
        tx.execute(
            "DELETE FROM usage WHERE machine_id = $1 AND session_id = ANY($2)",
            &[&machine.id, &replace_usage_of],
        )
        .map_err(ServerError::pg("cannot replace usage"))?;
    }
    for rows in tables.iter().filter(|r| !r.is_empty()) {
        let (sql, params) = rows.insert(
            &machine.id,
            [&machine.user, &machine.team],
            &machine.content,
        );
        tx.execute(sql.as_str(), &params)
            .map_err(|source| ServerError::Postgres {
                context: format!("cannot write {}", rows.table_name()),
                source,
            })?;
    }
    tx.commit()
        .map_err(ServerError::pg("cannot commit the batch"))?;
    Ok(())
}

/// The id of the machine's last chain record on the server (0: none).
pub fn chain_head_id(client: &mut Client, machine: &str) -> Result<i64, ServerError> {
    Ok(client
        .query_one(
            "SELECT coalesce(max(id), 0) FROM chain WHERE machine_id = $1",
            &[&machine],
        )
        .map_err(ServerError::pg("cannot read the chain"))?
        .get(0))
}

/// Writes the machine's price table in one statement (a model two machines price
/// differently: the last push wins).
pub fn write_prices(
    client: &mut Client,
    machine: &str,
    prices: &[PriceRow],
) -> Result<(), ServerError> {
    let models: Vec<&str> = prices.iter().map(|p| p.0.as_str()).collect();
    let rate = |i: usize| -> Vec<f64> { prices.iter().map(|p| p.1[i]).collect() };
    let rates = [rate(0), rate(1), rate(2), rate(3), rate(4)];
    let as_of: Vec<Option<&str>> = prices.iter().map(|p| p.2.as_deref()).collect();
    let origin: Vec<&str> = prices.iter().map(|p| p.3.as_str()).collect();
    client
        .execute(
            "INSERT INTO prices (model, input, output, cache_write_5m, cache_write_1h, cache_read,
                                 as_of, origin, machine_id)
             SELECT u.*, $9 FROM unnest($1::text[], $2::float8[], $3::float8[], $4::float8[],
                                        $5::float8[], $6::float8[], $7::text[], $8::text[]) AS u
             ON CONFLICT (model) DO UPDATE SET input = EXCLUDED.input, output = EXCLUDED.output,
               cache_write_5m = EXCLUDED.cache_write_5m, cache_write_1h = EXCLUDED.cache_write_1h,
               cache_read = EXCLUDED.cache_read, as_of = EXCLUDED.as_of,
               origin = EXCLUDED.origin, machine_id = EXCLUDED.machine_id",
            &[
                &models, &rates[0], &rates[1], &rates[2], &rates[3], &rates[4], &as_of, &origin,
                &machine,
            ],
        )
        .map_err(ServerError::pg("cannot write prices"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_variables_fill_in_what_the_url_leaves_out() {
        let env = env_of(&[
            ("PGHOST", "db.example.com"),
            ("PGPORT", "6543"),
            ("PGUSER", "ana"),
            ("PGPASSWORD", "secret"),
            ("PGDATABASE", "team"),
            ("PGSSLMODE", "verify-full"),
        ]);
        let config = settings(None, &env).unwrap();
        assert_eq!(
            destination(&config),
            "postgres://ana@db.example.com:6543/team"
        );
        assert_eq!(config.get_password(), Some(&b"secret"[..]));
        assert_eq!(config.get_ssl_mode(), SslMode::Require);
        let config = settings(Some("postgres://bo@h2/other?sslmode=disable"), &env).unwrap();
        // A URL's host without a port is on 5432, as the client library reads it.
        assert_eq!(destination(&config), "postgres://bo@h2:5432/other");
        assert_eq!(
            config.get_ssl_mode(),
            SslMode::Disable,
            "the URL's own mode wins"
        );
        assert_eq!(config.get_password(), Some(&b"secret"[..]));
    }

    #[test]
    fn a_service_fills_in_before_the_variables_and_after_the_string() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("services");
        std::fs::write(
            &file,
            "[team]\nhost=db.example.com\nport=6543\ndbname=cmstore\nuser=svc\nsslmode=require\n",
        )
        .unwrap();
        let path = file.display().to_string();
        let env = move |name: &str| match name {
            "PGSERVICEFILE" => Some(path.clone()),
            "PGSERVICE" => Some("team".to_string()),
            "PGHOST" => Some("from-the-variable".to_string()),
            "PGUSER" => Some("variable-user".to_string()),
            _ => None,
        };
        let config = settings(None, &env).unwrap();
        assert_eq!(
            destination(&config),
            "postgres://svc@db.example.com:6543/cmstore"
        );
        assert_eq!(config.get_ssl_mode(), SslMode::Require);
        let config = settings(
            Some("postgres://ana@h2/other?service=team&sslmode=disable"),
            &env,
        )
        .unwrap();
        assert_eq!(destination(&config), "postgres://ana@h2:5432/other");
        assert_eq!(config.get_ssl_mode(), SslMode::Disable);
        let config = settings(Some("postgresql:///?service=team"), &env).unwrap();
        assert_eq!(
            destination(&config),
            "postgres://svc@db.example.com:6543/cmstore"
        );
        let err = settings(Some("service=missing"), &env).unwrap_err();
        assert!(
            err.to_string()
                .contains("\"missing\" is defined in no service file"),
            "{err}"
        );
    }

    #[test]
    fn the_password_file_gives_the_password_of_the_first_matching_line() {
        let text = "# team\n\
                    db.example.com:5432:other:ana:wrong\n\
                    db.example.com:*:team:ana:p\\:w\\\\d\n\
                    *:*:*:*:fallback\n";
        let config = settings(Some("postgres://ana@db.example.com/team"), &env_of(&[])).unwrap();
        assert_eq!(from_pgpass(text, &config).as_deref(), Some("p:w\\d"));
        let config = settings(Some("postgres://bo@elsewhere/x"), &env_of(&[])).unwrap();
        assert_eq!(from_pgpass(text, &config).as_deref(), Some("fallback"));
        assert_eq!(from_pgpass("short:line", &config), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_password_file_others_may_read_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "*:*:*:*:secret\n").unwrap();
        let path = file.display().to_string();
        let env = move |name: &str| (name == "PGPASSFILE").then(|| path.clone());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(settings(None, &env).unwrap().get_password(), None);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            settings(None, &env).unwrap().get_password(),
            Some(&b"secret"[..])
        );
    }

    #[test]
    fn nothing_given_is_libpqs_defaults_and_the_password_is_never_named() {
        let config = settings(None, &env_of(&[("USER", "kim")])).unwrap();
        assert_eq!(destination(&config), "postgres://kim@localhost:5432/kim");
        let config = settings(Some("postgres://u:pw@h/d"), &env_of(&[])).unwrap();
        assert!(!destination(&config).contains("pw"));
        let bad = settings(Some("postgres://h:notaport/d"), &env_of(&[]));
        assert!(bad.is_err());
        let bad = settings(None, &env_of(&[("PGSSLMODE", "sometimes")])).unwrap_err();
        assert!(bad.to_string().contains("PGSSLMODE=sometimes"), "{bad}");
    }
}
