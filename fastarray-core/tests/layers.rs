//! The runtime's modules depend only downward: bits and codecs, then the
//! connection's state (which knows nothing of items' types), then
//! `Replicate`, then storage, then the writer and the mirror, then the
//! `FastArray` facade. This test reads every source file's references to
//! other modules (`crate::…` and `super::…` paths) and checks that each
//! goes to a module of the same layer or a lower one, and that the modules
//! form no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first: a module may use modules of its own layer or
/// of the layers before it. Folders' `mod.rs` files only declare and
/// re-export their children, and take the layer of their highest child.
const LAYERS: &[&[&str]] = &[
    &["error", "id", "limits", "mask", "schema"],
    // The sender's maps keyed by ids.
    &["id_map"],
    // Packet acknowledgements: their own error, no other module.
    &["ack"],
    // Packet authentication: the handshake and the session, no other module.
    &["secure"],
    &["spatial"],
    &["bits"],
    &["codec", "serde_disabled"],
    &["changeset", "history"],
    &["wire"],
    &[
        "send::pending",
        "send::seen",
        "send::handles",
        "send::view",
        "send::retirement",
        "send::stats",
        "send::scope",
        "send::state",
        "send::watchers",
        "send::interest",
        "receive::events",
        "receive::tombstones",
        "receive::mirror",
        "receive::mirror_state",
    ],
    &["inner"],
    &["replicate"],
    &["pre_image", "store", "iter"],
    &[
        "send::encode_cache",
        "send::caught_up",
        "send::plan",
        "send::sender",
        "send::write",
        "receive::decode",
        "receive::apply",
        "snapshot",
    ],
    &["array", "array_inner"],
    // What the arrays' fields cost (measured through the facade).
    &["replicated", "handshake", "field_costs"],
    &["bitstream", "connection"],
];

/// The layer of module `path` (`a::b::c`): that of the longest prefix
/// listed in [`LAYERS`].
fn layer(path: &str) -> Option<usize> {
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

/// Every `.rs` file under `dir`, as (module path, file).
fn modules(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            modules(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).unwrap().with_extension("");
            let mut parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            out.push((parts.join("::"), path));
        }
    }
}

/// The modules `source` (the file of module `module`) names: the paths
/// after `crate::` and `super::`, resolved to module paths of `known`.
/// Lines of test modules are left out.
fn references(
    module: &str,
    is_mod_rs: bool,
    source: &str,
    known: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let code = match source.find("#[cfg(test)]\nmod tests") {
        Some(end) => &source[..end],
        None => source,
    };
    // `super` is the parent of a file module, and the parent's parent of a
    // folder's `mod.rs` (which is the folder's module itself).
    let mut base: Vec<&str> = module.split("::").collect();
    if !is_mod_rs {
        base.pop();
    }
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .filter(|w| w.starts_with("crate::") || w.starts_with("super::"))
        .collect();
    for word in words {
        let parts: Vec<&str> = word.split("::").filter(|p| !p.is_empty()).collect();
        let mut path: Vec<&str> = if parts[0] == "crate" {
            Vec::new()
        } else {
            base.clone()
        };
        path.extend(parts[1..].iter().copied().filter(|p| *p != "super"));
        // The longest prefix that is a module.
        while !path.is_empty() {
            let candidate = path.join("::");
            if known.contains(&candidate) {
                if candidate != module {
                    out.insert(candidate);
                }
                break;
            }
            path.pop();
        }
    }
    out
}

#[test]
fn modules_depend_only_downward_and_form_no_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    modules(&root, &root, &mut files);
    let known: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path) in &files {
        if module == "lib" {
            continue; // the crate root declares and re-exports
        }
        let source = fs::read_to_string(path).unwrap();
        let is_mod_rs = path.file_name().is_some_and(|n| n == "mod.rs");
        graph.insert(
            module.clone(),
            references(module, is_mod_rs, &source, &known),
        );
    }

    let mut wrong = Vec::new();
    for (module, uses) in &graph {
        let Some(own) = layer(module) else {
            // A folder's `mod.rs`: checked through its children.
            if !known.iter().any(|m| m.starts_with(&format!("{module}::"))) {
                wrong.push(format!("{module} is in no layer"));
            }
            continue;
        };
        for used in uses {
            match layer(used) {
                Some(other) if other <= own => {}
                Some(other) => wrong.push(format!(
                    "{module} (layer {own}) uses {used} (layer {other})"
                )),
                None => {} // a folder's re-exports
            }
        }
    }
    assert!(wrong.is_empty(), "modules that reach up: {wrong:#?}");

    // No cycle, even within a layer: a depth-first search for a back edge.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(node) {
            Some(1) => {
                let start = stack.iter().position(|n| n == node).unwrap();
                let mut cycle = stack[start..].to_vec();
                cycle.push(node.to_owned());
                return Some(cycle);
            }
            Some(_) => return None,
            None => {}
        }
        state.insert(node.to_owned(), 1);
        stack.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, state, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        state.insert(node.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for module in graph.keys() {
        let cycle = visit(module, &graph, &mut state, &mut Vec::new());
        assert!(cycle.is_none(), "an import cycle: {:?}", cycle.unwrap());
    }
    // The check sees the modules it should.
    assert!(graph.len() > 30, "{} modules read", graph.len());
    assert!(graph["array"].contains("store") && graph["store"].contains("replicate"));
}
