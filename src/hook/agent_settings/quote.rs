//! Quoting a program path so bash/sh, PowerShell and `cmd.exe` each read it back as one word.
//!
//! Hand-written on purpose; the lines land in users' settings files and the tests below pin
//! them. `shell-words` 1.1 quotes from a deny-list: it leaves `/opt/{a,b}/cmstore` bare,
//! which bash brace-expands into two words. `shlex` 2.0 is at least as safe as the
//! allow-list here, but writes a word holding `'` or `\` in double quotes
//! (`"C:\\bin\\cmstore.exe"`), which changes pinned lines and shows existing installs as
//! outdated. Neither quotes for PowerShell.

/// Characters that need no quoting in a POSIX shell word.
fn sh_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)
}

/// Characters that need no quoting at the start of a PowerShell command.
fn ps_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.:/\\-".contains(c)
}

/// `program` as one POSIX shell word: bare when it is plain, else single-quoted.
pub fn sh(program: &str) -> String {
    if !program.is_empty() && program.chars().all(sh_safe) {
        return program.to_string();
    }
    format!("'{}'", program.replace('\'', r"'\''"))
}

/// `program` as the command word of a PowerShell line: bare when it is plain, else a
/// single-quoted string run with the call operator (a quoted string alone is just a value).
pub fn powershell(program: &str) -> String {
    if !program.is_empty() && program.chars().all(ps_safe) {
        return program.to_string();
    }
    format!("& '{}'", program.replace('\'', "''"))
}

/// Characters that need no quoting in a `cmd.exe` word.
fn cmd_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.:/\\-".contains(c)
}

/// `words` (a program and its arguments) as one `cmd.exe` command line: each word bare when
/// plain, else in double quotes (a Windows path holds no `"`).
pub fn cmd_line<S: AsRef<str>>(words: &[S]) -> String {
    let quoted: Vec<String> = words
        .iter()
        .map(AsRef::as_ref)
        .map(|w| match !w.is_empty() && w.chars().all(cmd_safe) {
            true => w.to_string(),
            false => format!("\"{w}\""),
        })
        .collect();
    quoted.join(" ")
}

/// `words` (a program and its arguments) as one POSIX shell command line.
pub fn sh_line<S: AsRef<str>>(words: &[S]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| sh(w.as_ref())).collect();
    quoted.join(" ")
}

/// `words` (a program and its arguments) as one PowerShell command line: the program as by
/// [`powershell`], each argument bare when plain, else single-quoted.
pub fn powershell_line<S: AsRef<str>>(words: &[S]) -> String {
    let mut line = words
        .first()
        .map_or_else(String::new, |w| powershell(w.as_ref()));
    for word in words.iter().skip(1).map(AsRef::as_ref) {
        line.push(' ');
        if !word.is_empty() && word.chars().all(ps_safe) {
            line.push_str(word);
        } else {
            line.push_str(&format!("'{}'", word.replace('\'', "''")));
        }
    }
    line
}

#[cfg(test)]
mod tests {

    #[test]
    fn cmd_lines_quote_paths_with_spaces_in_double_quotes() {
        assert_eq!(
            cmd_line(&["C:\\Users\\Me Too\\cmstore.exe", "capture"]),
            "\"C:\\Users\\Me Too\\cmstore.exe\" capture"
        );
        assert_eq!(
            cmd_line(&["C:\\bin\\cmstore.exe", "--home", ""]),
            "C:\\bin\\cmstore.exe --home \"\""
        );
    }

    use super::*;

    #[test]
    fn plain_paths_stay_bare() {
        assert_eq!(
            sh("/home/a/.cargo/bin/cmstore"),
            "/home/a/.cargo/bin/cmstore"
        );
        assert_eq!(sh("cmstore"), "cmstore");
        assert_eq!(
            powershell(r"C:\Users\a\.cargo\bin\cmstore.exe"),
            r"C:\Users\a\.cargo\bin\cmstore.exe"
        );
    }

    #[test]
    fn spaces_and_quotes_are_quoted() {
        assert_eq!(sh("/opt/my tools/cmstore"), "'/opt/my tools/cmstore'");
        assert_eq!(sh("/o'brien/cmstore"), r"'/o'\''brien/cmstore'");
        assert_eq!(sh("$HOME/x"), "'$HOME/x'");
        assert_eq!(sh(r"C:\bin\cmstore.exe"), r"'C:\bin\cmstore.exe'");
        assert_eq!(
            powershell(r"C:\Program Files\cmstore.exe"),
            r"& 'C:\Program Files\cmstore.exe'"
        );
        assert_eq!(powershell("/o'brien/cm"), "& '/o''brien/cm'");
        assert_eq!(powershell("$env:X"), "& '$env:X'");
    }

    #[test]
    fn whole_lines() {
        let words = ["/opt/a b/cm", "--home", "/h/it's"];
        assert_eq!(sh_line(&words), r"'/opt/a b/cm' --home '/h/it'\''s'");
        assert_eq!(powershell_line(&words), "& '/opt/a b/cm' --home '/h/it''s'");
        assert_eq!(powershell_line(&["cm", "--home", "/h"]), "cm --home /h");
    }

    #[test]
    fn braces_and_globs_are_quoted() {
        // shell-words would leave the first bare: bash reads it as two words.
        assert_eq!(sh("/opt/{a,b}/cm"), "'/opt/{a,b}/cm'");
        assert_eq!(sh("/opt/x*/cm"), "'/opt/x*/cm'");
        assert_eq!(sh("/opt/~x!/cm"), "'/opt/~x!/cm'");
    }

    #[test]
    fn empty_is_quoted() {
        assert_eq!(sh(""), "''");
        assert_eq!(powershell(""), "& ''");
    }
}
