//! Holds `src/` to its layering: data flows one way, and so do imports.
//!
//! Every file under `src/` is parsed with `syn`; each `use` and each path that starts with
//! `crate`, `self` or `super` is an edge from that file to the file of the module it names.
//! Test code (`#[cfg(test)]` items and files declared under it) is left out: the rules are
//! about what a user's binary is built from. A module's own `mod.rs` reaching into its
//! children is structure, not an import, so those edges are left out too.
//!
//! The rules:
//! - each top-level folder imports only what [`LAYERS`] lets it (siblings in one folder may
//!   import each other), and ARCHITECTURE.md's layer table says the same as [`LAYERS`];
//! - no circle of imports between files;
//! - only the edge (`lib.rs`, `cli.rs`, `cmd/`) names clap or prints: errors go up to `main`,
//!   warnings to a caller's callback;
//! - only `support/env.rs` reads the environment;
//! - no subcommand's file imports another's (`cmd/pager.rs` is shared);
//! - the capture path (`cmd/capture.rs`, `hook/capture/` and all they reach) never reaches
//!   `store/`, `write/`, `read/` or `rusqlite`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};

/// A module path inside the crate, `""` for the crate root (`lib.rs`).
type Module = String;

#[test]
fn architecture_md_shows_the_layer_table_the_code_is_held_to() {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
        .expect("read ARCHITECTURE.md");
    let documented = documented_layers(&text);
    let held: Vec<(String, BTreeSet<String>)> = LAYERS
        .iter()
        .map(|(name, allowed)| {
            let allowed = allowed.iter().map(|a| a.to_string()).collect();
            (name.to_string(), allowed)
        })
        .collect();
    assert_eq!(
        documented, held,
        "ARCHITECTURE.md's layer table (left) and tests/architecture.rs's LAYERS (right) differ"
    );
}

/// The rows of the table under `## Layers`: its second column names a top-level module
/// (`` `cmd/` `` or `` `cli.rs` ``), its last what that module may import.
fn documented_layers(text: &str) -> Vec<(String, BTreeSet<String>)> {
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("ARCHITECTURE.md has a `## Layers` section");
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(|name| {
                name.trim_end_matches('/')
                    .trim_end_matches(".rs")
                    .replace('/', "::")
            })
            .collect()
    };
    section
        .lines()
        .filter(|line| line.starts_with('|'))
        .skip(2)
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
            let module = names(cells[1])
                .into_iter()
                .next()
                .expect("a module in column 2");
            (module, names(cells[cells.len() - 1]))
        })
        .collect()
}

#[test]
fn imports_flow_one_way() {
    let crate_map = CrateMap::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mut failures = Vec::new();
    failures.extend(crate_map.circles());
    failures.extend(crate_map.layer_violations());
    failures.extend(crate_map.capture_path_violations());
    failures.extend(crate_map.clap_outside_the_cli());
    failures.extend(crate_map.printing_below_the_edge());
    failures.extend(crate_map.subcommands_importing_each_other());
    failures.extend(crate_map.environment_read_elsewhere());
    assert!(
        failures.is_empty(),
        "{} layering problem(s) in src/:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// The one layer table: each top-level module of `src/`, from the edge inward, and the
/// top-level modules it may import (an entry may name a module inside one, `files::paths`).
/// ARCHITECTURE.md's table is checked against this one.
const LAYERS: &[(&str, &[&str])] = &[
    ("cli", &["cmd", "read::sessions", "files::paths", "support"]),
    (
        "cmd",
        &[
            "cli", "hook", "write", "read", "config", "store", "files", "model", "support",
        ],
    ),
    ("hook", &["config", "files", "model", "support"]),
    (
        "write",
        &["hook", "config", "store", "files", "model", "support"],
    ),
    ("read", &["config", "store", "files", "model", "support"]),
    ("config", &["files::paths", "model", "support"]),
    ("store", &["files::paths", "model", "support"]),
    ("files", &["model", "support"]),
    ("model", &["support"]),
    ("support", &[]),
];

/// The edge: the only modules that name clap or print.
const EDGE: &[&str] = &["cli", "cmd"];

/// The files of `cmd/` that are not subcommands, which every subcommand may use.
const CMD_SHARED: &[&str] = &["cmd::pager"];

/// Macros that write to the terminal: only the edge may, so that an error is printed once.
const PRINTING: &[&str] = &["print", "println", "eprint", "eprintln", "dbg"];

/// Where the capture path starts: the hook runs this and everything it reaches.
const CAPTURE_ROOTS: &[&str] = &["cmd::capture", "hook::capture"];

/// What the capture path must never reach.
const NOT_ON_THE_CAPTURE_PATH: &[&str] = &["store", "write", "read"];

struct CrateMap {
    /// Every product file, by module path.
    files: BTreeMap<Module, SourceFile>,
}

struct SourceFile {
    path: PathBuf,
    /// Modules this file names (already mapped to modules that have a file).
    imports: BTreeSet<Module>,
    /// True when the file names `rusqlite`.
    uses_rusqlite: bool,
    /// True when the file names `clap` anywhere, attributes included.
    uses_clap: bool,
    /// Printing macros the file's product code calls (`eprintln`, `println`, …).
    prints: Vec<String>,
    /// True when the file's product code reads the environment itself (`std::env::var`).
    reads_env: bool,
}

impl CrateMap {
    fn read(src: &Path) -> CrateMap {
        let mut parsed = BTreeMap::new();
        collect_files(src, src, &mut parsed);
        let test_only = test_only_modules(&parsed);
        parsed.retain(|module, _| !test_only.iter().any(|t| within(module, t)));
        let known: BTreeSet<Module> = parsed.keys().cloned().collect();
        let visitors: BTreeMap<Module, PathVisitor> = parsed
            .iter()
            .map(|(module, (_, ast, _))| {
                let mut visitor = PathVisitor::new(module);
                visitor.visit_file(ast);
                (module.clone(), visitor)
            })
            .collect();
        let resolver = Resolver {
            known: &known,
            aliases: visitors
                .iter()
                .map(|(m, v)| (m.clone(), v.aliases.clone()))
                .collect(),
        };
        let files = parsed
            .into_iter()
            .map(|(module, (path, _, text))| {
                let visitor = &visitors[&module];
                let imports = visitor
                    .paths
                    .iter()
                    .filter_map(|(written, scope)| resolver.absolute(&module, scope, written))
                    .filter_map(|path| resolver.owner(&path, 0))
                    .filter(|target| !within(target, &module))
                    .collect();
                let tokens: proc_macro2::TokenStream = text.parse().expect("tokens");
                let file = SourceFile {
                    path,
                    imports,
                    uses_rusqlite: resolver.externals(&module, visitor).contains("rusqlite"),
                    uses_clap: idents(tokens).contains("clap"),
                    reads_env: visitor.paths.iter().any(|(written, _)| {
                        let std_env = match written.first().map(String::as_str) {
                            Some("std") => written.get(1).is_some_and(|s| s == "env"),
                            Some("env") => visitor
                                .aliases
                                .get("env")
                                .is_some_and(|(to, _)| to.first().is_some_and(|s| s == "std")),
                            _ => false,
                        };
                        let read = written.last().map(String::as_str);
                        std_env && matches!(read, Some("var" | "var_os" | "vars" | "vars_os"))
                    }),
                    prints: PRINTING
                        .iter()
                        .filter(|m| visitor.macros.contains(**m))
                        .map(|m| m.to_string())
                        .collect(),
                };
                (module, file)
            })
            .collect();
        CrateMap { files }
    }

    /// Every set of files that import each other in a circle (Tarjan's strongly connected
    /// components with more than one file).
    fn circles(&self) -> Vec<String> {
        strongly_connected(&self.files)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let names: Vec<String> = component.iter().map(|m| self.name(m)).collect();
                format!(
                    "import circle of {} files: {}",
                    names.len(),
                    names.join(", ")
                )
            })
            .collect()
    }

    fn layer_violations(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (module, file) in &self.files {
            let Some(top) = top_level(module) else {
                continue;
            };
            let Some((_, allowed)) = LAYERS.iter().find(|(name, _)| *name == top) else {
                found.push(format!(
                    "{} is in no layer: add `{top}` to LAYERS and ARCHITECTURE.md",
                    self.name(module)
                ));
                continue;
            };
            for target in &file.imports {
                let ok = top_level(target).is_none_or(|t| t == top)
                    || allowed.iter().any(|a| within(target, a));
                if !ok {
                    found.push(format!(
                        "{} imports {}: `{top}` may import only {}",
                        self.name(module),
                        self.name(target),
                        if allowed.is_empty() {
                            "itself".to_string()
                        } else {
                            allowed.join(", ")
                        }
                    ));
                }
            }
        }
        found
    }

    fn capture_path_violations(&self) -> Vec<String> {
        let mut reached: BTreeMap<Module, Module> = BTreeMap::new();
        let mut todo: Vec<Module> = self
            .files
            .keys()
            .filter(|m| CAPTURE_ROOTS.iter().any(|r| within(m, r)))
            .cloned()
            .collect();
        for root in &todo {
            reached.insert(root.clone(), root.clone());
        }
        while let Some(module) = todo.pop() {
            for target in &self.files[&module].imports {
                if !reached.contains_key(target) {
                    reached.insert(target.clone(), module.clone());
                    todo.push(target.clone());
                }
            }
        }
        let mut found = Vec::new();
        for (module, via) in &reached {
            let file = &self.files[module];
            let forbidden = NOT_ON_THE_CAPTURE_PATH.iter().any(|f| within(module, f));
            if forbidden || file.uses_rusqlite {
                found.push(format!(
                    "the capture path reaches {}{} (through {})",
                    self.name(module),
                    if file.uses_rusqlite {
                        ", which uses rusqlite"
                    } else {
                        ""
                    },
                    self.name(via)
                ));
            }
        }
        found
    }

    fn clap_outside_the_cli(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|(module, file)| {
                file.uses_clap && !(within(module, "cli") || within(module, "cmd"))
            })
            .map(|(module, _)| format!("{} names clap", self.name(module)))
            .collect()
    }

    fn printing_below_the_edge(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|(module, file)| !file.prints.is_empty() && !at_the_edge(module))
            .map(|(module, file)| {
                format!(
                    "{} prints ({}!): only cli.rs and cmd/ talk to the terminal",
                    self.name(module),
                    file.prints.join("!, ")
                )
            })
            .collect()
    }

    /// A subcommand's files import no other subcommand's: what two share lives below `cmd/`
    /// (or in `cli/` for options), so each subcommand reads alone. A subcommand grown into a
    /// folder (`cmd/hooks/`) is one subcommand: its files may import each other.
    fn subcommands_importing_each_other(&self) -> Vec<String> {
        let subcommand = |m: &str| m.split("::").take(2).collect::<Vec<_>>().join("::");
        let mut found = Vec::new();
        for (module, file) in self.files.iter().filter(|(m, _)| within(m, "cmd")) {
            for target in &file.imports {
                let shared = CMD_SHARED.iter().any(|s| within(target, s));
                let same = subcommand(target) == subcommand(module);
                if within(target, "cmd") && target != "cmd" && !shared && !same {
                    found.push(format!(
                        "{} imports {}: one subcommand imports no other",
                        self.name(module),
                        self.name(target)
                    ));
                }
            }
        }
        found
    }

    /// Only `support::env` reads the environment, so that an empty variable means one thing
    /// everywhere.
    fn environment_read_elsewhere(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|(module, file)| file.reads_env && module.as_str() != "support::env")
            .map(|(module, _)| {
                format!(
                    "{} reads the environment itself: go through support::env",
                    self.name(module)
                )
            })
            .collect()
    }

    fn name(&self, module: &str) -> String {
        self.files[module]
            .path
            .display()
            .to_string()
            .replace('\\', "/")
    }
}

/// The top-level module `module` lies in, `None` for the crate root.
fn top_level(module: &str) -> Option<&str> {
    module.split("::").next().filter(|top| !top.is_empty())
}

/// True for the crate root and the modules under [`EDGE`].
fn at_the_edge(module: &str) -> bool {
    module.is_empty() || EDGE.iter().any(|e| within(module, e))
}

/// True when `module` is `ancestor` or inside it.
fn within(module: &str, ancestor: &str) -> bool {
    module == ancestor
        || ancestor.is_empty()
        || module
            .strip_prefix(ancestor)
            .is_some_and(|rest| rest.starts_with("::"))
}

/// Reads every `.rs` file under `dir` except `main.rs` (the binary, which only calls `run`).
fn collect_files(src: &Path, dir: &Path, out: &mut BTreeMap<Module, (PathBuf, syn::File, String)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_files(src, &path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") || path == src.join("main.rs") {
            continue;
        }
        let relative = path.strip_prefix(src).expect("under src");
        let mut parts: Vec<String> = relative
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
            parts.pop();
        }
        let text = fs::read_to_string(&path).expect("read file");
        let ast = syn::parse_file(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let shown = Path::new("src").join(relative);
        out.insert(parts.join("::"), (shown, ast, text));
    }
}

/// Modules declared under `#[cfg(test)]` (`#[cfg(test)] mod fixtures;`).
fn test_only_modules(parsed: &BTreeMap<Module, (PathBuf, syn::File, String)>) -> Vec<Module> {
    let mut found = Vec::new();
    for (module, (_, ast, _)) in parsed {
        for item in &ast.items {
            if let syn::Item::Mod(m) = item {
                if m.content.is_none() && is_test_only(&m.attrs) {
                    found.push(join(module, &m.ident.to_string()));
                }
            }
        }
    }
    found
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg")
                && a.meta
                    .require_list()
                    .is_ok_and(|l| l.tokens.to_string().trim() == "test"))
    })
}

fn join(module: &str, child: &str) -> Module {
    if module.is_empty() {
        child.to_string()
    } else {
        format!("{module}::{child}")
    }
}

/// What one file names: its `use` items (as aliases) and every multi-segment path in its
/// code, test-only items skipped.
struct PathVisitor {
    /// Where `self::` points (a file `a/b.rs` is module `a::b`; inline `mod` blocks push).
    scope: Vec<String>,
    /// Local name -> path as written, from `use` items (`use crate::store;` gives `store`).
    aliases: BTreeMap<String, (Vec<String>, bool)>,
    /// Glob imports and paths in code, as written, each with the scope it was written in.
    paths: Vec<(Vec<String>, Vec<String>)>,
    /// Names of the macros called (`eprintln`, `format`, …).
    macros: BTreeSet<String>,
}

impl PathVisitor {
    fn new(module: &str) -> PathVisitor {
        PathVisitor {
            scope: segments(module),
            aliases: BTreeMap::new(),
            paths: Vec::new(),
            macros: BTreeSet::new(),
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, public: bool) {
        let alias = |this: &mut PathVisitor, name: &syn::Ident, local: &syn::Ident| {
            let mut full = prefix.clone();
            if name != "self" {
                full.push(name.to_string());
            }
            let local = if local == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                local.to_string()
            };
            this.paths.push((full.clone(), this.scope.clone()));
            this.aliases.insert(local, (full, public));
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, public);
                prefix.pop();
            }
            syn::UseTree::Name(n) => alias(self, &n.ident, &n.ident),
            syn::UseTree::Rename(r) => alias(self, &r.ident, &r.rename),
            syn::UseTree::Glob(_) => self.paths.push((prefix.clone(), self.scope.clone())),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item, public);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for PathVisitor {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if !is_test_only(&item.attrs) {
            let public = !matches!(item.vis, syn::Visibility::Inherited);
            self.use_tree(&mut Vec::new(), &item.tree, public);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test_only(&item.attrs) || item.content.is_none() {
            return;
        }
        self.scope.push(item.ident.to_string());
        visit::visit_item_mod(self, item);
        self.scope.pop();
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test_only(&item.attrs) {
            visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if !is_test_only(&item.attrs) {
            visit::visit_item_impl(self, item);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if let Some(last) = mac.path.segments.last() {
            self.macros.insert(last.ident.to_string());
        }
        visit::visit_macro(self, mac);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let written: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if written.len() > 1 {
            self.paths.push((written, self.scope.clone()));
        }
        visit::visit_path(self, path);
    }
}

fn segments(module: &str) -> Vec<String> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_string).collect()
    }
}

/// Resolves what files name into the modules they depend on.
struct Resolver<'a> {
    known: &'a BTreeSet<Module>,
    /// Each module's `use` aliases (only `pub use` ones are seen from outside).
    aliases: BTreeMap<Module, BTreeMap<String, (Vec<String>, bool)>>,
}

impl Resolver<'_> {
    /// The crate-absolute form of `written` as seen from `scope` inside `module`'s file, or
    /// `None` when it names something outside the crate (`std`, `rusqlite`) or a local item.
    fn absolute(&self, module: &str, scope: &[String], written: &[String]) -> Option<Vec<String>> {
        let first = written.first()?;
        let rest = &written[1..];
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => scope.to_vec(),
            "super" => {
                let mut base = scope.to_vec();
                base.pop();
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            name => {
                if let Some((target, _)) = self.aliases.get(module).and_then(|a| a.get(name)) {
                    if target.first() != Some(&name.to_string()) {
                        let mut full = self.absolute(module, scope, target)?;
                        full.extend(rest.iter().cloned());
                        return Some(full);
                    }
                }
                let child = [scope, &[name.to_string()]].concat().join("::");
                if !self.known.contains(&child) {
                    return None;
                }
                scope.to_vec()
            }
        };
        if first != "crate" && first != "self" {
            base.push(first.clone());
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module with a file that `path` lives in, following `pub use` re-exports.
    fn owner(&self, path: &[String], depth: usize) -> Option<Module> {
        let n = (0..=path.len())
            .rev()
            .find(|&n| self.known.contains(&path[..n].join("::")))?;
        let module = path[..n].join("::");
        if depth < 8 && n < path.len() {
            if let Some((target, true)) = self.aliases.get(&module).and_then(|a| a.get(&path[n])) {
                let scope = segments(&module);
                if let Some(mut full) = self.absolute(&module, &scope, target) {
                    full.extend(path[n + 1..].iter().cloned());
                    return self.owner(&full, depth + 1).or(Some(module));
                }
            }
        }
        Some(module)
    }

    /// External crates a file names (first segments that are not the crate's own).
    fn externals(&self, module: &str, visitor: &PathVisitor) -> BTreeSet<String> {
        visitor
            .paths
            .iter()
            .filter(|(written, scope)| self.absolute(module, scope, written).is_none())
            .filter_map(|(written, _)| written.first().cloned())
            .collect()
    }
}

/// Every identifier in a token stream, attributes and macro bodies included.
fn idents(tokens: proc_macro2::TokenStream) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![tokens];
    while let Some(stream) = stack.pop() {
        for tree in stream {
            match tree {
                proc_macro2::TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                proc_macro2::TokenTree::Group(g) => stack.push(g.stream()),
                _ => {}
            }
        }
    }
    out
}

/// Tarjan's algorithm over the import graph.
fn strongly_connected(files: &BTreeMap<Module, SourceFile>) -> Vec<Vec<Module>> {
    struct State<'a> {
        files: &'a BTreeMap<Module, SourceFile>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        on_stack: BTreeSet<&'a str>,
        stack: Vec<&'a str>,
        next: usize,
        out: Vec<Vec<Module>>,
    }
    fn connect<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.files[v].imports {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                connect(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut state = State {
        files,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on_stack: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for module in files.keys() {
        if !state.index.contains_key(module.as_str()) {
            connect(&mut state, module);
        }
    }
    state.out
}
