//! Text that came from files (a job file's phase names, a result's notices and error messages, file names) made
//! safe for a terminal: control characters are shown as `\u001b`-style escapes instead of reaching the terminal,
//! where an escape sequence in a JSON file could recolour the screen, move the cursor, rewrite the title or hide
//! what came before it. Newlines and tabs stay (summaries are multi-line text). The escape is also a valid JSON
//! escape with the same meaning, so JSON printed through here stays valid and says the same. Layer 0.

#![deny(unsafe_code)]

use std::borrow::Cow;

/// Whether `c` must not reach a terminal: C0 controls but newline and tab, DEL, and C1 controls (U+0080 to
/// U+009F, which include the one-character CSI U+009B).
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `text` with every unsafe character replaced by `\uXXXX`; borrowed when there is none (the usual case).
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_sent() {
        // Guards issue 9: `report` printed escape sequences read from a JSON file straight to the terminal.
        assert_eq!(
            for_terminal("phase \u{1b}[31mred\u{1b}]0;title\u{7}"),
            "phase \\u001b[31mred\\u001b]0;title\\u0007"
        );
        assert_eq!(for_terminal("csi \u{9b}2J and \r return"), "csi \\u009b2J and \\u000d return");
        assert!(matches!(for_terminal("two\nlines\twith a tab, µs and ×"), Cow::Borrowed(_)));
    }

    #[test]
    fn escaped_json_stays_valid_and_means_the_same() {
        let original = serde_json::json!({ "name": "a\u{9b}b\u{7f}" });
        let text = serde_json::to_string(&original).unwrap();
        let back: serde_json::Value = serde_json::from_str(&for_terminal(&text)).unwrap();
        assert_eq!(back, original);
    }
}
