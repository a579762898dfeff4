//! Criterion's estimates, read from its output directory.

use std::collections::BTreeMap;
use std::path::Path;

/// Median time per iteration in nanoseconds, by criterion id
/// (`group/function`).
pub type Cpu = BTreeMap<String, f64>;

/// Reads every `new/estimates.json` under `dir` (criterion's output).
pub fn load_criterion(dir: &Path) -> Cpu {
    let mut cpu = Cpu::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_dir() {
                continue;
            }
            if path.file_name().is_some_and(|n| n == "new") {
                let bench = std::fs::read_to_string(path.join("benchmark.json"));
                let estimates = std::fs::read_to_string(path.join("estimates.json"));
                if let (Ok(bench), Ok(estimates)) = (bench, estimates) {
                    let id = json_string(&bench, "full_id");
                    let median = json_section_number(&estimates, "median", "point_estimate");
                    if let (Some(id), Some(ns)) = (id, median) {
                        cpu.insert(id, ns);
                    }
                }
            } else {
                stack.push(path);
            }
        }
    }
    cpu
}

/// The string value of `"key":"..."` in a flat JSON text.
fn json_string(json: &str, key: &str) -> Option<String> {
    let start = json.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let end = json[start..].find('"')?;
    Some(json[start..start + end].to_string())
}

/// The number of `"field":` inside the object of `"section":`.
fn json_section_number(json: &str, section: &str, field: &str) -> Option<f64> {
    let at = json.find(&format!("\"{section}\":{{"))?;
    let rest = &json[at..];
    let start = rest.find(&format!("\"{field}\":"))? + field.len() + 3;
    let end = rest[start..].find([',', '}'])?;
    rest[start..start + end].trim().parse().ok()
}
