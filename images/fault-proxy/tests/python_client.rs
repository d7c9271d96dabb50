//! Compatibility with a client nobody here wrote: toxiproxy-python (PyPI)
//! runs tests/toxiproxy_python_compat.py against a live fault-proxy.
//! It needs python3 with toxiproxy-python, so it is `#[ignore]`d: `-- --include-ignored`
//! runs it (scripts/test does, after installing tests/python/requirements.txt), and it
//! fails, saying what is missing, when the client is not there.

mod common;

use std::process::Command;

use common::FaultProxy;

/// Why the client cannot run here, if it cannot.
fn missing_prerequisite() -> Option<String> {
    match Command::new("python3")
        .args(["-c", "import toxiproxy, requests"])
        .output()
    {
        Err(e) => Some(format!("python3 not runnable: {e}")),
        Ok(out) if !out.status.success() => Some(format!(
            "python package toxiproxy-python missing (pip install toxiproxy-python): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Ok(_) => None,
    }
}

#[test]
#[ignore = "needs python3 with toxiproxy-python (pip install -r tests/python/requirements.txt)"]
fn toxiproxy_python_client_drives_the_proxy() {
    if let Some(reason) = missing_prerequisite() {
        panic!("this test needs the toxiproxy-python client: {reason}");
    }
    let fp = FaultProxy::start();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/toxiproxy_python_compat.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .env("FAULT_PROXY_API", &fp.api)
        // Loopback only: never let requests route through an HTTP proxy.
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "toxiproxy-python script failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("checks ok"), "{stdout}");
}
