//! The engines file: what it accepts, and every refusal placed at its line and field.

use std::path::Path;

use super::*;

fn load(text: &str) -> Result<Engines, Vec<String>> {
    load_with(text, None)
}

fn load_with(text: &str, docker_cert_path: Option<&str>) -> Result<Engines, Vec<String>> {
    let ctx = Context {
        base_dir: Path::new("/etc/feedbench"),
        docker_cert_path,
    };
    load_str("engines.yaml", text, &ctx).map_err(|EnginesError::Invalid { diagnostics, .. }| {
        diagnostics.iter().map(|d| d.to_string()).collect()
    })
}

const TWO: &str = "\
format_version: 1
engines:
  here: {endpoint: \"unix:///var/run/docker.sock\", address: 10.99.0.1}
  second:
    endpoint: tcp://10.99.0.2:2376
    address: 10.99.0.2
    tls: {cert-path: certs/second}
  third: {endpoint: \"ssh://feedbench@10.99.0.3:2222\", address: 10.99.0.3}
groups:
  - {system: here, load-generator: second}
  - {system: third}
";

#[test]
fn every_transport_resolves_with_its_files_and_groups() {
    let e = load(TWO).unwrap();
    assert_eq!(e.engines.len(), 3);
    assert_eq!(
        e.engines[0].endpoint,
        Endpoint::Unix {
            path: "/var/run/docker.sock".into()
        }
    );
    assert_eq!(
        e.engines[1].endpoint,
        Endpoint::Tcp {
            host: "10.99.0.2".into(),
            port: 2376,
            tls: TlsFiles {
                ca: "/etc/feedbench/certs/second/ca.pem".into(),
                cert: "/etc/feedbench/certs/second/cert.pem".into(),
                key: "/etc/feedbench/certs/second/key.pem".into(),
            },
        }
    );
    assert_eq!(
        e.engines[2].endpoint,
        Endpoint::Ssh {
            user: Some("feedbench".into()),
            host: "10.99.0.3".into(),
            port: Some(2222),
            socket: "/var/run/docker.sock".into(),
            ssh_config: None,
        }
    );
    assert_eq!(e.engines[1].address.to_string(), "10.99.0.2");
    assert_eq!(e.names(&e.groups[0]), ("here", "second"));
    assert_eq!(e.names(&e.groups[1]), ("third", "third"));
}

#[test]
fn tls_without_a_cert_path_takes_docker_cert_path() {
    let text = TWO.replace("tls: {cert-path: certs/second}", "tls: {}");
    let e = load_with(&text, Some("/root/.docker")).unwrap();
    let Endpoint::Tcp { tls, .. } = &e.engines[1].endpoint else {
        panic!("{:?}", e.engines[1]);
    };
    assert_eq!(tls.ca, Path::new("/root/.docker/ca.pem"));
    let errors = load(&text).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("engines.yaml:7:10: engines.second.tls:")
            && errors[0].contains("DOCKER_CERT_PATH is not set"),
        "{errors:?}"
    );
}

#[test]
fn a_duplicate_name_is_refused_at_its_line() {
    let text = TWO.replace("  third:", "  here:");
    let errors = load(&text).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("engines.yaml:8:3:") && errors[0].contains("here"),
        "{errors:?}"
    );
}

#[test]
fn plain_tcp_is_refused() {
    let text = TWO.replace("    tls: {cert-path: certs/second}\n", "");
    let errors = load(&text).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("engines.yaml:5:15: engines.second.endpoint:")
            && errors[0].contains("needs TLS")
            && errors[0].contains("hint: add `tls: {cert-path: DIR}`"),
        "{errors:?}"
    );
}

#[test]
fn malformed_endpoints_and_addresses_are_named_by_field() {
    for (from, to, field) in [
        (
            "tcp://10.99.0.2:2376",
            "tcp://10.99.0.2",
            "engines.second.endpoint",
        ),
        (
            "tcp://10.99.0.2:2376",
            "tcp://10.99.0.2:http",
            "engines.second.endpoint",
        ),
        (
            "tcp://10.99.0.2:2376",
            "http://10.99.0.2:2376",
            "engines.second.endpoint",
        ),
        (
            "tcp://10.99.0.2:2376",
            "10.99.0.2:2376",
            "engines.second.endpoint",
        ),
        (
            "unix:///var/run/docker.sock",
            "unix://docker.sock",
            "engines.here.endpoint",
        ),
        (
            "ssh://feedbench@10.99.0.3:2222",
            "ssh://@10.99.0.3",
            "engines.third.endpoint",
        ),
        (
            "ssh://feedbench@10.99.0.3:2222",
            "ssh://feedbench@",
            "engines.third.endpoint",
        ),
        (
            "address: 10.99.0.2",
            "address: second.lab",
            "engines.second.address",
        ),
        // Every address of the host, and no one address.
        (
            "address: 10.99.0.2",
            "address: 0.0.0.0",
            "engines.second.address",
        ),
        (
            "address: 10.99.0.2",
            "address: \"::\"",
            "engines.second.address",
        ),
        (
            "address: 10.99.0.2",
            "address: 224.0.0.1",
            "engines.second.address",
        ),
    ] {
        let text = TWO.replace(from, to);
        assert_ne!(text, TWO);
        let errors = load(&text).unwrap_err();
        assert_eq!(errors.len(), 1, "{to}: {errors:?}");
        assert!(
            errors[0].contains(&format!(" {field}: ")),
            "{to}: {errors:?}"
        );
    }
}

#[test]
fn an_ssh_engine_may_name_its_remote_socket_and_no_other_may() {
    let text = TWO.replace(
        "address: 10.99.0.3}",
        "address: 10.99.0.3, socket: /run/engine2/docker.sock, ssh-config: ssh/config}",
    );
    let e = load(&text).unwrap();
    assert!(
        matches!(&e.engines[2].endpoint, Endpoint::Ssh { socket, ssh_config: Some(c), .. }
            if socket == "/run/engine2/docker.sock" && c == Path::new("/etc/feedbench/ssh/config")),
        "{:?}",
        e.engines[2]
    );
    let errors = load(&text.replace("socket: /run", "socket: run")).unwrap_err();
    assert!(
        errors.len() == 1
            && errors[0]
                .contains("engines.third.socket: the remote socket's path must be absolute"),
        "{errors:?}"
    );
    let errors = load(&TWO.replace(
        "address: 10.99.0.1}",
        "address: 10.99.0.1, socket: /run/docker.sock}",
    ))
    .unwrap_err();
    assert!(
        errors.len() == 1
            && errors[0].contains(
                "engines.here.socket: `socket` is for `ssh://` endpoints; this one is `unix://`"
            ),
        "{errors:?}"
    );
}

#[test]
fn tls_on_another_transport_is_refused() {
    let text = TWO.replace(
        "address: 10.99.0.3}",
        "address: 10.99.0.3, tls: {cert-path: certs}}",
    );
    let errors = load(&text).unwrap_err();
    assert!(
        errors.len() == 1 && errors[0].contains("engines.third.tls: `tls` is for `tcp://`"),
        "{errors:?}"
    );
}

#[test]
fn groups_name_known_engines_each_in_one_group() {
    let errors = load(&TWO.replace("{system: third}", "{system: thrid}")).unwrap_err();
    assert!(
        errors.len() == 1
            && errors[0].contains("groups[1].system: unknown engine `thrid`")
            && errors[0].contains("did you mean `third`?"),
        "{errors:?}"
    );
    let errors = load(&TWO.replace("{system: third}", "{system: third, load-generator: second}"))
        .unwrap_err();
    assert!(
        errors.len() == 1
            && errors[0]
                .contains("groups[1].load-generator: engine `second` is in groups[0] already"),
        "{errors:?}"
    );
    let no_groups = &TWO[..TWO.find("groups:").unwrap()];
    let errors = load(no_groups).unwrap_err();
    assert!(
        errors.len() == 1 && errors[0].contains("3 engines are named but no group"),
        "{errors:?}"
    );
}

#[test]
fn one_engine_needs_no_group_and_another_format_version_is_refused() {
    let one = "format_version: 1\nengines:\n  here: {endpoint: \"unix:///run/docker.sock\", address: 127.0.0.1}\n";
    let e = load(one).unwrap();
    assert_eq!(e.names(&e.groups[0]), ("here", "here"));
    let errors = load(&one.replace("format_version: 1", "format_version: 2")).unwrap_err();
    assert!(
        errors.len() == 1
            && errors[0].starts_with("engines.yaml:1:17: format_version:")
            && errors[0].contains("reads engines files of format_version 1, not 2"),
        "{errors:?}"
    );
    let errors = load("format_version: 1\nengines: {}\n").unwrap_err();
    assert!(errors[0].contains("names no engine"), "{errors:?}");
    let errors = load(&one.replace("address", "adress")).unwrap_err();
    assert!(errors[0].contains("adress"), "{errors:?}");
}

#[test]
fn apart_needs_a_load_generator_engine_in_every_group() {
    let e = load(TWO).unwrap();
    let apart = Placement {
        load_generator: Apartness::Apart,
    };
    let problems = check_placement(&e, &apart);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("group 1 runs it on `third`"),
        "{problems:?}"
    );
    assert!(check_placement(&e, &Placement::default()).is_empty());
    assert_eq!(check_placement(&Engines::local(), &apart).len(), 1);
}
