//! The HTML reports as a person sees them: headless Chromium (Debian's `chromium`, installed by scripts/test)
//! opens the report of a fixture of each kind (run, streams, check, sweep, cache) and of two comparisons (two
//! runs of one job, two fixed-count streams runs), driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: fd 3 in, fd 4 out). For each page the test reads every network request the page
//! made (`Network.requestWillBeSent`: only the file itself may appear), every console message, exception and
//! browser log entry (none may be an error), and, in the page, each chart: a non-empty SVG with as many drawn
//! series as it declares, and the number the result calls for, and the labels of its marks (cliff, RAM), each
//! drawn inside the plot; and, measured in the page, that no two texts of a chart (ticks, axis titles, mark
//! labels) overlap and that each axis has at least three ticks. It checks that dark and print styles apply, and takes a screenshot (kept under
//! docs/screenshots/ with UPDATE_SCREENSHOTS=1). Control pages prove the detectors work: one that fetches from a
//! closed loopback port and one that logs an error.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use common::streamcap;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        let out = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output().ok()?;
        out.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    })
}

/// One headless Chromium, spoken to over the DevTools pipe.
struct Browser {
    child: Child,
    to: ChildStdin,
    from: Receiver<Value>,
    next: u64,
    /// Events not yet looked at.
    events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start(binary: &Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        // The shell hands our pipes to Chromium as fds 3 (commands in) and 4 (replies out).
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg(binary)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            // Chromium makes its singleton socket's directory under TMPDIR: in the profile, so that it goes too
            // (each run left two org.chromium.Chromium.* directories in /tmp).
            .env("TMPDIR", profile.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            // A process group of its own: Chromium's renderer, GPU and utility processes are in it, so the drop
            // can end them all (see `Drop`).
            .process_group(0)
            .spawn()
            .expect("chromium starts");
        let to = child.stdin.take().unwrap();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let (tx, from) = channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            while reader.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                buf.pop();
                if let Ok(v) = serde_json::from_slice::<Value>(&buf)
                    && tx.send(v).is_err()
                {
                    break;
                }
                buf.clear();
            }
        });
        Browser { child, to, from, next: 0, events: Vec::new(), _profile: profile }
    }

    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        loop {
            let v = self.from.recv_timeout(WAIT).unwrap_or_else(|_| panic!("no reply to {method}"));
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    fn wait_for(&mut self, method: &str) {
        if self.events.iter().any(|e| e["method"] == method) {
            return;
        }
        loop {
            let v = self.from.recv_timeout(WAIT).unwrap_or_else(|_| panic!("no {method}"));
            let done = v["method"] == method;
            self.events.push(v);
            if done {
                return;
            }
        }
    }
}

/// Chromium asked to close (`Browser.close`), then its whole process group killed, and waited for until none of
/// it is left, before the profile directory goes: killing the browser process alone left its children writing
/// into the profile while the directory was removed, and the profile stayed in /tmp (twice in a loaded slow tier).
impl Drop for Browser {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = self.to.write_all(b"{\"id\":0,\"method\":\"Browser.close\"}\0");
        wait_while(|| matches!(self.child.try_wait(), Ok(None)));
        let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        let _ = self.child.wait();
        // The group's other processes are not our children: `kill -0` says whether any is left.
        wait_while(|| {
            Command::new("kill").args(["-0", "--", &group]).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
        });
    }
}

/// Polls `busy` every 50 ms while it holds, for at most 5 s.
fn wait_while(mut busy: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline && busy() {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a page did and showed.
struct Visit {
    /// URLs requested, other than the page itself.
    requests: Vec<String>,
    /// Console errors, exceptions and error log entries.
    errors: Vec<String>,
    /// (id, declared series, drawn series, has geometry, labels of the drawn marks) for each chart.
    charts: Vec<Chart>,
    /// (id, y-axis ticks, x-axis ticks, overlapping texts) for each chart, as laid out on screen.
    layout: Vec<Layout>,
    /// Body background in light, dark and print.
    backgrounds: [String; 3],
    png: Vec<u8>,
}

type Chart = (String, u64, u64, bool, Vec<String>);

type Layout = (String, u64, u64, Vec<String>);

/// Per chart, as drawn: the tick labels of each axis (y labels end at the axis, x labels centre on their tick),
/// and every pair of its texts (ticks, axis titles, mark labels) whose boxes overlap by more than a pixel each way,
/// and every mark label (a bound, an answer) drawn over data points.
const LAYOUT_JS: &str = r#"JSON.stringify([...document.querySelectorAll('figure.chart')].map(f => {
  const svg = f.querySelector('svg.plot');
  const ticks = [...svg.querySelectorAll('text.tick')];
  const y = ticks.filter(t => t.getAttribute('text-anchor') === 'end').length;
  const x = ticks.filter(t => t.getAttribute('text-anchor') === 'middle').length;
  const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim() !== '').map(t => [t.textContent, t.getBoundingClientRect()]);
  const overlaps = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const [a, ra] = texts[i], [b, rb] = texts[j];
    const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
    const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
    if (w > 1 && h > 1) overlaps.push(a + ' / ' + b);
  }
  const points = [...svg.querySelectorAll('.series circle')].map(c => c.getBoundingClientRect());
  for (const t of svg.querySelectorAll('text.marklabel')) {
    const r = t.getBoundingClientRect();
    const under = points.filter(p => Math.min(r.right, p.right) - Math.max(r.left, p.left) > 1 && Math.min(r.bottom, p.bottom) - Math.max(r.top, p.top) > 1).length;
    if (under > 0) overlaps.push(t.textContent + ' over ' + under + ' data points');
  }
  return [f.id, y, x, overlaps];
}))"#;

/// Per chart: a mark counts when its line has a size on screen and its label is inside the plot's box.
const CHARTS_JS: &str = r#"JSON.stringify([...document.querySelectorAll('figure.chart')].map(f => {
  const svg = f.querySelector('svg.plot');
  const series = [...svg.querySelectorAll('.series')];
  const drawn = series.filter(s => s.tagName === 'g' ? s.querySelectorAll('circle').length > 0 : (s.getAttribute('d') || '').length > 2);
  const box = svg.getBoundingClientRect();
  const lines = [...svg.querySelectorAll('line.mark')].filter(l => { const b = l.getBoundingClientRect(); return b.width > 0 || b.height > 0; });
  const inside = t => { const b = t.getBoundingClientRect(); return b.width > 0 && b.left >= box.left - 1 && b.right <= box.right + 1; };
  const labels = [...svg.querySelectorAll('text.marklabel')].filter(inside).map(t => t.textContent);
  return [f.id, Number(svg.dataset.series), drawn.length, box.width > 100 && box.height > 50, lines.length === labels.length ? labels : ['mismatch: ' + lines.length + ' lines']];
}))"#;

fn visit(browser: &mut Browser, page: &Path, shot: (u32, u32)) -> Visit {
    let target = browser.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
    let attached =
        browser.call(None, "Target.attachToTarget", json!({ "targetId": target["targetId"], "flatten": true }));
    let session = attached["sessionId"].as_str().unwrap().to_string();
    let s = Some(session.as_str());
    for domain in ["Page.enable", "Runtime.enable", "Log.enable", "Network.enable"] {
        browser.call(s, domain, json!({}));
    }
    browser.call(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": shot.0, "height": shot.1, "deviceScaleFactor": 1, "mobile": false }),
    );
    browser.events.clear();
    let url = format!("file://{}", page.display());
    browser.call(s, "Page.navigate", json!({ "url": url }));
    browser.wait_for("Page.loadEventFired");
    let eval = |b: &mut Browser, expr: &str| {
        b.call(s, "Runtime.evaluate", json!({ "expression": expr, "returnByValue": true }))["result"]["value"].clone()
    };
    let charts: Vec<Chart> = serde_json::from_str(eval(browser, CHARTS_JS).as_str().unwrap()).unwrap();
    let layout: Vec<Layout> = serde_json::from_str(eval(browser, LAYOUT_JS).as_str().unwrap()).unwrap();
    let background = "getComputedStyle(document.body).backgroundColor";
    let light = eval(browser, background).as_str().unwrap_or_default().to_string();
    let png = screenshot(browser, s, shot);
    browser.call(
        s,
        "Emulation.setEmulatedMedia",
        json!({ "features": [{ "name": "prefers-color-scheme", "value": "dark" }] }),
    );
    let dark = eval(browser, background).as_str().unwrap_or_default().to_string();
    browser.call(
        s,
        "Emulation.setEmulatedMedia",
        json!({ "media": "print", "features": [{ "name": "prefers-color-scheme", "value": "dark" }] }),
    );
    let print = eval(browser, background).as_str().unwrap_or_default().to_string();
    // Give late requests and messages a moment to arrive, then collect everything this session saw.
    browser.call(
        s,
        "Runtime.evaluate",
        json!({ "expression": "new Promise(r => setTimeout(r, 300))", "awaitPromise": true }),
    );
    let mine: Vec<&Value> = browser.events.iter().filter(|e| e["sessionId"] == json!(session)).collect();
    let requests = mine
        .iter()
        .filter(|e| e["method"] == "Network.requestWillBeSent")
        .map(|e| e["params"]["request"]["url"].as_str().unwrap_or_default().to_string())
        .filter(|u| *u != url)
        .collect();
    let errors = page_errors(&mine);
    browser.call(None, "Target.closeTarget", json!({ "targetId": target["targetId"] }));
    Visit { requests, errors, charts, layout, backgrounds: [light, dark, print], png }
}

/// Console errors, uncaught exceptions and error log entries among a page's events.
fn page_errors(events: &[&Value]) -> Vec<String> {
    let mut errors = Vec::new();
    for e in events {
        let p = &e["params"];
        match e["method"].as_str().unwrap_or_default() {
            "Runtime.consoleAPICalled" if p["type"] == "error" => errors.push(p["args"].to_string()),
            "Runtime.exceptionThrown" => errors.push(p["exceptionDetails"].to_string()),
            "Log.entryAdded" if p["entry"]["level"] == "error" => errors.push(p["entry"]["text"].to_string()),
            _ => {}
        }
    }
    errors
}

fn screenshot(browser: &mut Browser, s: Option<&str>, (w, h): (u32, u32)) -> Vec<u8> {
    let clip = json!({ "x": 0, "y": 0, "width": w, "height": h, "scale": 0.6 });
    let shot = browser.call(
        s,
        "Page.captureScreenshot",
        json!({ "format": "png", "clip": clip, "captureBeyondViewport": true }),
    );
    base64(shot["data"].as_str().unwrap())
}

fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let clean: Vec<u8> = text.bytes().filter(|c| *c != b'=' && !c.is_ascii_whitespace()).map(value).collect();
    let mut out = Vec::new();
    for chunk in clean.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, v)| n | u32::from(*v) << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Writes the report of `args` into `dir` and returns its path.
fn report(dir: &Path, name: &str, args: &[&Path]) -> PathBuf {
    let page = dir.join(format!("{name}.html"));
    let mut cmd = streamcap();
    if args.len() == 1 {
        cmd.arg("report").arg(args[0]).arg("--format").arg("markdown");
    } else {
        cmd.arg("compare").args(args);
    }
    cmd.arg("--html").arg(&page).assert().success();
    page
}

/// Asserts what every page must do, and keeps the screenshot.
fn assert_clean(name: &str, v: &Visit) {
    assert!(v.requests.is_empty(), "{name}: the page made requests: {:?}", v.requests);
    assert!(v.errors.is_empty(), "{name}: errors in the console: {:?}", v.errors);
    for (id, declared, drawn, sized, _) in &v.charts {
        assert!(
            *declared > 0 && declared == drawn && *sized,
            "{name}: chart {id} declares {declared} series, drew {drawn}, sized {sized}"
        );
    }
    // Issue 30: phase labels written over each other, one tick on a latency axis, one or two on log axes.
    for (id, y, x, overlaps) in &v.layout {
        assert!(*y >= 3 && *x >= 3, "{name}: chart {id} has {y} y ticks and {x} x ticks (at least three each)");
        assert!(overlaps.is_empty(), "{name}: chart {id} has labels drawn over each other: {overlaps:?}");
    }
    let [light, dark, print] = &v.backgrounds;
    assert_eq!(light, "rgb(255, 255, 255)", "{name}: light background");
    assert_ne!(dark, light, "{name}: prefers-color-scheme: dark changes nothing");
    assert_eq!(print, "rgb(255, 255, 255)", "{name}: print is not on white");
    assert_eq!(&v.png[..8], b"\x89PNG\r\n\x1a\n", "{name}: not a PNG");
    let width = u32::from_be_bytes(v.png[16..20].try_into().unwrap());
    assert_eq!(width, 660, "{name}: screenshot width");
    assert!(v.png.len() > 20_000, "{name}: a {} byte screenshot is a blank page", v.png.len());
    // Kept only when asked: a run of the tests leaves nothing behind in the temporary directory.
    if std::env::var_os("UPDATE_SCREENSHOTS").is_some() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("report-{name}.png")), &v.png).unwrap();
    }
}

fn chart<'a>(v: &'a Visit, id: &str) -> &'a Chart {
    v.charts.iter().find(|c| c.0 == id).unwrap_or_else(|| panic!("no chart {id} in {:?}", v.charts))
}

fn series(v: &Visit, id: &str) -> u64 {
    chart(v, id).2
}

/// The labels of a chart's marks, as drawn inside the plot.
fn marks<'a>(v: &'a Visit, id: &str) -> &'a [String] {
    &chart(v, id).4
}

/// The sweep report: one chart per pass; two records × buffered and direct in each; the cliff, the RAM and (on
/// the read passes) the device's speed drawn as marks whose labels sit inside the plot.
fn sweep_report_draws_every_pass(browser: &mut Browser, dir: &Path) {
    let sweep = visit(browser, &report(dir, "sweep", &[&fixture("sweep-v1.json")]), (1100, 1500));
    assert_clean("sweep", &sweep);
    let passes = ["sweep-reread", "sweep-write", "sweep-write-fsync", "sweep-rewrite", "sweep-read", "sweep-random"];
    assert_eq!(sweep.charts.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(), passes);
    for id in passes {
        assert_eq!(series(&sweep, id), 4, "{id}");
        let labels = marks(&sweep, id);
        assert!(labels.contains(&"cliff: RAM up to 64 MiB, disk from 256 MiB".to_string()), "{id}: {labels:?}");
        assert!(labels.contains(&"effective RAM 128 MiB".to_string()), "{id}: {labels:?}");
    }
    assert!(marks(&sweep, "sweep-reread").contains(&"device (direct reads) 102 MB/s".to_string()));
}

#[test]
fn chromium_renders_every_report_kind_offline_with_every_chart_drawn() {
    let Some(binary) = chromium() else {
        common::skip(
            "chromium_renders_every_report_kind_offline_with_every_chart_drawn: no chromium (scripts/test installs it)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut browser = Browser::start(&binary);

    let run = visit(&mut browser, &report(dir.path(), "run", &[&fixture("result-v1.json")]), (1100, 1500));
    assert_clean("run", &run);
    // One phase writes, one reads: two lines of MB/s, four of latency (p50 and p99 of each); one device.
    assert_eq!((series(&run, "timeline-mbps"), series(&run, "timeline-latency"), series(&run, "devices")), (2, 4, 1));
    assert_eq!(run.charts.len(), 6);

    let streams = visit(&mut browser, &report(dir.path(), "streams", &[&fixture("streams-v1.json")]), (1100, 1500));
    assert_clean("streams", &streams);
    // Counts that met the target and the count that missed it (12 streams: one start-up over 2 s).
    assert_eq!(series(&streams, "capacity-stalls-streams"), 2);

    let check = visit(&mut browser, &report(dir.path(), "check", &[&fixture("check-v1.json")]), (1100, 1500));
    assert_clean("check", &check);
    for format in ["1080p", "2160p-hevc", "2160p-remux"] {
        assert!(series(&check, &format!("capacity-startup-{format}")) >= 1);
    }
    // The 1080p search never failed (it reached its limit): only passing points.
    assert_eq!(series(&check, "capacity-stalls-1080p"), 1);
    assert_eq!(series(&check, "capacity-stalls-2160p-hevc"), 2);

    let pair = [fixture("compare-ext4.json"), fixture("compare-tmpfs.json")];
    let compare = visit(&mut browser, &report(dir.path(), "compare", &[&pair[0], &pair[1]]), (1100, 1500));
    assert_clean("compare", &compare);
    // Both runs overlaid in each chart of each matched phase.
    for id in ["compare-timeline-0", "compare-latency-0", "compare-timeline-1", "compare-latency-1"] {
        assert_eq!(series(&compare, id), 2, "{id}");
    }

    sweep_report_draws_every_pass(&mut browser, dir.path());

    let cache = visit(&mut browser, &report(dir.path(), "cache", &[&fixture("cache-v1.json")]), (1100, 1500));
    assert_clean("cache", &cache);
    assert_eq!(series(&cache, "cache-plateaus"), 2, "alone and beside the load");
    assert!(marks(&cache, "cache-cliff").iter().any(|l| l.starts_with("sustained media")), "{:?}", cache.charts);

    let pair = [fixture("streams-count-3mbs.json"), fixture("streams-count-8mbs.json")];
    let steps = visit(&mut browser, &report(dir.path(), "compare-streams", &[&pair[0], &pair[1]]), (1100, 1500));
    assert_clean("compare-streams", &steps);
    // Both fixed-count runs overlaid: one point each for stalls and for start-up.
    assert_eq!((series(&steps, "compare-capacity-0"), series(&steps, "compare-startup-0")), (2, 2));
}

#[test]
fn the_detectors_see_a_request_and_a_console_error() {
    let Some(binary) = chromium() else {
        common::skip("the_detectors_see_a_request_and_a_console_error: no chromium (scripts/test installs it)");
        return;
    };
    // Pages that misbehave, to prove the checks above could fail: an image from a closed loopback port, and a
    // script that logs an error.
    let dir = tempfile::tempdir().unwrap();
    let fetching = dir.path().join("fetching.html");
    std::fs::write(&fetching, "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/x.png\"></body></html>")
        .unwrap();
    let logging = dir.path().join("logging.html");
    std::fs::write(&logging, "<!DOCTYPE html><html><body><script>console.error('boom')</script></body></html>")
        .unwrap();
    let mut browser = Browser::start(&binary);
    let v = visit(&mut browser, &fetching, (400, 300));
    assert_eq!(v.requests, ["http://127.0.0.1:9/x.png"]);
    let v = visit(&mut browser, &logging, (400, 300));
    assert!(v.errors.iter().any(|e| e.contains("boom")), "{:?}", v.errors);
}
