//! vdbench parameter files, the lexical layer: physical lines become a flat stream of `keyword=value`
//! parameters, each with the file and line it came from.
//!
//! Rules (vdbench 5.04 `Vdb_scan`): lines starting with `*`, `#` or `/` are comments; a line starting with `eof`
//! ends the file; everything after the first blank is ignored unless double quotes protect it; a trailing `,`
//! lets the record go on on the next line (vdbench reads parameters as one stream, so the next line simply
//! continues it); `include=FILE` inserts a file (relative to the including file); `$name` and `${name}` are
//! replaced by a `name=value` from the command line. Keywords are case-insensitive.
//!
//! This layer does not know what any keyword means: grouping into records and checking keywords is `model`'s.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{Problems, VdbError, Where};

/// Characters inside double quotes that would otherwise split or shape a value are carried as private-use
/// characters until the value is final (vdbench does the same with `[`, `^`, `{` and `}`).
const PROTECTED: [(char, char); 6] =
    [(' ', '\u{E000}'), (',', '\u{E001}'), ('=', '\u{E002}'), ('-', '\u{E003}'), ('(', '\u{E004}'), (')', '\u{E005}')];

/// Restores the characters that quotes protected.
pub(super) fn unprotect(text: &str) -> String {
    text.chars().map(|c| PROTECTED.iter().find(|p| p.1 == c).map_or(c, |p| p.0)).collect()
}

/// One `keyword=value` as written; the keyword is lower-cased, the value still has its quotes' protection.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Param {
    pub key: String,
    pub value: String,
    pub at: Where,
}

/// The parameters of a file and its includes, and the variables they used.
#[derive(Debug, Default)]
pub(super) struct Lexed {
    pub params: Vec<Param>,
    pub used_vars: BTreeSet<String>,
    /// Where free text after the last rd began (vdbench's own example files end with prose); the rest of the
    /// file was not read.
    pub text_after_rds: Option<Where>,
}

/// Reads `text` (the contents of `path`) into a parameter stream; `vars` are the command line's `name=value`s.
/// A line with a problem is recorded in `problems` and skipped; the others are read.
pub(super) fn lex(path: &Path, text: &str, vars: &[(String, String)], problems: &mut Problems) -> Lexed {
    let mut lexer = Lexer {
        vars,
        out: Lexed::default(),
        stack: vec![identity(path)],
        budget: Default::default(),
        problems,
        continues: false,
    };
    lexer.file(path, text);
    lexer.out
}

struct Lexer<'a> {
    vars: &'a [(String, String)],
    out: Lexed,
    problems: &'a mut Problems,
    /// Files being read, outermost first, to refuse include cycles.
    stack: Vec<PathBuf>,
    /// What the includes read so far cost (count and bytes, capped by `crate::limits`).
    budget: crate::limits::IncludeBudget,
    /// The last line read ended with a `,`: the next one continues its record.
    continues: bool,
}

fn identity(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

impl Lexer<'_> {
    fn file(&mut self, path: &Path, text: &str) {
        for (index, raw) in text.lines().enumerate() {
            let at = Where::Line(path.to_path_buf(), index + 1);
            let line = raw.trim();
            if line.is_empty() || line.starts_with(['*', '#', '/']) {
                continue;
            }
            if line.starts_with("eof") {
                break;
            }
            if self.is_text_after_rds(line) {
                self.out.text_after_rds = Some(at);
                break;
            }
            if let Err(e) = self.line(line, path, &at) {
                self.problems.push(e);
            }
            self.continues = protect_and_cut(line).is_ok_and(|cut| cut.ends_with(','));
        }
    }

    /// A line of prose once an rd has been read: its first word is no `keyword=value` and the line before did
    /// not end with a `,` that continues a record. vdbench's example parameter files end so; a mistyped
    /// parameter between records is still an error, as is any such line before the first rd.
    fn is_text_after_rds(&self, line: &str) -> bool {
        let seen_rd = self.out.params.iter().any(|p| p.key == "rd");
        let first = line.split_whitespace().next().unwrap_or("");
        seen_rd && !first.contains('=') && !self.continues
    }

    fn line(&mut self, line: &str, path: &Path, at: &Where) -> Result<(), VdbError> {
        let line = self.substitute(line, at)?;
        let line = protect_and_cut(&line).map_err(|m| VdbError::at(at, m))?;
        if line.get(..8).is_some_and(|head| head.eq_ignore_ascii_case("include=")) {
            return self.include(&line[8..], path, at);
        }
        self.split(&line, at)
    }

    /// Replaces `$name` and `${name}`. An unknown variable is an error naming it.
    fn substitute(&mut self, line: &str, at: &Where) -> Result<String, VdbError> {
        if !line.contains('$') {
            return Ok(line.to_string());
        }
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        while let Some(pos) = rest.find('$') {
            out.push_str(&rest[..pos]);
            let after = &rest[pos + 1..];
            let (name, len) = if let Some(braced) = after.strip_prefix('{') {
                match braced.find('}') {
                    Some(end) => (&braced[..end], end + 2),
                    None => return Err(VdbError::at(at, "'${' without a closing '}'".into())),
                }
            } else {
                let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
                (&after[..end], end)
            };
            if name.is_empty() {
                out.push('$');
                rest = after;
                continue;
            }
            let value = self
                .vars
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .or_else(|| self.vars.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(name)));
            match value {
                Some((_, v)) => out.push_str(v),
                None if name.eq_ignore_ascii_case("host") => {
                    return Err(VdbError::at(
                        at,
                        "$host repeats a parameter for every host: multi-host runs are not supported yet".into(),
                    ));
                }
                None => {
                    return Err(VdbError::at(
                        at,
                        format!("variable ${name} is not set: pass --set {name}=VALUE on the command line"),
                    ));
                }
            }
            self.out.used_vars.insert(name.to_string());
            rest = &after[len..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn include(&mut self, value: &str, from: &Path, at: &Where) -> Result<(), VdbError> {
        let name = unprotect(value);
        let name = name.trim();
        if name.is_empty() {
            return Err(VdbError::keyword(at, "include", None, "no file name: write include=FILE".into()));
        }
        let mut target = PathBuf::from(name);
        if target.is_relative() {
            target = from.parent().unwrap_or(Path::new(".")).join(target);
        }
        let id = identity(&target);
        if self.stack.contains(&id) {
            let chain: Vec<String> = self.stack.iter().chain([&id]).map(|p| p.display().to_string()).collect();
            return Err(VdbError::keyword(
                at,
                "include",
                None,
                format!("include cycle: {}; remove one of the include= lines", chain.join(" includes ")),
            ));
        }
        let text = crate::limits::read_text_file(&target, crate::limits::MAX_INPUT_FILE_BYTES)
            .map_err(|e| VdbError::keyword(at, "include", None, format!("cannot read {}: {e}", target.display())))?;
        self.budget
            .charge(self.stack.len(), text.len() as u64)
            .map_err(|m| VdbError::keyword(at, "include", None, m))?;
        self.stack.push(id);
        self.file(&target, &text);
        self.stack.pop();
        Ok(())
    }

    /// Splits a line at the commas outside parentheses into `keyword=value` parameters.
    fn split(&mut self, line: &str, at: &Where) -> Result<(), VdbError> {
        let mut pieces = Vec::new();
        let (mut depth, mut start) = (0i32, 0);
        for (i, c) in line.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth < 0 {
                        return Err(VdbError::at(at, "')' without a matching '('".into()));
                    }
                }
                ',' if depth == 0 => {
                    pieces.push(&line[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        if depth != 0 {
            return Err(VdbError::at(at, "'(' without a matching ')'".into()));
        }
        // A trailing comma continues the record on the next line: it leaves no empty piece behind.
        if start < line.len() {
            pieces.push(&line[start..]);
        }
        for piece in pieces {
            match param(piece, at) {
                Ok(param) => self.out.params.push(param),
                Err(e) => self.problems.push(e),
            }
        }
        Ok(())
    }
}

/// One `keyword=value` piece of a line.
fn param(piece: &str, at: &Where) -> Result<Param, VdbError> {
    let Some((key, value)) = piece.split_once('=') else {
        let shown = unprotect(piece);
        return Err(VdbError::at(
            at,
            if shown.is_empty() {
                "an empty parameter (two commas in a row?)".to_string()
            } else {
                format!("'{shown}' is not keyword=value")
            },
        ));
    };
    let key = key.trim().to_ascii_lowercase();
    if key.is_empty() {
        return Err(VdbError::at(at, format!("'={}' has no keyword before the '='", unprotect(value))));
    }
    if value.is_empty() {
        return Err(VdbError::keyword(at, &key, None, "no value after the '='".into()));
    }
    Ok(Param { key, value: value.to_string(), at: at.clone() })
}

/// Removes double quotes (protecting what they enclose) and cuts the line at the first blank outside them.
fn protect_and_cut(line: &str) -> Result<String, String> {
    let mut out = String::with_capacity(line.len());
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            c if quoted => out.push(PROTECTED.iter().find(|p| p.0 == c).map_or(c, |p| p.1)),
            ' ' | '\t' => break,
            c => out.push(c),
        }
    }
    if quoted {
        return Err("a double quote is not closed".into());
    }
    Ok(out)
}

/// For tests: the parameters, or the first problem.
#[cfg(test)]
pub(super) fn try_lex(path: &Path, text: &str, vars: &[(String, String)]) -> Result<Lexed, VdbError> {
    let mut problems = Problems::default();
    let lexed = lex(path, text, vars, &mut problems);
    problems.into_first().map_or(Ok(lexed), Err)
}

#[cfg(test)]
mod tests {
    use super::try_lex as lex;
    use super::*;

    fn keys(text: &str) -> Vec<(String, String, usize)> {
        let lexed = lex(Path::new("t.vdb"), text, &[("lun".into(), "/tmp/x".into())]).unwrap();
        lexed
            .params
            .into_iter()
            .map(|p| {
                let Where::Line(_, line) = p.at else { panic!() };
                (p.key, unprotect(&p.value), line)
            })
            .collect()
    }

    #[test]
    fn comments_blanks_and_eof() {
        let text = "* star\n# hash\n/ slash\n\nsd=sd1,lun=/a this is ignored\neof\nwd=wd1\n";
        assert_eq!(keys(text), vec![("sd".into(), "sd1".into(), 5), ("lun".into(), "/a".into(), 5)]);
    }

    #[test]
    fn trailing_comma_continues_and_keys_are_case_insensitive() {
        let got = keys("SD=sd1,\n  LUN=/a,\n  Size=1g\n");
        assert_eq!(got.iter().map(|k| k.0.as_str()).collect::<Vec<_>>(), ["sd", "lun", "size"]);
        assert_eq!(got[2].2, 3);
    }

    #[test]
    fn quotes_protect_blanks_commas_and_dashes() {
        let lexed = lex(Path::new("t"), "fsd=f,anchor=\"/mnt/my dir,x-y\" trailing", &[]).unwrap();
        assert_eq!(lexed.params.len(), 2);
        assert_eq!(unprotect(&lexed.params[1].value), "/mnt/my dir,x-y");
        assert!(lex(Path::new("t"), "fsd=f,anchor=\"/mnt", &[]).unwrap_err().message.contains("quote"));
    }

    #[test]
    fn parentheses_keep_commas_inside_values() {
        let got = keys("wd=wd1,xfersize=(4k,50,8k,50),rdpct=70");
        assert_eq!(got[1], ("xfersize".into(), "(4k,50,8k,50)".into(), 1));
        let err = lex(Path::new("t"), "wd=wd1,xfersize=(4k,50", &[]).unwrap_err();
        assert!(err.message.contains("'('"), "{}", err.message);
    }

    #[test]
    fn variables_are_replaced_and_unknown_ones_are_named() {
        let got = keys("sd=sd1,lun=$lun,size=${lun}");
        assert_eq!(got[1].1, "/tmp/x");
        assert_eq!(got[2].1, "/tmp/x");
        let err = lex(Path::new("t"), "sd=sd1,lun=$disk", &[]).unwrap_err();
        assert!(err.message.contains("$disk") && err.message.contains("--set disk="), "{}", err.message);
    }

    #[test]
    fn includes_are_relative_to_the_including_file_and_cycles_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sds.inc"), "sd=sd1,lun=/a\n").unwrap();
        let main = dir.path().join("main.vdb");
        let lexed = lex(&main, "include=sds.inc\nwd=wd1,sd=sd1\n", &[]).unwrap();
        assert_eq!(lexed.params.len(), 4);
        assert_eq!(lexed.params[0].at, Where::Line(dir.path().join("sds.inc"), 1));

        std::fs::write(dir.path().join("a.inc"), "include=b.inc\n").unwrap();
        std::fs::write(dir.path().join("b.inc"), "include=a.inc\n").unwrap();
        let err = lex(&main, "include=a.inc\n", &[]).unwrap_err();
        assert!(err.message.contains("include cycle"), "{}", err.message);
        let err = lex(&main, "include=missing.inc\n", &[]).unwrap_err();
        assert!(err.message.contains("missing.inc"), "{}", err.message);
    }

    #[test]
    fn include_fan_out_is_capped() {
        // Guards issue 9: ten includes per file over nine levels ran on; at most 64 include files are read, even
        // when the chain stays within the depth cap.
        let dir = tempfile::tempdir().unwrap();
        for level in 0..6 {
            let body = format!("include=l{}.inc\n", level + 1).repeat(10);
            std::fs::write(dir.path().join(format!("l{level}.inc")), body).unwrap();
        }
        std::fs::write(dir.path().join("l6.inc"), "sd=sd1,lun=/a\n").unwrap();
        let main = dir.path().join("main.vdb");
        let err = lex(&main, &"include=l0.inc\n".repeat(10), &[]).unwrap_err();
        assert!(err.message.contains("more than 64 files"), "{}", err.message);
    }

    #[test]
    fn a_parameter_without_equals_is_refused() {
        let err = lex(Path::new("t"), "sd=sd1,lun", &[]).unwrap_err();
        assert!(err.message.contains("keyword=value"), "{}", err.message);
        // Prose before any rd, or in a record a comma continues, is still an error.
        assert!(
            lex(
                Path::new("t"),
                "sd=sd1,lun=/x
This is prose
rd=rd1
",
                &[]
            )
            .is_err()
        );
        assert!(
            lex(
                Path::new("t"),
                "sd=sd1,lun=/x
rd=rd1,
elapsed
",
                &[]
            )
            .is_err()
        );
    }

    #[test]
    fn free_text_after_the_last_rd_ends_the_file() {
        // Issue 29: vdbench's own example files end with prose after their rds; streamcap stopped at it.
        let text = "sd=sd1,lun=/x
wd=wd1,sd=sd1
rd=rd1,wd=wd1,
  elapsed=10

This example runs one rd, = and all.
rd=ignored
";
        let lexed = try_lex(Path::new("t"), text, &[]).unwrap();
        assert_eq!(lexed.text_after_rds, Some(Where::Line(PathBuf::from("t"), 6)));
        assert!(lexed.params.iter().all(|p| p.value != "ignored"), "nothing after the text is read");
        assert!(lexed.params.iter().any(|p| p.key == "elapsed"), "a continued record is read whole");
    }
}
