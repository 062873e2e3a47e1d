//! File patterns of the checks' configuration: `*` and `?` within a path segment, `**`
//! across segments. A pattern without `/` matches the file name alone, as in `.gitignore`.

/// True when `path` (with `/` or `\` separators) matches `pattern`.
pub fn matches(pattern: &str, path: &str) -> bool {
    let path = path.replace('\\', "/");
    let pattern = pattern.trim().replace('\\', "/");
    if !pattern.contains('/') {
        let name = path.rsplit('/').next().unwrap_or(&path);
        return match_segment(pattern.as_bytes(), name.as_bytes());
    }
    let pattern = pattern.trim_start_matches("./");
    let pat: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // A relative pattern may match any tail of an absolute path: `src/*.rs` matches
    // `/home/me/app/src/main.rs`.
    (0..=segs.len()).any(|start| match_segments(&pat, &segs[start..]))
}

fn match_segments(pat: &[&str], segs: &[&str]) -> bool {
    match pat.split_first() {
        None => segs.is_empty(),
        Some((&"**", rest)) => (0..=segs.len()).any(|i| match_segments(rest, &segs[i..])),
        Some((first, rest)) => match segs.split_first() {
            Some((seg, tail)) => {
                match_segment(first.as_bytes(), seg.as_bytes()) && match_segments(rest, tail)
            }
            None => false,
        },
    }
}

/// `*` and `?` within one segment, bytewise.
fn match_segment(pat: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pat.len() && (pat[p] == b'?' || pat[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn names_segments_and_double_stars() {
        assert!(matches("*.rs", "/home/me/app/src/main.rs"));
        assert!(matches("*.rs", "main.rs"));
        assert!(!matches("*.rs", "main.rsx"));
        assert!(matches("README.md", r"C:\app\README.md"));
        assert!(matches("src/*.rs", "/home/me/app/src/main.rs"));
        assert!(!matches("src/*.rs", "/home/me/app/src/bin/main.rs"));
        assert!(matches("src/**/*.rs", "/app/src/bin/x/main.rs"));
        assert!(matches("src/**/*.rs", "src/main.rs"));
        assert!(matches("docs/**", "docs/a/b.md"));
        assert!(matches("?.md", "a.md"));
        assert!(!matches("?.md", "ab.md"));
        assert!(matches("*", "anything"));
    }
}
