//! docs/architecture.md kept true: this test fails when the document names a path (`crates/…`, `src/…`,
//! `tests/…`, `docs/…`, or `run/core.rs`-style paths relative to a module's source directory, here
//! `crates/run/src/`) that does not exist, when a `crate::X` (or `::X`) path in module `Y` is an import edge the
//! document's layer table does not allow, when a module (a crate of `crates/`, or a module of the root package's
//! `src/`) is missing from the table, or when the table lets a module import one of its own layer or above
//! (imports point down only).
//!
//! The layer table is the first Markdown table after the `## Layers` heading whose header row starts
//! `| module | layer | may import |`: one row per layer's modules, every name in backticks; the first column
//! names the modules, the second their layer (a number, 0 at the bottom), the third what they may import
//! (backticked names, `*` for every module, `—` for nothing); commentary goes in parentheses or outside
//! backticks.
//!
//! The workspace (issue 26 item 3): every row of the table but the top layers is a crate `crates/X` (package
//! `streamcap-X`), whose path dependencies on other members are edges too ([`workspace_edges`]: a member
//! `streamcap-foo-bar` is module `foo_bar`): its `[dependencies]` must be allowed by its row, and its
//! dependencies with its dev-dependencies must be exactly the row, so the document, the code and the compiler's
//! dependency graph say one thing. And the compiler does refuse an edge the table does not allow: a copy of the
//! crates where `units` names `plan` does not build ([`the_compiler_refuses_an_edge_the_layer_table_does_not_allow`],
//! one `cargo check` of one small crate into a target directory of its own under target/tmp). Default tier: no
//! root, no devices.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn document() -> String {
    std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md is readable")
}

/// The modules of the table: the crates of the workspace (`crates/X/`) and the top-level modules of the root
/// package (`src/X/` and `src/X.rs`), without the crate root and the binary.
fn modules() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("src")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let module = name.strip_suffix(".rs").unwrap_or(&name).to_string();
        if module != "lib" && module != "main" {
            names.insert(module);
        }
    }
    for entry in std::fs::read_dir(root().join("crates")).into_iter().flatten().flatten() {
        if entry.path().join("Cargo.toml").is_file() {
            names.insert(entry.file_name().to_string_lossy().to_string());
        }
    }
    names
}

/// Where a module's code lives: `crates/X/src/` for a crate of the workspace, else `src/X/` (or `src/X.rs`).
fn module_dir(module: &str) -> PathBuf {
    let krate = root().join("crates").join(module);
    if krate.is_dir() { krate.join("src") } else { root().join("src").join(module) }
}

/// Every `.rs` file under `dir` (or `dir` itself when it is a file).
fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap().flatten() {
            rust_files(&entry.path(), out);
        }
    } else if path.is_file() && path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The code of a Rust file without its comments (`//` to the end of a line; doc comments included), which may
/// name `crate::` paths without importing anything.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let cut = match line.find("//") {
            // A `//` inside a string ("http://…") is not a comment: only cut where no quote is open before it.
            Some(at) if line[..at].matches('"').count() % 2 == 0 => &line[..at],
            _ => line,
        };
        code.push_str(cut);
        code.push('\n');
    }
    code
}

/// The modules a piece of code names through `crate::X` (and `crate::{X::…, Y::…}`), or as another crate of the
/// workspace through `::X` (a crate with a submodule of that name writes so: `::streams::` in plan).
fn crate_paths(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    for (at, _) in code.match_indices("::") {
        // A leading `::` only: not `a::b`, `a::<T>`, `<T>::f` or the second `:` of a `:::`.
        let before = code[..at].chars().last();
        if before.is_none_or(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '>' | '$'))) {
            named.insert(ident(&code[at + 2..]));
        }
    }
    for (at, _) in code.match_indices("crate::") {
        // `$crate::` in a macro is the same crate; `streamcap::crate::` does not exist; a longer identifier
        // ending in `crate` (`subcrate::`) is not the crate.
        let before = code[..at].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: split at commas outside nested braces.
            let (mut depth, mut start) = (0usize, 0usize);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        named.insert(ident(group[start..i].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        named.insert(ident(group[start..i].trim()));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            named.insert(ident(rest));
        }
    }
    named.retain(|m| modules.contains(m));
    named
}

/// The import edges of the code: module → the modules its files name through `crate::`.
fn code_edges(modules: &BTreeSet<String>) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let mut edges: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for module in modules {
        let mut files = Vec::new();
        rust_files(&module_dir(module), &mut files);
        rust_files(&root().join("src").join(format!("{module}.rs")), &mut files);
        for file in files {
            let code = code_of(&std::fs::read_to_string(&file).unwrap());
            for target in crate_paths(&code, modules) {
                if &target != module {
                    let relative = file.strip_prefix(root()).unwrap().to_path_buf();
                    edges.entry(module.clone()).or_default().entry(target).or_insert(relative);
                }
            }
        }
    }
    edges
}

/// One row of the layer table.
#[derive(Debug)]
struct Layer {
    modules: Vec<String>,
    layer: u32,
    /// `None`: every module (`*`).
    may_import: Option<Vec<String>>,
}

/// The names in backticks of a table cell, outside parentheses (which hold commentary: `` `engine` (`HttpUrl`) ``).
fn backticked(cell: &str) -> Vec<String> {
    let mut depth = 0usize;
    let outside: String = cell
        .chars()
        .filter(|&c| {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ => return depth == 0,
            }
            false
        })
        .collect();
    outside.split('`').skip(1).step_by(2).map(|s| s.trim().to_string()).collect()
}

fn layer_table(doc: &str) -> Vec<Layer> {
    let section = doc.split("\n## Layers").nth(1).expect("docs/architecture.md has a `## Layers` section");
    let mut rows = section
        .lines()
        .skip_while(|l| !l.starts_with("| module | layer | may import |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'));
    let mut table = Vec::new();
    for row in rows.by_ref() {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert!(cells.len() >= 3, "a layer row has module, layer and may-import cells: {row}");
        let layer = cells[1].trim_matches('`').parse().unwrap_or_else(|_| panic!("a layer number: {row}"));
        let imports = backticked(cells[2]);
        let may_import = if imports.iter().any(|m| m == "*") { None } else { Some(imports) };
        table.push(Layer { modules: backticked(cells[0]), layer, may_import });
    }
    assert!(!table.is_empty(), "no `| module | layer | may import |` table under `## Layers`");
    table
}

/// Every module's row: its layer and what it may import.
fn rules(table: &[Layer]) -> BTreeMap<&str, &Layer> {
    let mut by_module = BTreeMap::new();
    for row in table {
        for module in &row.modules {
            assert!(by_module.insert(module.as_str(), row).is_none(), "`{module}` has two rows in the layer table");
        }
    }
    by_module
}

fn allowed(rules: &BTreeMap<&str, &Layer>, from: &str, to: &str) -> bool {
    rules.get(from).is_some_and(|row| row.may_import.as_ref().is_none_or(|list| list.iter().any(|m| m == to)))
}

#[test]
fn every_import_edge_is_allowed_by_the_layer_table() {
    let modules = modules();
    let table = layer_table(&document());
    let rules = rules(&table);
    let missing: Vec<&String> = modules.iter().filter(|m| !rules.contains_key(m.as_str())).collect();
    assert!(missing.is_empty(), "crates of crates/ or modules of src/ missing from the layer table: {missing:?}");
    let mut refused = Vec::new();
    for (from, targets) in code_edges(&modules) {
        for (to, file) in targets {
            if !allowed(&rules, &from, &to) {
                refused.push(format!("{from} → {to} (first in {})", file.display()));
            }
        }
    }
    for (from, to) in workspace_edges(&modules, &["dependencies"]) {
        if !allowed(&rules, &from, &to) {
            refused.push(format!("{from} → {to} (a path dependency of the workspace)"));
        }
    }
    assert!(
        refused.is_empty(),
        "import edges the layer table of docs/architecture.md does not allow: {refused:#?}\nEither the import goes \
         (a lower layer must not know a higher one), or the table allows it and says why."
    );
}

#[test]
fn the_layer_table_points_down_only() {
    let table = layer_table(&document());
    let rules = rules(&table);
    let modules = modules();
    for row in &table {
        for module in &row.modules {
            assert!(
                modules.contains(module),
                "the layer table names `{module}`, which is neither a crate nor a module"
            );
        }
        for target in row.may_import.iter().flatten() {
            let below = rules.get(target.as_str()).unwrap_or_else(|| panic!("`{target}` has no row of its own"));
            assert!(
                below.layer < row.layer,
                "{:?} (layer {}) may import `{target}` (layer {}): imports point to a lower layer only",
                row.modules,
                row.layer,
                below.layer
            );
        }
    }
}

#[test]
fn every_crate_depends_on_exactly_what_its_row_allows() {
    let modules = modules();
    let table = layer_table(&document());
    let rules = rules(&table);
    let edges = workspace_edges(&modules, &["dependencies", "dev-dependencies"]);
    let crates: Vec<String> = std::fs::read_dir(root().join("crates"))
        .expect("the workspace's crates are under crates/")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert!(crates.len() >= 10, "the layer crates are under crates/: {crates:?}");
    for krate in &crates {
        let manifest = std::fs::read_to_string(root().join("crates").join(krate).join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains(&format!("name = \"streamcap-{krate}\"")),
            "crates/{krate} is package streamcap-{krate}"
        );
        let row = rules.get(krate.as_str()).unwrap_or_else(|| panic!("crates/{krate} has no row in the layer table"));
        let may: BTreeSet<&str> = row.may_import.iter().flatten().map(String::as_str).collect();
        let has: BTreeSet<&str> = edges.iter().filter(|(from, _)| from == krate).map(|(_, to)| to.as_str()).collect();
        assert_eq!(
            has, may,
            "crates/{krate}/Cargo.toml's dependencies on other crates (with its dev-dependencies) are exactly its row's \
             \"may import\" column"
        );
    }
}

/// A scratch copy of the workspace's crates (target/tmp/layers-probe/workspace, a root manifest of only the
/// `[workspace…]` tables), for `cargo check` of one crate.
fn probe_workspace() -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap().flatten() {
            let (path, name) = (entry.path(), entry.file_name());
            if path.is_dir() && name != "target" {
                copy(&path, &to.join(&name));
            } else if path.is_file() {
                std::fs::copy(&path, to.join(&name)).unwrap();
            }
        }
    }
    let workspace = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("layers-probe/workspace");
    let _ = std::fs::remove_dir_all(&workspace);
    copy(&root().join("crates"), &workspace.join("crates"));
    std::fs::copy(root().join("Cargo.lock"), workspace.join("Cargo.lock")).unwrap();
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let at = manifest.find("[workspace.package]").expect("the root manifest has [workspace.package]");
    let end = manifest.find("\n[package]").expect("the root manifest has the root [package] after the workspace");
    let tables = format!("[workspace]\nmembers = [\"crates/*\"]\nresolver = \"3\"\n\n{}", &manifest[at..end]);
    std::fs::write(workspace.join("Cargo.toml"), tables).unwrap();
    workspace
}

/// `cargo check --offline -p PACKAGE` in the probe workspace, into a target directory of its own (kept between
/// runs, so only the first builds serde and thiserror): whether it built, and what cargo said.
fn check_probe(workspace: &Path, package: &str) -> (bool, String) {
    let output = std::process::Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args(["check", "--offline", "--quiet", "--message-format", "short", "-p", package])
        .current_dir(workspace)
        .env("CARGO_TARGET_DIR", workspace.with_file_name("target"))
        .output()
        .expect("cargo runs");
    (output.status.success(), String::from_utf8_lossy(&output.stderr).to_string())
}

/// The layer table is the compiler's rule: `units` (layer 0) may import nothing, so the line with which every
/// crate names what it imports (`pub(crate) use ::plan;`, as in crates/results/src/lib.rs) does not build in
/// units, because units' Cargo.toml does not depend on plan, while the same crates without that line do.
#[test]
fn the_compiler_refuses_an_edge_the_layer_table_does_not_allow() {
    let workspace = probe_workspace();
    let (built, said) = check_probe(&workspace, "streamcap-units");
    assert!(built, "the copy of the crates builds as it is (the probe itself works): {said}");
    let lib = workspace.join("crates/units/src/lib.rs");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str(
        "\n// An edge the layer table forbids: units (layer 0) naming plan (layer 4).\npub(crate) use ::plan;\n",
    );
    std::fs::write(&lib, text).unwrap();
    let (built, said) = check_probe(&workspace, "streamcap-units");
    assert!(!built, "units naming plan must not build: {said}");
    assert!(
        said.contains("crates/units/src/lib.rs") && said.contains("plan") && said.contains("error[E0432]"),
        "the build fails at the forbidden import (unresolved import `plan`): {said}"
    );
    let _ = std::fs::remove_dir_all(&workspace);
}

/// The paths the document names: words that look like a path from the repository root (`crates/…`, `src/…`,
/// `tests/…`, `docs/…`, `examples/…`, `scripts/…`) or from a module's source directory (a first component that
/// is a module: `run/core.rs` is `crates/run/src/core.rs`, `app/run.rs` is `src/app/run.rs`). Bare file names
/// (`launch.rs`) are read in their paragraph's directory and not checked here.
fn named_paths(doc: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let roots = ["crates", "src", "tests", "docs", "examples", "scripts", "fuzz"];
    let mut paths = BTreeSet::new();
    let path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    for word in doc.split(|c: char| !path_char(c)) {
        let word = word.trim_end_matches('.');
        let Some((first, rest)) = word.split_once('/') else { continue };
        let from_src = modules.contains(first) && !roots.contains(&first);
        if !(roots.contains(&first) || from_src) {
            continue;
        }
        if !rest.is_empty() || roots.contains(&first) || from_src {
            let from_module = || {
                let dir = module_dir(first);
                let dir = dir.strip_prefix(root()).unwrap_or(&dir).to_string_lossy().to_string();
                format!("{dir}/{rest}")
            };
            paths.insert(if from_src { from_module() } else { word.to_string() });
        }
    }
    paths
}

#[test]
fn every_path_the_document_names_exists() {
    let modules = modules();
    let paths = named_paths(&document(), &modules);
    assert!(paths.contains("crates/run/src/core.rs"), "the path reader finds the paths: {paths:?}");
    let gone: Vec<&String> = paths.iter().filter(|p| !root().join(p).exists()).collect();
    assert!(gone.is_empty(), "docs/architecture.md names paths that do not exist: {gone:#?}");
}

/// The path dependencies between members of the workspace, as module → module, in the manifests' `tables`
/// (`dependencies`, `dev-dependencies`). A member is named by its package name without a `streamcap-` prefix,
/// `-` read as `_` (so `streamcap-units` is `units`); a member that is not a module of the table (the root
/// package `streamcap`, whose app and cli may import everything; a benchmark) is left out.
fn workspace_edges(modules: &BTreeSet<String>, tables: &[&str]) -> Vec<(String, String)> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(manifest.lines().any(|l| l.trim() == "[workspace]"), "the root Cargo.toml has a [workspace]");
    let mut members = Vec::new();
    for dir in ["crates", "."] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else { continue };
        for entry in entries.flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path().join("Cargo.toml")) {
                members.push(text);
            }
        }
    }
    let module_of = |package: &str| package.trim_start_matches("streamcap-").replace('-', "_");
    let mut edges = Vec::new();
    for text in members {
        let Some(name) = text.lines().find_map(|l| l.trim().strip_prefix("name = ")) else { continue };
        let from = module_of(name.trim_matches('"'));
        if !modules.contains(&from) {
            continue;
        }
        let mut in_dependencies = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                in_dependencies = tables.iter().any(|t| line == format!("[{t}]"));
            } else if in_dependencies && line.contains("path =") {
                let package = line.split(['=', ' ', '.']).next().unwrap_or_default();
                edges.push((from.clone(), module_of(package)));
            }
        }
    }
    edges
}

// The readers themselves.

#[test]
fn crate_paths_are_read_from_code_not_comments() {
    let modules: BTreeSet<String> = ["units", "spec", "plan"].map(String::from).into();
    let code = code_of(
        "use crate::units::Bytes; // crate::spec in a comment\n/// see crate::plan\nlet u = \"http://x\"; \
         crate::{spec::A,\n plan::{B, C}};\nlet v = subcrate::units;",
    );
    let found: Vec<String> = crate_paths(&code, &modules).into_iter().collect();
    assert_eq!(found, ["plan", "spec", "units"]);
    let only: Vec<String> =
        crate_paths(&code_of("// use crate::plan;\nx = $crate::units::Bytes"), &modules).into_iter().collect();
    assert_eq!(only, ["units"]);
    let absolute = code_of("use ::plan::Plan;\nlet x = Vec::<u8>::new(); a::spec::f(); <T>::units();");
    assert_eq!(crate_paths(&absolute, &modules).into_iter().collect::<Vec<_>>(), ["plan"]);
}

#[test]
fn paths_are_read_from_prose() {
    let modules: BTreeSet<String> = ["run", "app"].map(String::from).into();
    let doc = "the core (`crates/run/src/core.rs`), run/raw.rs; `app/trial/`, docs/x.md. Not \
               TARGET/.streamcap/run-…, `launch.rs` or /sys/block/.";
    let paths: Vec<String> = named_paths(doc, &modules).into_iter().collect();
    assert_eq!(paths, ["crates/run/src/core.rs", "crates/run/src/raw.rs", "docs/x.md", "src/app/trial/"]);
}

/// The modules of `run` a file of it names (`super::X`, `crate::run::X`), less its own tests and `super::*`.
fn run_siblings(file: &str) -> BTreeSet<String> {
    let code = code_of(&std::fs::read_to_string(root().join("crates/run/src").join(file)).unwrap());
    let mut names = BTreeSet::new();
    for prefix in ["super::", "crate::run::"] {
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() && !rest[name.len()..].starts_with('(') {
                names.insert(name);
            }
        }
    }
    names
}

#[test]
fn the_io_core_imports_only_the_leaves_beneath_it() {
    // docs/architecture.md, "Known exceptions": the core and what it stands on never import what drives them.
    let leaves = ["clock", "control", "schedule", "tally"];
    let core = run_siblings("core.rs");
    assert!(core.iter().all(|m| leaves.contains(&m.as_str())), "run/core.rs imports {core:?}");
    for leaf in leaves {
        let named = run_siblings(&format!("{leaf}.rs"));
        assert!(
            named.iter().all(|m| leaves.contains(&m.as_str()) && m != leaf),
            "run/{leaf}.rs, beneath the core, imports {named:?}"
        );
    }
}
