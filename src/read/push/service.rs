//! Connection services, as libpq reads them: `service=NAME` in the connection words or the
//! URL's query (`postgres:///?service=team`), else `PGSERVICE`, names a section of the
//! service file (`PGSERVICEFILE`, else `~/.pg_service.conf`, on Windows
//! `%APPDATA%\postgresql\.pg_service.conf`; a service it lacks is looked for in
//! `PGSYSCONFDIR/pg_service.conf`), whose `key=value` lines fill in what the connection
//! string leaves out, before the `PG*` variables do.

use std::path::{Path, PathBuf};

use crate::config::EnvLookup;

/// The settings a service may give, as the connection words name them.
pub const KEYS: &[&str] = &[
    "host",
    "port",
    "dbname",
    "user",
    "password",
    "sslmode",
    "connect_timeout",
    "application_name",
];

/// `url` without its `service=NAME` (which the client library does not take), and the
/// service's name: the one the string gives, else `PGSERVICE`'s.
pub fn take_service(url: Option<&str>, env: EnvLookup<'_>) -> (Option<String>, Option<String>) {
    let from_env = || env("PGSERVICE").filter(|v| !v.trim().is_empty());
    let Some(url) = url else {
        return (None, from_env());
    };
    let (rest, named) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        take_from_query(url)
    } else {
        take_from_words(url)
    };
    (Some(rest), named.or_else(from_env))
}

/// A URL's `service=` query parameter taken out.
fn take_from_query(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut named = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.strip_prefix("service=") {
            Some(name) => {
                named = Some(name.to_string());
                false
            }
            None => true,
        })
        .collect();
    match kept.is_empty() {
        true => (base.to_string(), named),
        false => (format!("{base}?{}", kept.join("&")), named),
    }
}

/// A `service=NAME` word taken out of `key=value` words (the name unquoted: libpq's quoting
/// of a name with spaces is not needed for a service's name).
fn take_from_words(words: &str) -> (String, Option<String>) {
    let mut named = None;
    let kept: Vec<&str> = words
        .split_whitespace()
        .filter(|word| match word.strip_prefix("service=") {
            Some(name) => {
                named = Some(name.trim_matches('\'').to_string());
                false
            }
            None => true,
        })
        .collect();
    (kept.join(" "), named)
}

/// The `key=value` settings of service `name`, from the first service file that defines it.
pub fn lookup(name: &str, env: EnvLookup<'_>) -> Result<Vec<(String, String)>, String> {
    let files = service_files(env);
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        if let Some(settings) =
            section(&text, name).map_err(|e| format!("{}: {e}", file.display()))?
        {
            return Ok(settings);
        }
    }
    let looked: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    Err(format!(
        "service \"{name}\" is defined in no service file (looked in {})",
        if looked.is_empty() {
            "none: set PGSERVICEFILE".to_string()
        } else {
            looked.join(", ")
        }
    ))
}

/// The service files, in the order libpq reads them.
fn service_files(env: EnvLookup<'_>) -> Vec<PathBuf> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let user = var("PGSERVICEFILE").map(PathBuf::from).or_else(|| {
        if cfg!(windows) {
            var("APPDATA").map(|d| Path::new(&d).join("postgresql").join(".pg_service.conf"))
        } else {
            var("HOME").map(|h| Path::new(&h).join(".pg_service.conf"))
        }
    });
    let system = var("PGSYSCONFDIR").map(|d| Path::new(&d).join("pg_service.conf"));
    user.into_iter().chain(system).collect()
}

/// The settings of section `[name]` of a service file, `None` when it has no such section.
/// Lines are `key=value`, `#` begins a comment line; a key cmstore does not take is an error,
/// not silently a different connection.
fn section(text: &str, name: &str) -> Result<Option<Vec<(String, String)>>, String> {
    let mut inside = false;
    let mut found = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if inside {
                break;
            }
            inside = header.trim() == name;
            if inside {
                found = Some(Vec::new());
            }
            continue;
        }
        if !inside {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("line {}: expected key=value", n + 1));
        };
        let key = key.trim();
        if !KEYS.contains(&key) {
            return Err(format!(
                "line {}: {key} is not a setting cmstore takes ({}; a certificate authority \
                 is [push] ca_file)",
                n + 1,
                KEYS.join(", ")
            ));
        }
        if let Some(settings) = found.as_mut() {
            settings.push((key.to_string(), value.trim().to_string()));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_is_taken_out_of_a_url_or_words_else_from_pgservice() {
        let none = |_: &str| None;
        let env = |name: &str| (name == "PGSERVICE").then(|| "fallback".to_string());
        assert_eq!(
            take_service(Some("postgres://h/db?sslmode=disable&service=team"), &none),
            (
                Some("postgres://h/db?sslmode=disable".into()),
                Some("team".into())
            )
        );
        assert_eq!(
            take_service(Some("postgresql:///?service=team"), &none),
            (Some("postgresql:///".into()), Some("team".into()))
        );
        assert_eq!(
            take_service(Some("service='team' dbname=x"), &env),
            (Some("dbname=x".into()), Some("team".into()))
        );
        assert_eq!(
            take_service(Some("host=h"), &env),
            (Some("host=h".into()), Some("fallback".into()))
        );
        assert_eq!(take_service(None, &env), (None, Some("fallback".into())));
        assert_eq!(take_service(None, &none), (None, None));
    }

    #[test]
    fn a_section_gives_its_settings_and_a_foreign_key_is_an_error() {
        let text = "# services\n[other]\nhost=elsewhere\n\n[team]\nhost = db.example.com\n\
                    port=6543\ndbname=cmstore\n[after]\nuser=x\n";
        assert_eq!(
            section(text, "team").unwrap(),
            Some(vec![
                ("host".into(), "db.example.com".into()),
                ("port".into(), "6543".into()),
                ("dbname".into(), "cmstore".into()),
            ])
        );
        assert_eq!(section(text, "missing").unwrap(), None);
        let err = section("[team]\nsslrootcert=/ca.pem\n", "team").unwrap_err();
        assert!(
            err.contains("sslrootcert is not a setting") && err.contains("ca_file"),
            "{err}"
        );
        assert!(section("[team]\nhost\n", "team")
            .unwrap_err()
            .contains("line 2"));
    }

    #[test]
    fn the_user_file_first_then_the_system_one() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.conf");
        let system = dir.path().join("sys");
        std::fs::create_dir(&system).unwrap();
        std::fs::write(&user, "[team]\nhost=mine\n").unwrap();
        std::fs::write(
            system.join("pg_service.conf"),
            "[team]\nhost=theirs\n[shared]\nport=1\n",
        )
        .unwrap();
        let (u, s) = (user.display().to_string(), system.display().to_string());
        let env = move |name: &str| match name {
            "PGSERVICEFILE" => Some(u.clone()),
            "PGSYSCONFDIR" => Some(s.clone()),
            _ => None,
        };
        assert_eq!(
            lookup("team", &env).unwrap(),
            [("host".into(), "mine".into())]
        );
        assert_eq!(
            lookup("shared", &env).unwrap(),
            [("port".into(), "1".into())]
        );
        let err = lookup("nowhere", &env).unwrap_err();
        assert!(
            err.contains("\"nowhere\" is defined in no service file"),
            "{err}"
        );
    }
}
