//! The runtime's modules depend only downward: bits and codecs, then the
//! message formats, then the connection's state (which knows nothing of
//! items' types), then `Replicate`, then storage, then the writer and the
//! mirror, then the `FastArray` facade, then connections. This test parses
//! every source file (with `syn`) and resolves every path it names — `use`
//! trees with their groups, renames and globs, paths in types and
//! expressions, paths inside macro calls — to the module that defines the
//! item, seeing through re-exports (the crate root's, a folder's, a private
//! `use` a child reaches through `super`). Each must go to a module of the
//! same layer or a lower one, and the modules must form no cycle.
//!
//! The injection tests below add each form of upward path to a low module
//! and check that the analysis reports it.

use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use syn::visit::{self, Visit};

/// The layers, bottom first: a module may use modules of its own layer or
/// of the layers before it. A module takes the layer of the longest entry
/// that is its path or a prefix of it. Folders whose `mod.rs` only
/// declares and re-exports are in no layer: what goes through them is
/// followed to the module that defines it.
const LAYERS: &[&[&str]] = &[
    &["error", "id", "limits", "mask", "schema", "shard"],
    // The sender's maps keyed by ids, and its order of close-together
    // ids and handles.
    &["id_map", "dense_order"],
    // Packet acknowledgements: their own error, no other module.
    &["ack"],
    // Packet authentication: the handshake and the session, no other module.
    &["secure"],
    &["interest_grid"],
    &["bits"],
    &["codec", "serde_disabled"],
    &["changeset", "history"],
    &["wire"],
    // What a connection keeps between messages, and what a mirror keeps.
    &["send_state", "receive_state"],
    &["inner_array"],
    &["replicate"],
    &["pre_image", "store", "iter"],
    // The writer, the mirror's decoding and applying, snapshot messages.
    &["send", "receive", "snapshot_message", "feed_message"],
    &["array"],
    // What the arrays' fields cost (measured through the facade).
    &["replicated", "persist", "handshake", "field_costs"],
    &["bitstream", "connection"],
];

/// A module's path from the crate root (empty for the root).
type ModPath = Vec<String>;

/// Per module, the modules it uses (each with a path that shows it); and
/// the paths that name nothing known.
type Edges = (BTreeMap<ModPath, BTreeMap<ModPath, String>>, Vec<String>);

fn show(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

/// The layer of module `path`: that of the longest entry of [`LAYERS`]
/// that is the path or a prefix of it.
fn layer(path: &[String]) -> Option<usize> {
    let path = path.join("::");
    let mut best: Option<(usize, usize)> = None;
    for (index, names) in LAYERS.iter().enumerate() {
        for name in *names {
            let matches = path == *name || path.starts_with(&format!("{name}::"));
            if matches && best.is_none_or(|(len, _)| name.len() > len) {
                best = Some((name.len(), index));
            }
        }
    }
    best.map(|(_, index)| index)
}

/// Whether `attrs` hold `#[cfg(test)]` (the item exists in test builds
/// only, so what it names is not the runtime's).
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The name an item defines, if any.
fn item_name(item: &syn::Item) -> Option<String> {
    use syn::Item::*;
    let ident = match item {
        Const(i) => &i.ident,
        Enum(i) => &i.ident,
        Fn(i) => &i.sig.ident,
        Macro(i) => i.ident.as_ref()?,
        Mod(i) => &i.ident,
        Static(i) => &i.ident,
        Struct(i) => &i.ident,
        Trait(i) => &i.ident,
        TraitAlias(i) => &i.ident,
        Type(i) => &i.ident,
        Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// A `use` tree flattened: (the name it binds, or `None` for a glob; the
/// path it names).
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten_use(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let name = name.ident.to_string();
            if name == "self" {
                // `use a::b::{self}` binds `b`.
                if let Some(last) = prefix.last() {
                    out.push((Some(last.clone()), prefix.clone()));
                }
            } else {
                let mut path = prefix.clone();
                path.push(name.clone());
                out.push((Some(name), path));
            }
        }
        syn::UseTree::Rename(rename) => {
            let mut path = prefix.clone();
            let original = rename.ident.to_string();
            if original != "self" {
                path.push(original);
            }
            out.push((Some(rename.rename.to_string()), path));
        }
        syn::UseTree::Glob(_) => out.push((None, prefix.clone())),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                flatten_use(tree, prefix, out);
            }
        }
    }
}

/// What the analysis knows of the crate: its modules (files and inline
/// blocks), and per module the names it defines and imports.
#[derive(Default)]
struct Crate {
    /// Every module: files, and inline `mod name { … }` blocks.
    modules: BTreeSet<ModPath>,
    /// The modules of files, each with its syntax.
    files: BTreeMap<ModPath, syn::File>,
    /// Modules that exist in test builds only (`#[cfg(test)] mod …`).
    test_only: BTreeSet<ModPath>,
    /// What [`edges`](Crate::edges) found, once asked.
    edges: OnceCell<Edges>,
    /// Per module, the names of the items it defines.
    defines: BTreeMap<ModPath, BTreeSet<String>>,
    /// Per module, the names its `use` items bind, to the paths (from the
    /// crate root) they name.
    imports: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    /// Per module, the paths (from the crate root) of its glob imports.
    globs: BTreeMap<ModPath, Vec<ModPath>>,
}

impl Crate {
    /// The crate made of `sources`: (file path under `src/`, its text).
    fn parse(sources: &[(String, String)]) -> Self {
        let mut krate = Crate::default();
        for (file, text) in sources {
            let mut module: ModPath = file
                .trim_end_matches(".rs")
                .split('/')
                .map(str::to_owned)
                .collect();
            if module
                .last()
                .is_some_and(|last| last == "mod" || last == "lib")
            {
                module.pop();
            }
            let syntax = syn::parse_file(text).unwrap_or_else(|e| panic!("{file}: {e}"));
            krate.files.insert(module, syntax);
        }
        let files: Vec<(ModPath, syn::File)> = krate
            .files
            .iter()
            .map(|(m, f)| (m.clone(), f.clone()))
            .collect();
        for (module, file) in &files {
            krate.modules.insert(module.clone());
            krate.declare(module, &file.items);
        }
        for (module, file) in &files {
            krate.import(module, &file.items);
        }
        krate
    }

    /// Records the modules, test-only modules and names `items` of
    /// `module` define.
    fn declare(&mut self, module: &ModPath, items: &[syn::Item]) {
        for item in items {
            if let Some(name) = item_name(item) {
                self.defines.entry(module.clone()).or_default().insert(name);
            }
            if let syn::Item::Mod(inner) = item {
                let mut path = module.clone();
                path.push(inner.ident.to_string());
                if is_test_only(&inner.attrs) {
                    self.test_only.insert(path.clone());
                }
                if let Some((_, items)) = &inner.content {
                    self.modules.insert(path.clone());
                    self.declare(&path, items);
                }
            }
        }
    }

    /// Records the `use` items of `module`'s `items`, test-only ones aside.
    fn import(&mut self, module: &ModPath, items: &[syn::Item]) {
        for item in items {
            if is_test_only(item_attrs(item)) {
                continue;
            }
            match item {
                syn::Item::Use(using) => {
                    let mut flat = Vec::new();
                    flatten_use(&using.tree, &mut Vec::new(), &mut flat);
                    for (name, path) in flat {
                        let Some(path) = self.absolute(module, &path) else {
                            continue; // another crate's
                        };
                        match name {
                            Some(name) => {
                                self.imports
                                    .entry(module.clone())
                                    .or_default()
                                    .insert(name, path);
                            }
                            None => self.globs.entry(module.clone()).or_default().push(path),
                        }
                    }
                }
                syn::Item::Mod(inner) => {
                    if let Some((_, items)) = &inner.content {
                        let mut path = module.clone();
                        path.push(inner.ident.to_string());
                        self.import(&path, items);
                    }
                }
                _ => {}
            }
        }
    }

    /// `path`, named in `module`, from the crate root; `None` if it names
    /// another crate or a local item (a type parameter, a variable).
    fn absolute(&self, module: &ModPath, path: &[String]) -> Option<ModPath> {
        let first = path.first()?;
        let mut out = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.clone(),
            "super" => {
                let mut out = module.clone();
                out.pop();
                out
            }
            _ => {
                let mut child = module.clone();
                child.push(first.clone());
                if self.modules.contains(&child) {
                    module.clone()
                } else if let Some(target) = self.imports.get(module).and_then(|i| i.get(first)) {
                    // A name the module imported, used as a path's start.
                    let mut out = target.clone();
                    out.extend(path[1..].iter().cloned());
                    return Some(out);
                } else {
                    // A name a glob brought in.
                    let globs = self.globs.get(module).into_iter().flatten();
                    return globs
                        .map(|glob| {
                            let mut out = glob.clone();
                            out.extend(path.iter().cloned());
                            out
                        })
                        .find(|candidate| self.resolve(candidate, 0).is_some());
                }
            }
        };
        let mut rest = &path[usize::from(matches!(first.as_str(), "crate" | "self" | "super"))..];
        while rest.first().is_some_and(|s| s == "super") {
            out.pop();
            rest = &rest[1..];
        }
        out.extend(rest.iter().cloned());
        Some(out)
    }

    /// The module that defines what `path` (from the crate root) names,
    /// following re-exports and globs; `None` if it names nothing known.
    fn resolve(&self, path: &[String], depth: usize) -> Option<ModPath> {
        if depth > 32 {
            return None;
        }
        // The longest prefix that is a module.
        let mut len = path.len();
        while len > 0 && !self.modules.contains(&path[..len]) {
            len -= 1;
        }
        let module = path[..len].to_vec();
        let Some(name) = path.get(len) else {
            return Some(module); // the path names a module
        };
        if self.defines.get(&module).is_some_and(|d| d.contains(name)) {
            return Some(module);
        }
        if let Some(target) = self.imports.get(&module).and_then(|i| i.get(name)) {
            let mut next = target.clone();
            next.extend(path[len + 1..].iter().cloned());
            return self.resolve(&next, depth + 1);
        }
        for glob in self.globs.get(&module).into_iter().flatten() {
            let mut next = glob.clone();
            next.extend(path[len..].iter().cloned());
            if let Some(found) = self.resolve(&next, depth + 1) {
                return Some(found);
            }
        }
        None
    }

    /// Whether `module` exists in test builds only.
    fn is_test(&self, module: &[String]) -> bool {
        (1..=module.len()).any(|len| self.test_only.contains(&module[..len]))
    }

    /// The file module `module` is in (itself, or the file of an inline
    /// block).
    fn file_of(&self, module: &[String]) -> ModPath {
        let mut len = module.len();
        while !self.files.contains_key(&module[..len]) {
            len -= 1;
        }
        module[..len].to_vec()
    }

    /// Per runtime file module, the modules it depends on, each with a path
    /// that shows it; and the paths naming nothing known. Worked out once.
    fn edges(&self) -> &Edges {
        self.edges.get_or_init(|| self.find_edges())
    }

    fn find_edges(&self) -> Edges {
        let mut graph = BTreeMap::new();
        let mut unknown = Vec::new();
        for (module, file) in &self.files {
            if self.is_test(module) {
                continue;
            }
            let mut paths = Paths {
                module: module.clone(),
                found: Vec::new(),
            };
            paths.visit_file(file);
            let uses: &mut BTreeMap<ModPath, String> = graph.entry(module.clone()).or_default();
            for (from, path) in paths.found {
                let Some(absolute) = self.absolute(&from, &path) else {
                    continue;
                };
                match self.resolve(&absolute, 0) {
                    Some(target) => {
                        let target = self.file_of(&target);
                        // A module's own items, and a file's parents
                        // (the folders it is declared in) are no edge.
                        if !module.starts_with(&target) {
                            uses.entry(target).or_insert_with(|| path.join("::"));
                        }
                    }
                    None => unknown.push(format!("{}: {}", show(module), path.join("::"))),
                }
            }
        }
        (graph, unknown)
    }

    /// Every upward dependency, each as "user (layer) uses used (layer) via
    /// path", and every runtime module in no layer.
    fn upward(&self) -> Vec<String> {
        let (graph, unknown) = self.edges();
        let mut wrong = unknown
            .iter()
            .map(|u| format!("unresolved {u}"))
            .collect::<Vec<_>>();
        for (module, uses) in graph {
            if module.is_empty() {
                continue; // the crate root declares and re-exports
            }
            let Some(own) = layer(module) else {
                let is_folder = self
                    .files
                    .keys()
                    .any(|m| m.len() > module.len() && m.starts_with(module));
                if !is_folder {
                    wrong.push(format!("{} is in no layer", show(module)));
                }
                continue;
            };
            for (used, via) in uses {
                match layer(used) {
                    Some(other) if other <= own => {}
                    Some(other) => wrong.push(format!(
                        "{} (layer {own}) uses {} (layer {other}) via `{via}`",
                        show(module),
                        show(used)
                    )),
                    None if used.is_empty() => {
                        wrong.push(format!("{} uses the crate root via `{via}`", show(module)))
                    }
                    None => {} // a folder's `mod.rs` that defines nothing named
                }
            }
        }
        wrong
    }

    /// A cycle among the runtime's modules, if any (a folder declaring
    /// its children is no edge of one).
    fn cycle(&self) -> Option<Vec<String>> {
        let (graph, _) = self.edges();
        fn visit(
            node: &ModPath,
            graph: &BTreeMap<ModPath, BTreeMap<ModPath, String>>,
            state: &mut BTreeMap<ModPath, u8>,
            stack: &mut Vec<ModPath>,
        ) -> Option<Vec<String>> {
            match state.get(node) {
                Some(1) => {
                    let start = stack.iter().position(|n| n == node).unwrap();
                    let mut cycle: Vec<String> = stack[start..].iter().map(|m| show(m)).collect();
                    cycle.push(show(node));
                    return Some(cycle);
                }
                Some(_) => return None,
                None => {}
            }
            state.insert(node.clone(), 1);
            stack.push(node.clone());
            for next in graph.get(node).into_iter().flat_map(|uses| uses.keys()) {
                if next.starts_with(node) || next.is_empty() {
                    continue; // a folder and its children
                }
                if let Some(cycle) = visit(next, graph, state, stack) {
                    return Some(cycle);
                }
            }
            stack.pop();
            state.insert(node.clone(), 2);
            None
        }
        let mut state = BTreeMap::new();
        graph
            .keys()
            .find_map(|module| visit(module, graph, &mut state, &mut Vec::new()))
    }
}

/// Collects the paths a file names in its runtime code, each with the
/// (possibly inline) module it is named in.
struct Paths {
    module: ModPath,
    found: Vec<(ModPath, Vec<String>)>,
}

impl Paths {
    fn push(&mut self, path: Vec<String>) {
        if !path.is_empty() {
            self.found.push((self.module.clone(), path));
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_test_only(item_attrs(item)) {
            return;
        }
        match item {
            syn::Item::Mod(inner) => {
                if inner.content.is_some() {
                    self.module.push(inner.ident.to_string());
                    visit::visit_item_mod(self, inner);
                    self.module.pop();
                }
            }
            syn::Item::Use(using) => {
                let mut flat = Vec::new();
                flatten_use(&using.tree, &mut Vec::new(), &mut flat);
                for (_, path) in flat {
                    self.push(path);
                }
            }
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        // A single name is local (a type, a variable), or an import the
        // `use` already counted.
        if segments.len() > 1
            || matches!(
                segments.first().map(String::as_str),
                Some("crate" | "super" | "self")
            )
        {
            self.push(segments);
        }
        visit::visit_path(self, path);
    }

    /// Inside a macro call the tokens are not parsed: every run of
    /// `name :: name :: …` among them is taken as a path.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        let mut tokens = Vec::new();
        flatten_tokens(mac.tokens.clone(), &mut tokens);
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        for token in tokens {
            match token {
                Token::Ident(name) if run.is_empty() || colons == 2 => {
                    run.push(name);
                    colons = 0;
                }
                Token::Colon if !run.is_empty() && colons < 2 => colons += 1,
                other => {
                    if run.len() > 1 {
                        self.push(core::mem::take(&mut run));
                    }
                    run.clear();
                    colons = 0;
                    if let Token::Ident(name) = other {
                        run.push(name);
                    }
                }
            }
        }
        if run.len() > 1 {
            self.push(run);
        }
    }
}

enum Token {
    Ident(String),
    Colon,
    Other,
}

fn flatten_tokens(stream: proc_macro2::TokenStream, out: &mut Vec<Token>) {
    for tree in stream {
        match tree {
            proc_macro2::TokenTree::Ident(ident) => out.push(Token::Ident(ident.to_string())),
            proc_macro2::TokenTree::Punct(punct) if punct.as_char() == ':' => {
                out.push(Token::Colon)
            }
            proc_macro2::TokenTree::Group(group) => {
                out.push(Token::Other);
                flatten_tokens(group.stream(), out);
                out.push(Token::Other);
            }
            _ => out.push(Token::Other),
        }
    }
}

/// Every `.rs` file under `dir`, as (path under `root`, text).
fn sources(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap();
            let name = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((name, fs::read_to_string(&path).unwrap()));
        }
    }
}

fn runtime() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    sources(&root, &root, &mut out);
    out.sort();
    out
}

#[test]
fn modules_depend_only_downward_and_form_no_cycle() {
    let krate = Crate::parse(&runtime());
    let wrong = krate.upward();
    assert!(
        wrong.is_empty(),
        "{} modules reach up: {wrong:#?}",
        wrong.len()
    );
    let cycle = krate.cycle();
    assert!(cycle.is_none(), "an import cycle: {cycle:?}");
    // Folders follow the layers: a layer names top-level modules (files
    // and folders) only, and no folder depends on one that depends on it.
    let nested: Vec<_> = LAYERS
        .iter()
        .flat_map(|names| names.iter())
        .filter(|n| n.contains("::"))
        .collect();
    assert!(
        nested.is_empty(),
        "a folder split across layers: {nested:?}"
    );
    let cycles = folder_cycles(&krate);
    assert!(cycles.is_empty(), "folders on a cycle: {cycles:#?}");
    // The analysis sees what it should.
    let (graph, _) = krate.edges();
    assert!(graph.len() > 30, "{} modules read", graph.len());
    let module = |s: &str| s.split("::").map(str::to_owned).collect::<ModPath>();
    assert!(graph[&module("array")].contains_key(&module("store")));
    assert!(graph[&module("store")].contains_key(&module("replicate")));
}

/// The real crate with `line` added to the file `file` (under `src/`):
/// the violations the analysis reports that the crate alone does not.
fn injected(file: &str, line: &str) -> Vec<String> {
    // What the crate alone reports, computed once for every injection.
    static BEFORE: OnceLock<BTreeSet<String>> = OnceLock::new();
    let before = BEFORE.get_or_init(|| Crate::parse(&runtime()).upward().into_iter().collect());
    let mut sources = runtime();
    let source = sources
        .iter_mut()
        .find(|(name, _)| name == file)
        .unwrap_or_else(|| panic!("no file {file}"));
    source.1.push('\n');
    source.1.push_str(line);
    source.1.push('\n');
    let after = Crate::parse(&sources).upward();
    after.into_iter().filter(|v| !before.contains(v)).collect()
}

/// Asserts that adding `line` to `file` is reported as `file`'s module
/// using `used`.
fn assert_caught(file: &str, line: &str, used: &str) {
    let new = injected(file, line);
    assert!(
        new.iter().any(
            |v| v.contains(&format!(" uses {used} ")) || v.contains(&format!(" uses {used}::"))
        ),
        "`{line}` in {file} was not reported as a use of {used}: {new:#?}"
    );
}

#[test]
fn an_upward_use_through_the_crate_roots_re_export_is_caught() {
    assert_caught("id.rs", "use crate::FastArray;", "array");
    assert_caught(
        "id.rs",
        "pub use crate::Replicated as Object;",
        "replicated",
    );
}

#[test]
fn an_upward_use_in_a_group_is_caught() {
    assert_caught(
        "id.rs",
        "use crate::{mask::FieldMask, array::FastArray};",
        "array",
    );
    assert_caught("id.rs", "use crate::{array::{self}};", "array");
}

#[test]
fn an_upward_glob_is_caught() {
    assert_caught("mask.rs", "use crate::array::*;", "array");
    assert_caught(
        "mask.rs",
        "use crate::*;\nfn f() -> FastArray<u8> { FastArray::new() }",
        "array",
    );
}

#[test]
fn an_upward_path_through_super_is_caught() {
    assert_caught(
        "wire/frame.rs",
        "use super::super::array::FastArray;",
        "array",
    );
    assert_caught(
        "wire/frame.rs",
        "use super::super::Connection;",
        "connection",
    );
}

#[test]
fn an_upward_path_in_code_or_a_macro_is_caught() {
    assert_caught(
        "id.rs",
        "fn f() -> usize { crate::array::FastArray::<u8>::new().len() }",
        "array",
    );
    assert_caught(
        "id.rs",
        "fn f() { debug_assert!(crate::FastArray::<u8>::new().is_empty()); }",
        "array",
    );
    assert_caught("id.rs", "type A = crate::Replicated<u8>;", "replicated");
}

#[test]
fn test_modules_are_not_the_runtimes() {
    let new = injected(
        "id.rs",
        "#[cfg(test)]\nmod more_tests { use crate::FastArray; }",
    );
    assert!(new.is_empty(), "{new:#?}");
}

/// The dependencies between top-level modules (a folder counted as one)
/// that lie on a cycle among them: each such edge runs upward whatever
/// order the folders are put in. Folders that follow the layers have none.
fn folder_cycles(krate: &Crate) -> Vec<String> {
    let (graph, _) = krate.edges();
    let top = |m: &ModPath| m.first().cloned().unwrap_or_default();
    let mut folders: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (module, uses) in graph {
        for (used, via) in uses {
            let (from, to) = (top(module), top(used));
            if from != to && !from.is_empty() && !to.is_empty() {
                let via = format!("{} uses {} via `{via}`", show(module), show(used));
                folders.entry(from).or_default().entry(to).or_insert(via);
            }
        }
    }
    let reaches = |from: &String, to: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(next) = stack.pop() {
            if &next == to {
                return true;
            }
            if seen.insert(next.clone()) {
                stack.extend(
                    folders
                        .get(&next)
                        .into_iter()
                        .flat_map(|u| u.keys().cloned()),
                );
            }
        }
        false
    };
    let mut out = Vec::new();
    for (from, uses) in &folders {
        for (to, via) in uses {
            if reaches(to, from) {
                out.push(format!("{from} -> {to}: {via}"));
            }
        }
    }
    out
}

/// Prints what the layer check measures: the upward uses between files,
/// and the uses between folders that lie on a cycle of folders.
/// `cargo test -p fastarray-core --test layers -- --ignored --nocapture`.
#[test]
#[ignore = "a report: run by hand"]
fn report() {
    let krate = Crate::parse(&runtime());
    let upward = krate.upward();
    println!("{} upward uses between modules:", upward.len());
    upward.iter().for_each(|v| println!("  {v}"));
    let cycles = folder_cycles(&krate);
    println!(
        "{} uses between folders on a cycle of folders:",
        cycles.len()
    );
    cycles.iter().for_each(|v| println!("  {v}"));
}
