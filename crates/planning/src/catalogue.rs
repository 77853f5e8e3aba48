//! The drive catalogue: a small TOML file of drive models (`[[drive]]` tables) with capacity, price, sequential
//! rates and what random operations cost. Parses text only (the app reads the file); every error names the
//! line and the key at fault and says what is expected. The keys are listed in docs/planning.md ("The drive
//! catalogue"); examples/drives.toml is a sample.
//!
//! ```toml
//! currency = "USD"
//! [[drive]]
//! name = "mg10-20tb"
//! product = "Toshiba MG10 20TB (MG10ACA20TE)"
//! capacity = "20TB"
//! price = 380
//! read = "281MB/s"
//! write = "281MB/s"
//! rotational = true
//! rpm = 7200
//! seek_time = "7.4ms"
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::drive::{Drive, DriveCache, Price, RandomCost};
use crate::units::{ByteRate, Bytes, parse_duration};

/// A catalogue that cannot be used: where, which key, what is wrong and what to write instead.
#[derive(Debug, thiserror::Error)]
#[error("{}{}{}: {message}", path.display(), line.map(|l| format!(": line {l}")).unwrap_or_default(), key.as_ref().map(|k| format!(", key `{k}`")).unwrap_or_default())]
pub struct CatalogueError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

type Value = Spanned<toml::Value>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogueFile {
    currency: Option<Value>,
    #[serde(default)]
    drive: Vec<Spanned<Entry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: Option<Value>,
    product: Option<Value>,
    source: Option<Value>,
    capacity: Option<Value>,
    price: Option<Value>,
    currency: Option<Value>,
    read: Option<Value>,
    write: Option<Value>,
    rotational: Option<Value>,
    rpm: Option<Value>,
    seek_time: Option<Value>,
    write_seek_time: Option<Value>,
    access_time: Option<Value>,
    write_access_time: Option<Value>,
    random_read_iops: Option<Value>,
    random_read_iops_qd1: Option<Value>,
    random_write_iops: Option<Value>,
    max_request: Option<Value>,
    merges: Option<Value>,
    cache: Option<Value>,
    cache_read: Option<Value>,
    cache_read_iops: Option<Value>,
}

/// Reads the drives of a catalogue; `path` is used in messages.
pub fn parse_catalogue(path: &Path, text: &str) -> Result<Vec<Drive>, CatalogueError> {
    let reader = Reader { path, text };
    let file: CatalogueFile = toml::from_str(text).map_err(|e| reader.toml_error(&e))?;
    if file.drive.is_empty() {
        return Err(reader.error(
            None,
            None,
            "no [[drive]] tables: describe at least one drive (see examples/drives.toml)",
        ));
    }
    let currency = file.currency.as_ref().map(|c| reader.string(c, "currency")).transpose()?;
    let mut drives: Vec<Drive> = Vec::new();
    for entry in &file.drive {
        let drive = reader.drive(entry, currency.as_deref())?;
        if drives.iter().any(|d| d.name == drive.name) {
            let line = reader.line(entry.span().start);
            return Err(reader.error(
                Some(line),
                Some("name"),
                &format!("a second drive is named '{}': names must differ", drive.name),
            ));
        }
        drives.push(drive);
    }
    Ok(drives)
}

struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Reader<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].matches('\n').count() + 1
    }

    fn error(&self, line: Option<usize>, key: Option<&str>, message: &str) -> CatalogueError {
        CatalogueError { path: self.path.into(), line, key: key.map(str::to_string), message: message.into() }
    }

    fn toml_error(&self, e: &toml::de::Error) -> CatalogueError {
        let message = e.message().trim().to_string();
        let line = e.span().map(|s| self.line(s.start));
        // serde names the key in backticks ("missing field `capacity`", "unknown field `bz`"); otherwise the key is
        // the one written on the line at fault.
        let key = message.split('`').nth(1).map(str::to_string).or_else(|| {
            let text = self.text.lines().nth(line? - 1)?;
            text.split_once('=').map(|(k, _)| k.trim().to_string()).filter(|k| !k.is_empty() && !k.starts_with('['))
        });
        CatalogueError { path: self.path.into(), line, key, message }
    }

    fn bad(&self, value: &Value, key: &str, expected: &str) -> CatalogueError {
        self.error(Some(self.line(value.span().start)), Some(key), &format!("{} is not {expected}", value.get_ref()))
    }

    fn string(&self, value: &Value, key: &str) -> Result<String, CatalogueError> {
        match value.get_ref() {
            toml::Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            _ => Err(self.bad(value, key, "a non-empty string")),
        }
    }

    fn number(&self, value: &Value, key: &str) -> Result<f64, CatalogueError> {
        let n = match value.get_ref() {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) => *f,
            _ => return Err(self.bad(value, key, "a number")),
        };
        if n.is_finite() && n > 0.0 { Ok(n) } else { Err(self.bad(value, key, "a number above 0")) }
    }

    fn bool(&self, value: &Value, key: &str) -> Result<bool, CatalogueError> {
        value.get_ref().as_bool().ok_or_else(|| self.bad(value, key, "true or false"))
    }

    fn bytes(&self, value: &Value, key: &str) -> Result<Bytes, CatalogueError> {
        let parsed = match value.get_ref() {
            toml::Value::String(s) => Bytes::parse(s).ok(),
            toml::Value::Integer(i) if *i > 0 => Some(Bytes(*i as u64)),
            _ => None,
        };
        parsed.filter(|b| b.0 > 0).ok_or_else(|| self.bad(value, key, "a size such as \"8TB\" or \"512k\""))
    }

    fn rate(&self, value: &Value, key: &str) -> Result<ByteRate, CatalogueError> {
        let parsed = match value.get_ref() {
            toml::Value::String(s) => ByteRate::parse(s).ok(),
            _ => None,
        };
        parsed.ok_or_else(|| self.bad(value, key, "a rate such as \"250MB/s\""))
    }

    fn duration(&self, value: &Value, key: &str) -> Result<Duration, CatalogueError> {
        let parsed = match value.get_ref() {
            toml::Value::String(s) => parse_duration(s).ok(),
            _ => None,
        };
        parsed.filter(|d| !d.is_zero()).ok_or_else(|| self.bad(value, key, "a duration such as \"8.5ms\""))
    }

    fn price(&self, value: &Value, currency: Option<&str>) -> Result<Price, CatalogueError> {
        let with_code = |amount: f64, code: &str| Price { amount, currency: code.to_ascii_uppercase() };
        match value.get_ref() {
            toml::Value::Integer(_) | toml::Value::Float(_) => {
                let amount = self.number(value, "price")?;
                let code = currency.ok_or_else(|| {
                    self.bad(value, "price", "a price with a currency: write \"389 USD\", or set currency = \"USD\"")
                })?;
                Ok(with_code(amount, code))
            }
            toml::Value::String(s) => parse_price(s)
                .map(|(amount, code)| with_code(amount, &code))
                .ok_or_else(|| self.bad(value, "price", "a price such as \"389 USD\" or 389")),
            _ => Err(self.bad(value, "price", "a price such as \"389 USD\" or 389")),
        }
    }
}

/// "389 USD", "389.50 EUR", "$389", "€389": the amount and the currency code.
pub fn parse_price(text: &str) -> Option<(f64, String)> {
    let t = text.trim();
    let (symbol, rest) = match t.chars().next()? {
        '$' => (Some("USD"), &t[1..]),
        '€' => (Some("EUR"), &t['€'.len_utf8()..]),
        '£' => (Some("GBP"), &t['£'.len_utf8()..]),
        _ => (None, t),
    };
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let amount: f64 = rest[..end].parse().ok().filter(|a: &f64| a.is_finite() && *a >= 0.0)?;
    let code = rest[end..].trim();
    match (symbol, code) {
        (Some(s), "") => Some((amount, s.to_string())),
        (None, c) if (2..=4).contains(&c.len()) && c.chars().all(|x| x.is_ascii_alphabetic()) => {
            Some((amount, c.to_string()))
        }
        _ => None,
    }
}

impl Reader<'_> {
    fn required<'v>(
        &self,
        entry: &Spanned<Entry>,
        value: &'v Option<Value>,
        key: &str,
    ) -> Result<&'v Value, CatalogueError> {
        value.as_ref().ok_or_else(|| {
            let line = self.line(entry.span().start);
            self.error(
                Some(line),
                Some(key),
                &format!("this [[drive]] has no `{key}`; every drive needs name, capacity, read, write and rotational"),
            )
        })
    }

    fn drive(&self, spanned: &Spanned<Entry>, currency: Option<&str>) -> Result<Drive, CatalogueError> {
        let e = spanned.get_ref();
        let name = self.string(self.required(spanned, &e.name, "name")?, "name")?;
        let drive_currency = e.currency.as_ref().map(|c| self.string(c, "currency")).transpose()?;
        let read = self.rate(self.required(spanned, &e.read, "read")?, "read")?;
        let write = self.rate(self.required(spanned, &e.write, "write")?, "write")?;
        let rotational = self.bool(self.required(spanned, &e.rotational, "rotational")?, "rotational")?;
        let random = self.random_cost(spanned, rotational, read)?;
        Ok(Drive {
            product: e.product.as_ref().map(|p| self.string(p, "product")).transpose()?.unwrap_or_else(|| name.clone()),
            source: e
                .source
                .as_ref()
                .map(|s| self.string(s, "source"))
                .transpose()?
                .unwrap_or_else(|| format!("catalogue {}", self.path.display())),
            capacity: self.bytes(self.required(spanned, &e.capacity, "capacity")?, "capacity")?,
            price: e.price.as_ref().map(|p| self.price(p, drive_currency.as_deref().or(currency))).transpose()?,
            read,
            write,
            rotational,
            random,
            max_request: e.max_request.as_ref().map(|m| self.bytes(m, "max_request")).transpose()?,
            merges: e.merges.as_ref().map(|m| self.bool(m, "merges")).transpose()?.unwrap_or(true),
            cache: self.cache(spanned)?,
            name,
        })
    }

    /// `cache`, `cache_read` and `cache_read_iops`: all three or none.
    fn cache(&self, spanned: &Spanned<Entry>) -> Result<Option<DriveCache>, CatalogueError> {
        let e = spanned.get_ref();
        match (&e.cache, &e.cache_read, &e.cache_read_iops) {
            (None, None, None) => Ok(None),
            (Some(size), Some(read), Some(iops)) => Ok(Some(DriveCache {
                size: self.bytes(size, "cache")?,
                read: self.rate(read, "cache_read")?,
                read_iops: self.number(iops, "cache_read_iops")?,
            })),
            _ => Err(self.error(
                Some(self.line(spanned.span().start)),
                Some("cache"),
                "a drive's cache needs all of cache (its size), cache_read (MB/s) and cache_read_iops",
            )),
        }
    }

    fn random_cost(
        &self,
        spanned: &Spanned<Entry>,
        rotational: bool,
        read: ByteRate,
    ) -> Result<RandomCost, CatalogueError> {
        let e = spanned.get_ref();
        let number = |v: &Option<Value>, key| v.as_ref().map(|v| self.number(v, key)).transpose();
        let duration = |v: &Option<Value>, key| v.as_ref().map(|v| self.duration(v, key)).transpose();
        let iops = number(&e.random_read_iops, "random_read_iops")?;
        let iops_qd1 = number(&e.random_read_iops_qd1, "random_read_iops_qd1")?;
        let write_iops = number(&e.random_write_iops, "random_write_iops")?;
        if !rotational {
            let read_iops = iops.ok_or_else(|| {
                let line = self.line(spanned.span().start);
                self.error(Some(line), Some("random_read_iops"), "a drive that is not rotational needs random_read_iops (the datasheet's 4 KiB figure at a deep queue)")
            })?;
            return Ok(RandomCost::OpLimit {
                read_iops,
                write_iops: write_iops.unwrap_or(read_iops),
                read_iops_qd1: iops_qd1,
            });
        }
        // The access time of one 4 KiB read at `iops`: what remains of 1 ÷ IOPS after the transfer.
        let from_iops = |i: f64| Duration::from_secs_f64((1.0 / i - 4096.0 / read.bytes_per_sec()).max(1e-6));
        let half_turn = number(&e.rpm, "rpm")?.map(|rpm| Duration::from_secs_f64(30.0 / rpm));
        let seek = duration(&e.seek_time, "seek_time")?;
        let write_seek = duration(&e.write_seek_time, "write_seek_time")?.or(seek);
        let access = duration(&e.access_time, "access_time")?;
        let read_access = match (access, seek, half_turn, iops_qd1.or(iops)) {
            (Some(a), ..) => a,
            (None, Some(s), Some(h), _) => s + h,
            (None, None, _, Some(i)) | (None, Some(_), None, Some(i)) => from_iops(i),
            _ => {
                let line = self.line(spanned.span().start);
                return Err(self.error(
                    Some(line),
                    Some("access_time"),
                    "a rotational drive needs access_time, or seek_time and rpm, or random_read_iops",
                ));
            }
        };
        let write_access = match (duration(&e.write_access_time, "write_access_time")?, write_seek, half_turn) {
            (Some(a), ..) => a,
            (None, Some(s), Some(h)) if access.is_none() => s + h,
            _ => read_access,
        };
        let read_loaded = match (iops, iops_qd1) {
            (Some(i), _) if access.is_some() || seek.is_some() || iops_qd1.is_some() => from_iops(i),
            _ => read_access,
        };
        let revolution = half_turn.map_or(super::drive::REVOLUTION_7200, |h| h * 2);
        Ok(RandomCost::Positioning { read: read_access, write: write_access, read_loaded, revolution })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Drive>, CatalogueError> {
        parse_catalogue(Path::new("d.toml"), text)
    }

    const GOOD: &str = r#"
currency = "USD"

[[drive]]
name = "disk"
capacity = "8TB"
price = 160
read = "250MB/s"
write = "240MB/s"
rotational = true
rpm = 7200
seek_time = "8.5ms"

[[drive]]
name = "ssd"
capacity = "4TB"
price = "300 EUR"
read = "560MB/s"
write = "530MB/s"
rotational = false
random_read_iops = 98000
random_read_iops_qd1 = 13000
"#;

    #[test]
    fn a_catalogue_gives_drives_with_their_access_times() {
        let drives = parse(GOOD).unwrap();
        assert_eq!(drives.len(), 2);
        assert_eq!(drives[0].capacity, Bytes(8_000_000_000_000));
        assert_eq!(drives[0].price, Some(Price { amount: 160.0, currency: "USD".into() }));
        let RandomCost::Positioning { read, .. } = drives[0].random else { panic!() };
        // 8.5 ms + half a turn at 7200 rpm (4.17 ms).
        assert!((read.as_secs_f64() - 0.0126667).abs() < 1e-6, "{read:?}");
        assert_eq!(drives[1].price.as_ref().unwrap().currency, "EUR");
        assert!(matches!(drives[1].random, RandomCost::OpLimit { read_iops: 98000.0, write_iops: 98000.0, .. }));
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let bad_value = GOOD.replace("capacity = \"4TB\"", "capacity = \"4XB\"");
        let e = parse(&bad_value).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (Some(16), Some("capacity")), "{e}");
        assert!(e.to_string().starts_with("d.toml: line 16, key `capacity`: "), "{e}");

        let unknown = GOOD.replace("rpm = 7200", "rmp = 7200");
        let e = parse(&unknown).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (Some(11), Some("rmp")), "{e}");

        let missing = GOOD.replace("read = \"250MB/s\"\n", "");
        let e = parse(&missing).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (Some(4), Some("read")), "{e}");

        let syntax = GOOD.replace("price = 160", "price = ");
        let e = parse(&syntax).unwrap_err();
        assert_eq!(e.line, Some(7), "{e}");

        let no_iops = GOOD.replace("random_read_iops = 98000\n", "");
        assert_eq!(parse(&no_iops).unwrap_err().key.as_deref(), Some("random_read_iops"));
        let no_currency = GOOD.replace("currency = \"USD\"\n", "");
        assert!(parse(&no_currency).unwrap_err().to_string().contains("389 USD"));
    }

    #[test]
    fn prices_read_codes_and_symbols() {
        assert_eq!(parse_price("389 USD"), Some((389.0, "USD".into())));
        assert_eq!(parse_price("€389.5"), Some((389.5, "EUR".into())));
        assert_eq!(parse_price("389 dollars"), None);
    }

    #[test]
    fn a_drive_cache_needs_its_size_rate_and_iops() {
        let cached = GOOD
            .replace("rpm = 7200", "rpm = 7200\ncache = \"32GB\"\ncache_read = \"500MB/s\"\ncache_read_iops = 20000");
        let drive = &parse(&cached).unwrap()[0];
        let cache = drive.cache.unwrap();
        assert_eq!((cache.size, cache.read_iops), (Bytes(32_000_000_000), 20000.0));
        assert_eq!(parse(GOOD).unwrap()[0].cache, None);
        let half = GOOD.replace("rpm = 7200", "rpm = 7200\ncache = \"32GB\"");
        assert!(parse(&half).unwrap_err().to_string().contains("cache_read_iops"));
    }
}
