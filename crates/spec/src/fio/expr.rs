//! fio's arithmetic in option values: `size=(4*1024)m`, `runtime=(2*30)`, `size=8*$mb_memory` (after the reader
//! put the number of megabytes in place of `$mb_memory`).
//!
//! The rules are fio's expression parser's (exp/expression-parser.y): `+ - * / % ^`, unary minus, parentheses,
//! decimal, fractional and `0x` numbers, and a unit suffix after a number or a parenthesised group (`1024m`,
//! `(2+2)k`), which binds tighter than any operator. Arithmetic on whole numbers stays whole (`7/2` is 3, as in
//! fio); a fraction anywhere makes the result a fraction, truncated toward zero where a whole number is needed.
//! Which suffixes exist and what they multiply by is the caller's (sizes and times differ); this file knows no
//! units. It must not read options or print anything.

/// A number as fio's parser keeps it: whole, or a fraction once one took part.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Num {
    whole: i128,
    frac: f64,
    is_frac: bool,
}

impl Num {
    fn whole(v: i128) -> Num {
        Num { whole: v, frac: v as f64, is_frac: false }
    }

    fn frac(v: f64) -> Num {
        Num { whole: v as i128, frac: v, is_frac: true }
    }

    fn value(self) -> f64 {
        if self.is_frac { self.frac } else { self.whole as f64 }
    }
}

/// Whether `text` holds arithmetic (an operator between operands, or a leading parenthesis). A leading `-` alone
/// is a sign, and `%` after a number is a percentage: neither counts.
pub fn looks_like_arithmetic(text: &str) -> bool {
    let text = text.trim();
    if text.starts_with('(') {
        return true;
    }
    let body = text.strip_prefix('-').unwrap_or(text);
    body.contains(['*', '/', '+', '^']) || body.trim_end_matches('%').contains('%') || body.contains('-')
}

/// Evaluates `text`; `unit` maps a suffix (already lower-cased) to its multiplier, or `None` if it is not one. As in
/// fio, when no suffix appears anywhere the result is in the option's default unit, which the caller applies:
/// `units_used` says whether one did.
pub fn evaluate_with_units(text: &str, unit: &dyn Fn(&str) -> Option<f64>) -> Result<(f64, bool), String> {
    let mut parser = Parser { text: text.as_bytes(), at: 0, unit, units_used: false, depth: 0 };
    let value = parser.sum()?;
    parser.skip_blanks();
    if parser.at < parser.text.len() {
        return Err(format!("unexpected '{}' in the expression '{text}'", &text[parser.at..]));
    }
    let v = value.value();
    if !v.is_finite() {
        return Err(format!("the expression '{text}' has no finite value"));
    }
    Ok((v, parser.units_used))
}

/// [`evaluate_with_units`] where a bare number already is in the result's unit (sizes: bytes).
pub fn evaluate(text: &str, unit: &dyn Fn(&str) -> Option<f64>) -> Result<f64, String> {
    evaluate_with_units(text, unit).map(|(v, _)| v)
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
    unit: &'a dyn Fn(&str) -> Option<f64>,
    units_used: bool,
    /// Levels of `(`, unary `-` and `^` being parsed: each is a call, so it is capped (`limits::MAX_NESTING`).
    depth: usize,
}

impl Parser<'_> {
    /// Runs `inner` one level deeper, refusing to go past `limits::MAX_NESTING`.
    fn nested(&mut self, inner: impl FnOnce(&mut Self) -> Result<Num, String>) -> Result<Num, String> {
        if self.depth >= crate::limits::MAX_NESTING {
            return Err(format!(
                "the expression nests more than {} levels deep (parentheses, signs or powers): simplify it",
                crate::limits::MAX_NESTING
            ));
        }
        self.depth += 1;
        let value = inner(self);
        self.depth -= 1;
        value
    }

    fn skip_blanks(&mut self) {
        while self.at < self.text.len() && self.text[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_blanks();
        self.text.get(self.at).copied()
    }

    fn sum(&mut self) -> Result<Num, String> {
        let mut left = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.at += 1;
            let right = self.product()?;
            left = combine(left, right, |a, b| a.checked_add(b), |a, b| a + b, op == b'-')?;
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Num, String> {
        let mut left = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.at += 1;
            let right = self.power()?;
            left = match op {
                b'*' => combine(left, right, |a, b| a.checked_mul(b), |a, b| a * b, false)?,
                b'/' => divide(left, right)?,
                _ => modulo(left, right)?,
            };
        }
        Ok(left)
    }

    fn power(&mut self) -> Result<Num, String> {
        let base = self.unary()?;
        if self.peek() != Some(b'^') {
            return Ok(base);
        }
        self.at += 1;
        let exponent = self.nested(Self::power)?;
        if !base.is_frac && !exponent.is_frac && (0..=127).contains(&exponent.whole) {
            let whole = base.whole.checked_pow(exponent.whole as u32).ok_or("a power is too large")?;
            return Ok(Num::whole(whole));
        }
        Ok(Num::frac(base.value().powf(exponent.value())))
    }

    fn unary(&mut self) -> Result<Num, String> {
        if self.peek() == Some(b'-') {
            self.at += 1;
            return negated(self.nested(Self::unary)?);
        }
        let value = self.primary()?;
        self.suffix(value)
    }

    fn primary(&mut self) -> Result<Num, String> {
        match self.peek() {
            Some(b'(') => {
                self.at += 1;
                let inner = self.nested(Self::sum)?;
                if self.peek() != Some(b')') {
                    return Err("a '(' without its ')'".into());
                }
                self.at += 1;
                Ok(inner)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            Some(c) => Err(format!("expected a number, found '{}'", c as char)),
            None => Err("the expression ends where a number was expected".into()),
        }
    }

    fn number(&mut self) -> Result<Num, String> {
        let rest = &self.text[self.at..];
        if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
            let digits = rest[2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            let hex = std::str::from_utf8(&rest[2..2 + digits]).expect("ASCII hex digits");
            let v = i128::from_str_radix(hex, 16).map_err(|_| format!("'0x{hex}' is not a number"))?;
            self.at += 2 + digits;
            return Ok(Num::whole(v));
        }
        let len = rest.iter().take_while(|c| c.is_ascii_digit() || **c == b'.').count();
        let digits = std::str::from_utf8(&rest[..len]).expect("ASCII digits");
        self.at += len;
        if digits.contains('.') {
            return digits.parse::<f64>().map(Num::frac).map_err(|_| format!("'{digits}' is not a number"));
        }
        digits.parse::<i128>().map(Num::whole).map_err(|_| format!("'{digits}' is too large"))
    }

    /// A unit suffix right after a number or a group: the longest run of letters that the caller knows.
    fn suffix(&mut self, value: Num) -> Result<Num, String> {
        let start = self.at;
        let letters = self.text[start..].iter().take_while(|c| c.is_ascii_alphabetic()).count();
        if letters == 0 {
            return Ok(value);
        }
        let word = std::str::from_utf8(&self.text[start..start + letters]).expect("ASCII letters").to_ascii_lowercase();
        let multiplier = (self.unit)(&word).ok_or_else(|| format!("'{word}' is not a unit here"))?;
        self.at += letters;
        self.units_used = true;
        if multiplier.fract() == 0.0 && !value.is_frac && multiplier < 1e30 {
            let whole = value.whole.checked_mul(multiplier as i128).ok_or("the value is too large")?;
            return Ok(Num::whole(whole));
        }
        Ok(Num::frac(value.value() * multiplier))
    }
}

/// `-v`; the most negative whole number has no opposite (found by the fio_job fuzzer).
fn negated(v: Num) -> Result<Num, String> {
    let whole = v.whole.checked_neg().ok_or("the value is too large")?;
    Ok(Num { whole, frac: -v.frac, is_frac: v.is_frac })
}

fn combine(
    a: Num,
    b: Num,
    whole: impl Fn(i128, i128) -> Option<i128>,
    frac: impl Fn(f64, f64) -> f64,
    negate_b: bool,
) -> Result<Num, String> {
    let b = if negate_b { negated(b)? } else { b };
    if a.is_frac || b.is_frac {
        return Ok(Num::frac(frac(a.value(), b.value())));
    }
    whole(a.whole, b.whole).map(Num::whole).ok_or_else(|| "the value is too large".into())
}

fn divide(a: Num, b: Num) -> Result<Num, String> {
    if b.value() == 0.0 {
        return Err("division by zero".into());
    }
    if a.is_frac || b.is_frac {
        return Ok(Num::frac(a.value() / b.value()));
    }
    Ok(Num::whole(a.whole / b.whole))
}

fn modulo(a: Num, b: Num) -> Result<Num, String> {
    if a.is_frac || b.is_frac {
        return Err("'%' needs whole numbers".into());
    }
    if b.whole == 0 {
        return Err("division by zero".into());
    }
    Ok(Num::whole(a.whole % b.whole))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(word: &str) -> Option<f64> {
        Some(match word {
            "k" | "kb" => 1024.0,
            "m" | "mb" => 1048576.0,
            "g" | "gb" => 1073741824.0,
            _ => return None,
        })
    }

    fn eval(text: &str) -> Result<f64, String> {
        evaluate(text, &sizes)
    }

    #[test]
    fn precedence_parentheses_and_suffixes() {
        assert_eq!(eval("4*1024m"), Ok(4.0 * 1024.0 * 1048576.0), "the suffix binds to 1024");
        assert_eq!(eval("(4*1024)m"), Ok(4.0 * 1024.0 * 1048576.0));
        assert_eq!(eval("1+2*3"), Ok(7.0));
        assert_eq!(eval("(1+2)*3"), Ok(9.0));
        assert_eq!(eval("2^3^2"), Ok(512.0), "powers associate to the right");
        assert_eq!(eval("-4+10"), Ok(6.0));
        assert_eq!(eval("10-4-3"), Ok(3.0), "minus associates to the left");
        assert_eq!(eval(" 0x10 * 2k "), Ok(32768.0));
        assert_eq!(eval("(2+2)k"), Ok(4096.0));
    }

    #[test]
    fn whole_numbers_divide_as_whole_numbers_and_fractions_spread() {
        assert_eq!(eval("7/2"), Ok(3.0), "as in fio");
        assert_eq!(eval("7.0/2"), Ok(3.5));
        assert_eq!(eval("1.5k"), Ok(1536.0));
        assert_eq!(eval("7%4"), Ok(3.0));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(eval("4/0").unwrap_err().contains("division by zero"));
        assert!(eval("(4*2").unwrap_err().contains("')'"));
        assert!(eval("4q").unwrap_err().contains("'q'"));
        assert!(eval("4*").unwrap_err().contains("ends"));
        assert!(eval("4 4").unwrap_err().contains("unexpected"));
        assert!(eval("1.5%2").is_err());
        assert!(eval("99999999999999999999*99999999999999999999g").is_err());
        // Regression (fio_job fuzzer): negating the most negative whole number overflowed.
        let min = "(0-170141183460469231731687303715884105727-1)";
        assert!(eval(&format!("1-{min}")).unwrap_err().contains("too large"));
        assert!(eval(&format!("-{min}")).unwrap_err().contains("too large"));
        assert!(eval(min).is_ok());
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        // Guards issue 25: `size=((((…1…))))` of 200,000 levels overflowed the stack (an abort, not a message).
        let deep = |n: usize, open: &str, close: &str| format!("{}1{}", open.repeat(n), close.repeat(n));
        for text in [deep(200_000, "(", ")"), deep(200_000, "-", ""), format!("2{}", "^2".repeat(200_000))] {
            assert!(eval(&text).unwrap_err().contains("nests more than 64 levels"), "{}", &text[..20]);
        }
        assert_eq!(eval(&deep(64, "(", ")")), Ok(1.0));
        assert_eq!(eval(&deep(64, "-", "")), Ok(1.0));
    }

    #[test]
    fn arithmetic_is_told_apart_from_signs_percentages_and_plain_numbers() {
        for yes in ["4*1024m", "(4k)", "8*192", "1g+4k", "2^10", "4k-512"] {
            assert!(looks_like_arithmetic(yes), "{yes}");
        }
        for no in ["4k", "-8k", "50%", "0x1000", "1.5g"] {
            assert!(!looks_like_arithmetic(no), "{no}");
        }
    }
}
