//! Who may talk to the dashboard: the owner, who holds the token.
//!
//! Every request passes four checks before any route runs, in this order:
//!
//! 1. the method is `GET` or `HEAD` (nothing the dashboard does changes anything);
//! 2. the `Host` header names this server exactly (`127.0.0.1:PORT`, `localhost:PORT`, or the
//!    address given with `--bind`), so a page on another site whose name was re-pointed at
//!    127.0.0.1 (DNS rebinding) is refused;
//! 3. an `Origin` header, when the browser sends one, is this server's own origin, and a
//!    `Sec-Fetch-Site` header, when sent, does not say `cross-site`;
//! 4. the token: in the cookie set on the first visit, or in `?token=` on that first visit.
//!    A valid `?token=` is answered with the cookie and a redirect to the same address without
//!    it, so the token does not stay in the address bar or the history.
//!
//! Pure: headers in, a [`Verdict`] out. The token is compared in constant time.

/// What to do with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Serve it.
    Allow,
    /// Set the cookie and redirect to `location` (the address without the token).
    SetCookie {
        /// Where to go next.
        location: String,
    },
    /// Refuse it: `status` (403 or 405) and why, for the response body.
    Deny {
        /// The HTTP status.
        status: u16,
        /// A short reason for the owner who wonders.
        reason: &'static str,
    },
}

/// The headers of a request that the checks read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seen<'a> {
    /// The method, upper case.
    pub method: &'a str,
    /// The request target: path and query.
    pub url: &'a str,
    pub host: Option<&'a str>,
    pub origin: Option<&'a str>,
    pub cookie: Option<&'a str>,
    pub sec_fetch_site: Option<&'a str>,
}

/// The token, and the names this server answers to.
#[derive(Debug, Clone)]
pub struct Access {
    token: String,
    /// Accepted `Host` values, e.g. `127.0.0.1:8123`.
    hosts: Vec<String>,
    cookie_name: String,
}

impl Access {
    /// Access for a server on `port` reachable as `hosts` (host names or addresses without
    /// the port), with `token`.
    pub fn new(token: String, hosts: &[String], port: u16) -> Access {
        Access {
            token,
            hosts: hosts.iter().map(|h| format!("{h}:{port}")).collect(),
            // Cookies are shared across ports: a name per port keeps two dashboards apart.
            cookie_name: format!("cmstore_token_{port}"),
        }
    }

    /// A new random token: 256 bits from the operating system's generator, as hex.
    pub fn random_token() -> String {
        // Two v4 UUIDs: 244 random bits from the OS's generator (getrandom), as 64 hex digits.
        format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        )
    }

    /// The token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The `Set-Cookie` value for the first visit.
    pub fn set_cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name, self.token
        )
    }

    /// Decides what to do with a request.
    pub fn check(&self, seen: &Seen<'_>) -> Verdict {
        if seen.method != "GET" && seen.method != "HEAD" {
            return deny(
                405,
                "only GET and HEAD are served: the dashboard changes nothing",
            );
        }
        let Some(host) = seen.host.filter(|h| self.hosts.iter().any(|ok| ok == h)) else {
            return deny(403, "the Host header does not name this server");
        };
        if let Some(origin) = seen.origin {
            let own = ["http://", host].concat();
            if origin != own {
                return deny(403, "a request from another origin");
            }
        }
        if seen.sec_fetch_site == Some("cross-site") {
            return deny(403, "a request from another site");
        }
        if seen.cookie.is_some_and(|c| self.cookie_holds_token(c)) {
            return Verdict::Allow;
        }
        let (path, query) = seen.url.split_once('?').unwrap_or((seen.url, ""));
        let mut given = None;
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.strip_prefix("token=") {
                Some(t) => given = Some(t),
                None => rest.push(pair),
            }
        }
        match given {
            Some(t) if same(t, &self.token) => Verdict::SetCookie {
                location: if rest.is_empty() {
                    path.to_string()
                } else {
                    format!("{path}?{}", rest.join("&"))
                },
            },
            Some(_) => deny(403, "wrong token"),
            None => deny(
                403,
                "no token: open the address `cmstore serve` printed (with ?token=…)",
            ),
        }
    }

    fn cookie_holds_token(&self, header: &str) -> bool {
        header
            .split(';')
            .filter_map(|c| c.trim().split_once('='))
            .any(|(name, value)| name == self.cookie_name && same(value, &self.token))
    }
}

fn deny(status: u16, reason: &'static str) -> Verdict {
    Verdict::Deny { status, reason }
}

/// Compares two strings in time that depends on their lengths only, not on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access() -> Access {
        Access::new(
            "t0k3n".into(),
            &["127.0.0.1".into(), "localhost".into()],
            8123,
        )
    }

    fn get<'a>(url: &'a str, host: &'a str) -> Seen<'a> {
        Seen {
            method: "GET",
            url,
            host: Some(host),
            ..Seen::default()
        }
    }

    #[test]
    fn the_token_in_the_address_sets_the_cookie_and_is_taken_out() {
        let a = access();
        assert_eq!(
            a.check(&get("/sessions?agent=x&token=t0k3n", "127.0.0.1:8123")),
            Verdict::SetCookie {
                location: "/sessions?agent=x".into()
            }
        );
        assert_eq!(
            a.check(&get("/?token=t0k3n", "localhost:8123")),
            Verdict::SetCookie {
                location: "/".into()
            }
        );
        assert!(a.set_cookie().contains("HttpOnly; SameSite=Strict"));
    }

    #[test]
    fn the_cookie_lets_in_and_nothing_else_does() {
        let a = access();
        let mut seen = get("/api/overview", "127.0.0.1:8123");
        assert!(matches!(a.check(&seen), Verdict::Deny { status: 403, .. }));
        seen.cookie = Some("other=1; cmstore_token_8123=t0k3n");
        assert_eq!(a.check(&seen), Verdict::Allow);
        seen.cookie = Some("cmstore_token_8123=t0k3m");
        assert!(matches!(a.check(&seen), Verdict::Deny { status: 403, .. }));
        // Another port's cookie is another dashboard's.
        seen.cookie = Some("cmstore_token_9999=t0k3n");
        assert!(matches!(a.check(&seen), Verdict::Deny { status: 403, .. }));
        assert!(matches!(
            a.check(&get("/?token=wrong", "127.0.0.1:8123")),
            Verdict::Deny { status: 403, .. }
        ));
    }

    #[test]
    fn another_host_origin_or_method_is_refused_even_with_the_token() {
        let a = access();
        let cookie = Some("cmstore_token_8123=t0k3n");
        for host in ["evil.example:8123", "127.0.0.1:8124", "127.0.0.1", ""] {
            let mut seen = get("/?token=t0k3n", host);
            seen.cookie = cookie;
            assert_eq!(
                a.check(&seen),
                deny(403, "the Host header does not name this server"),
                "{host}"
            );
        }
        let mut seen = get("/api/version", "127.0.0.1:8123");
        seen.host = None;
        assert!(matches!(a.check(&seen), Verdict::Deny { status: 403, .. }));

        let mut seen = get("/api/version", "127.0.0.1:8123");
        seen.cookie = cookie;
        seen.origin = Some("http://evil.example");
        assert!(matches!(a.check(&seen), Verdict::Deny { status: 403, .. }));
        seen.origin = Some("http://127.0.0.1:8123");
        assert_eq!(a.check(&seen), Verdict::Allow);
        seen.sec_fetch_site = Some("cross-site");
        assert!(matches!(a.check(&seen), Verdict::Deny { status: 403, .. }));

        let mut post = get("/api/sql", "127.0.0.1:8123");
        post.cookie = cookie;
        post.method = "POST";
        assert!(matches!(a.check(&post), Verdict::Deny { status: 405, .. }));
    }

    #[test]
    fn tokens_are_random_and_compared_whole() {
        let (t1, t2) = (Access::random_token(), Access::random_token());
        assert_eq!(t1.len(), 64);
        assert_ne!(t1, t2);
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd") && !same("abc", "ab") && !same("", "a"));
    }
}
