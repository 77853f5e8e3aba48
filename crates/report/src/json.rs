//! `--format json`: the result itself, as `--json FILE` writes it (the versioned schema of docs/results-schema.md),
//! for scripts that read stdout. Pretty-printed with a final newline, the same bytes as the file.

use std::io::{self, Write};

use crate::Renderer;
use crate::results::RunResult;

/// The result JSON.
pub struct Json;

impl Renderer for Json {
    fn render(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, result)?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_format_is_the_result_itself() {
        let path = std::path::Path::new("result-v1.json");
        let result = crate::results::parse_result(path, include_str!("../../../tests/fixtures/result-v1.json"))
            .expect("the fixture is a result");
        let text = crate::render_to_string(&Json, &result);
        assert!(text.ends_with("}\n"));
        let again: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(again, serde_json::to_value(&result).expect("serializable"));
    }
}
