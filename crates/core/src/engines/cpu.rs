//! The host's processor as a run's manifest records it (`Cpu`, in its `host`): model, logical
//! CPUs, cores and sockets, SMT, and the frequency governor, the facts that change a
//! result and that the engine's `info` does not give. They are read inside a throwaway
//! container (`/proc/cpuinfo` and `/sys/devices/system/cpu` are the host's there) by
//! `READ_SCRIPT`, whose output `parse` reads.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// A host's processor: the facts of it that change a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    /// `/proc/cpuinfo`'s first `model name`; `None` where the kernel lists none (ARM).
    pub model: Option<String>,
    /// Logical CPUs (hardware threads).
    pub logical: u32,
    /// Physical cores: distinct (`physical id`, `core id`) pairs; `None` where not listed.
    pub cores: Option<u32>,
    pub sockets: Option<u32>,
    /// Simultaneous multithreading on: `/sys/devices/system/cpu/smt/active`, else logical
    /// CPUs over cores; `None` when neither can be read.
    pub smt: Option<bool>,
    /// CPU 0's frequency governor (`scaling_governor`), where the host exposes one.
    pub governor: Option<String>,
}

/// What the container runs (`sh -c`): the host's cpuinfo, then each optional file after a
/// marker line, empty when the host does not expose it (a VM often has no cpufreq).
pub const READ_SCRIPT: &str = "cat /proc/cpuinfo; \
     echo '== smt'; cat /sys/devices/system/cpu/smt/active 2>/dev/null; \
     echo '== governor'; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null; \
     true";

const SMT: &str = "== smt";
const GOVERNOR: &str = "== governor";

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CpuError {
    #[error("the host's /proc/cpuinfo, as read, lists no processor: {said:?}")]
    NoProcessor { said: String },
    #[error(
        "the host's CPU facts, as read, lack the `{marker}` line READ_SCRIPT prints: {said:?}"
    )]
    Truncated { marker: &'static str, said: String },
}

/// The facts in `READ_SCRIPT`'s output.
pub fn parse(text: &str) -> Result<Cpu, CpuError> {
    let said = || text.chars().take(200).collect::<String>();
    let (info, rest) = split(text, SMT).ok_or_else(|| CpuError::Truncated {
        marker: SMT,
        said: said(),
    })?;
    let (smt, governor) = split(rest, GOVERNOR).ok_or_else(|| CpuError::Truncated {
        marker: GOVERNOR,
        said: said(),
    })?;
    let fields: Vec<(&str, &str)> = info
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    let values = |key: &'static str| {
        fields
            .iter()
            .filter(move |(k, _)| *k == key)
            .map(|(_, v)| *v)
    };
    // s390x writes `processor 0: version = …`, one line per CPU.
    let logical = fields
        .iter()
        .filter(|(k, _)| *k == "processor" || k.starts_with("processor "))
        .count() as u32;
    if logical == 0 {
        return Err(CpuError::NoProcessor { said: said() });
    }
    // A core is a (socket, core id) pair; hosts that list neither (some ARM kernels) say
    // nothing of cores or sockets, rather than a guess.
    let sockets: BTreeSet<&str> = values("physical id").collect();
    let cores: BTreeSet<(&str, &str)> = fields
        .iter()
        .scan("", |socket, (k, v)| {
            if *k == "physical id" {
                *socket = v;
            }
            Some((*k == "core id").then_some((*socket, *v)))
        })
        .flatten()
        .collect();
    let cores = (!cores.is_empty()).then_some(cores.len() as u32);
    let smt = match smt.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => cores.map(|c| logical > c),
    };
    let governor = Some(governor.trim())
        .filter(|g| !g.is_empty())
        .map(String::from);
    Ok(Cpu {
        model: values("model name").next().map(String::from),
        logical,
        cores,
        sockets: (!sockets.is_empty()).then_some(sockets.len() as u32),
        smt,
        governor,
    })
}

/// The text before the line `marker` and after it.
fn split<'a>(text: &'a str, marker: &str) -> Option<(&'a str, &'a str)> {
    let at = text
        .match_indices(marker)
        .find(|(i, _)| *i == 0 || text[..*i].ends_with('\n'))?
        .0;
    Some((&text[..at], &text[at + marker.len()..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn processor(n: u32, socket: u32, core: u32) -> String {
        format!(
            "processor\t: {n}\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\
             physical id\t: {socket}\nsiblings\t: 4\ncore id\t\t: {core}\ncpu cores\t: 2\n\n"
        )
    }

    #[test]
    fn cores_are_socket_and_core_pairs_and_smt_is_read_where_the_host_says_it() {
        // Two sockets of two cores, each core with two threads: core ids repeat per socket.
        let mut info = String::new();
        for (n, (s, c)) in [(0, 0), (0, 1), (1, 0), (1, 1)]
            .iter()
            .cycle()
            .take(8)
            .enumerate()
        {
            info.push_str(&processor(n as u32, *s, *c));
        }
        let out = format!("{info}== smt\n1\n== governor\nperformance\n");
        let cpu = parse(&out).unwrap();
        assert_eq!(
            cpu,
            Cpu {
                model: Some("AMD EPYC 7B13".into()),
                logical: 8,
                cores: Some(4),
                sockets: Some(2),
                smt: Some(true),
                governor: Some("performance".into()),
            }
        );
        // A VM without the files: SMT from the counts, no governor.
        let vm = format!(
            "{}{}== smt\n== governor\n",
            processor(0, 0, 0),
            processor(1, 0, 1)
        );
        let cpu = parse(&vm).unwrap();
        assert_eq!(
            (cpu.cores, cpu.smt, cpu.governor),
            (Some(2), Some(false), None)
        );
    }

    #[test]
    fn output_without_a_processor_or_cut_short_is_an_error_naming_what_was_read() {
        let e = parse("== smt\n== governor\n").unwrap_err();
        assert!(matches!(e, CpuError::NoProcessor { .. }), "{e}");
        let e = parse(&processor(0, 0, 0)).unwrap_err();
        assert!(e.to_string().contains("`== smt`"), "{e}");
        // ARM kernels list processors without sockets or core ids: those stay unknown.
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\n\n== smt\n== governor\n";
        let cpu = parse(arm).unwrap();
        assert_eq!(
            (cpu.logical, cpu.cores, cpu.sockets, cpu.smt),
            (2, None, None, None)
        );
        let s390 = "vendor_id       : IBM/S390\n# processors    : 2\n\
                    processor 0: version = FF,  identification = 0133E8,  machine = 2964\n\
                    processor 1: version = FF,  identification = 0133E8,  machine = 2964\n\
                    == smt\n== governor\n";
        assert_eq!(parse(s390).unwrap().logical, 2);
    }
}
