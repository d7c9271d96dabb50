//! index.html in a real browser: Debian's Chromium, headless, renders the report of a
//! synthetic study (a ramp, a kill, a constant run) to PNG and dumps its DOM. Every plot
//! must be in the rendered DOM with its data drawn, and the browser must log no error
//! about the page. The check itself is shown to see a broken page.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::report::{complete_all, generated, report, study, text};

const CHROMIUM: &str = "chromium";

/// Runs headless Chromium on `page` with `args`; returns (stdout, stderr). The browser
/// is kept off the network: Chromium's own background requests (update checks, account
/// lookups, time queries to Google) resolve to nothing on the machine itself, so no packet
/// leaves it and no failure of an outside service can reach the log (where it would read
/// as an error about the page, and would depend on the network of the day). The network
/// log it writes is read back to show that it asked no DNS server and opened no TCP
/// connection.
fn chromium(page: &Path, args: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let net_log = dir.path().join("net-log.json");
    let out = Command::new(CHROMIUM)
        // As root the sandbox cannot start; there is no GPU here.
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--log-net-log={}", net_log.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `{CHROMIUM}` ({e}): apt-get install chromium (scripts/test does this)"
            )
        });
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = off_machine(&std::fs::read_to_string(&net_log).unwrap());
    assert!(
        sent.is_empty(),
        "the browser reached the network: {sent:#?}"
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The events of a Chromium network log (`--log-net-log`) that put a packet on the wire: a
/// DNS query, or a TCP connection attempted to an address that is not loopback. (A UDP
/// `connect`, which Chromium makes to learn its own address, sends nothing.)
fn off_machine(net_log: &str) -> Vec<String> {
    let log: serde_json::Value = serde_json::from_str(net_log).expect("a JSON network log");
    let kinds = &log["constants"]["logEventTypes"];
    let kind = |name: &str| kinds[name].as_u64().expect("a known event type");
    let (dns, tcp) = (kind("DNS_TRANSACTION_QUERY"), kind("TCP_CONNECT_ATTEMPT"));
    log["events"]
        .as_array()
        .expect("a list of events")
        .iter()
        .filter(|e| {
            let t = e["type"].as_u64();
            let address = e["params"]["address"].as_str().unwrap_or("");
            t == Some(dns)
                || (t == Some(tcp)
                    && !(address.starts_with("127.") || address.starts_with("[::1]")))
        })
        .map(|e| e.to_string())
        .collect()
}

/// What the browser logged about the page: every console message (script errors and
/// failed loads land there), and every ERROR line except D-Bus's, which come from the
/// machine having no system bus (a container), not from the page.
fn page_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            l.contains(":CONSOLE") || (l.contains(":ERROR:") && !l.contains(":ERROR:dbus/"))
        })
        .collect()
}

/// Each `<figure class="plot" …>` of the DOM: its id, and how many shapes its SVG draws.
fn plots(dom: &str) -> Vec<(String, usize)> {
    dom.split("<figure class=\"plot\"")
        .skip(1)
        .map(|f| {
            let body = &f[..f.find("</figure>").unwrap_or(f.len())];
            let id = body
                .split("id=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .unwrap_or("")
                .to_string();
            let svg = body.find("<svg").map_or("", |i| &body[i..]);
            let shapes = [
                "<path",
                "<polyline",
                "<polygon",
                "<rect",
                "<circle",
                "<line",
            ]
            .iter()
            .map(|t| svg.matches(t).count())
            .sum();
            (id, shapes)
        })
        .collect()
}

#[test]
#[ignore = "needs Chromium (apt-get install chromium) and Python with pandas"]
fn the_report_renders_in_chromium_with_every_plot_drawn_and_no_error() {
    let gen = tempfile::tempdir().unwrap();
    let (repo, mut f, runs) = study();
    complete_all(&mut f, &runs, &generated(gen.path()));
    let o = report(&repo, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let page = repo.path("results/smoke/report/index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let written = plots(&html);
    assert!(written.len() >= 4, "plots in the file: {written:?}");

    let (dom, log) = chromium(&page, &["--dump-dom"]);
    let errors = page_errors(&log);
    assert!(errors.is_empty(), "the browser logged errors: {errors:#?}");
    let rendered = plots(&dom);
    assert_eq!(
        rendered.iter().map(|p| &p.0).collect::<Vec<_>>(),
        written.iter().map(|p| &p.0).collect::<Vec<_>>(),
        "every plot of the file is in the rendered DOM"
    );
    for (id, shapes) in &rendered {
        // Axes, grid and legend alone draw a handful of shapes; data draws more.
        assert!(*shapes >= 10, "plot `{id}` draws {shapes} shapes");
    }
    for id in ["ramp-", "fault-", "cpu-"] {
        assert!(
            rendered.iter().any(|p| p.0.starts_with(id)),
            "no {id}… plot: {rendered:?}"
        );
    }
    assert!(dom.contains("<table>"), "the tables are rendered");

    let png = repo.path("shot.png");
    let (_, log) = chromium(
        &page,
        &[
            "--window-size=1280,3000",
            &format!("--screenshot={}", png.display()),
        ],
    );
    let errors = page_errors(&log);
    assert!(errors.is_empty(), "the browser logged errors: {errors:#?}");
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 50_000,
        "{} bytes",
        bytes.len()
    );
}

#[test]
#[ignore = "needs Chromium (apt-get install chromium)"]
fn the_check_sees_a_broken_page() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("broken.html");
    std::fs::write(
        &page,
        "<html><body><figure class=\"plot\" id=\"empty\"><svg></svg></figure>\
         <img src=\"missing.png\"><script>undefinedFunction();</script></body></html>",
    )
    .unwrap();
    let (dom, log) = chromium(&page, &["--dump-dom"]);
    assert!(
        !page_errors(&log).is_empty(),
        "a script error is seen: {log}"
    );
    assert_eq!(plots(&dom), vec![("empty".to_string(), 0)]);
}
