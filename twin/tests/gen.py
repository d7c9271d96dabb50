"""Hand-made run directories with known answers, for the twin's tests and benchmark.

Every scenario writes the raw files of a run directory as docs/results.md describes them
(run.json with its frame, requests.csv, containers.csv, events.csv, health.csv). Times are
integer nanoseconds from T0, a unix time in 2027.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

NS = 1_000_000_000
MS = 1_000_000
T0 = 1_800_000_000 * NS

REQUEST_COLUMNS = ["start_ns", "end_ns", "route", "method", "status", "duration_ms", "error"]
CONTAINER_COLUMNS = [
    "unix_ns", "offset_s", "tick", "container", "role", "source", "status", "cpu_usage_s",
    "cpu_user_s", "cpu_system_s", "cpu_periods", "cpu_throttled_periods", "cpu_throttled_s",
    "memory_bytes", "memory_rss_bytes", "memory_working_set_bytes", "memory_limit_bytes", "oom_kills", "net_rx_bytes",
    "net_tx_bytes", "detail",
]

DEFAULT_CAPS = {
    "feedbench-replica-1": {"role": "replica-1", "cpus": 0.25},
    "feedbench-replica-2": {"role": "replica-2", "cpus": 0.25},
    "feedbench-database": {"role": "database", "cpus": 0.5},
    "feedbench-fault-proxy": {"role": "fault-proxy", "cpus": 0.25},
    "feedbench-balancer": {"role": "balancer", "cpus": 0.2},
    "feedbench-load-generator": {"role": "load-generator", "cpus": 0.5},
}


def frame(*, contender="feed-rs", variant="indexed", profile="baseline", fault=None,
          repetition=1, start, end, offered, steps=(), p99_ms=500, failed_share=0.01,
          window_ns=60 * NS, fault_window=None, caps=None, recovery=None, stopped=None,
          confirm_steps=None, expected_4xx=None, judged_by=None):
    """run.json's frame. `stopped` (a ramp stopped at its knee), `confirm_steps`,
    `expected_4xx` (route → declared 4xx share) and `judged_by` (the rule its windows are
    judged by) are written only when given, as older run.json files lack them."""
    f = {
        "contender": contender, "variant": variant, "profile": profile, "fault": fault,
        "repetition": repetition,
        "measured": {"start_ns": start, "end_ns": end, "offered_arrivals": offered},
        "steps": list(steps),
        "objective": {"p99_ms": p99_ms, "failed_share": failed_share, "window_ns": window_ns},
        "fault_window": fault_window,
        "caps": caps if caps is not None else DEFAULT_CAPS,
        "recovery": recovery or {"window_ns": 10 * NS, "step_ns": 100 * MS, "hold_ns": 10 * NS,
                                 "throughput_tolerance": 0.05, "latency_tolerance": 0.1},
    }
    if stopped is not None:
        f["stopped"] = stopped
    if confirm_steps is not None:
        f["confirm_steps"] = confirm_steps
    if expected_4xx is not None:
        f["expected_4xx"] = expected_4xx
    if judged_by is not None:
        f["judged_by"] = judged_by
    return f


def run_id_of(f):
    c = f["contender"] + (f".{f['variant']}" if f["variant"] else "")
    p = f["profile"] + (f"+{f['fault']}" if f["fault"] else "")
    return f"{c}/{p}/r{f['repetition']}"


def write_run(root: Path, f: dict, requests: pd.DataFrame, containers: pd.DataFrame,
              events=(), health=(), dropped=0, rss_column=True,
              working_set_column=True, route_column=True, load=None, host=None) -> Path:
    """`load`: more of run.json's load summary (the scenario's start, dropped starts per
    second). `rss_column` / `working_set_column` False leave `memory_rss_bytes` /
    `memory_working_set_bytes` out of containers.csv's header, as older files lack them;
    `route_column` False leaves `route` out of requests.csv's header. Requests without a
    route of their own are on route `feed`. `host`: host.csv's text, when the run has one."""
    run_id = run_id_of(f)
    d = Path(root) / run_id.replace("/", "_").replace("+", "_")
    d.mkdir(parents=True, exist_ok=True)
    record = {
        "format_version": 1, "run_id": run_id, "run_hash": "0" * 64, "plan_hash": "0" * 64,
        "execution": {"execution": "completed"}, "cleanup_ok": True, "derived": [],
        "warnings": [], "load": {"requests": len(requests), "errors": 0,
                                 "dropped_iterations": dropped, **(load or {})},
        "frame": f, "started_wall_ns": int(T0), "ended_wall_ns": int(f["measured"]["end_ns"]),
    }
    (d / "run.json").write_text(json.dumps(record, indent=2) + "\n")
    req = requests.copy()
    for c in REQUEST_COLUMNS:
        if c not in req:
            req[c] = {"route": "feed", "method": "GET", "error": ""}[c]
    # A native load generator's rows also carry their scheduled instant.
    cols = [c for c in REQUEST_COLUMNS if route_column or c != "route"] + (
        ["scheduled_ns"] if "scheduled_ns" in req else [])
    req[cols].to_csv(d / "requests.csv", index=False)
    cont = containers.copy()
    for c in CONTAINER_COLUMNS:
        if c not in cont:
            cont[c] = "" if c in ("detail", "source") else np.nan
    left_out = ({"memory_rss_bytes"} if not rss_column else set()) | (
        {"memory_working_set_bytes"} if not working_set_column else set())
    cols = [c for c in CONTAINER_COLUMNS if c not in left_out]
    # the ints stay ints (NaN would make them floats)
    out = cont[cols].astype(object).where(cont[cols].notna(), "")
    out.to_csv(d / "containers.csv", index=False)
    ev = pd.DataFrame(list(events), columns=["wall_ns", "t_s", "event", "subject", "detail"])
    ev.to_csv(d / "events.csv", index=False)
    h = pd.DataFrame(list(health), columns=["wall_ns", "server", "state"])
    h.to_csv(d / "health.csv", index=False)
    if host is not None:
        (d / "host.csv").write_text(host)
    return d


HOST_HEADER = ("unix_ns,offset_s,tick,status,interval_s,logical_cpus,busy_s,iowait_s,steal_s,"
               "study_s,feedbench_s,engine_s,load1,detail")


def host_csv(unix):
    """host.csv at the containers' reads `unix`: the study 0.5 cores, feedbench 0.02, the
    engine 0.03, steal 0.05, and outside the study 0.3 cores in the measured phase's first
    10 s (ticks 2–11), 0.1 in its last 10 (ticks 12–21), 3 outside it. Tick 0 has no
    interval; tick 7 has no study figure (left out; its outside would be 5); at tick 15 the
    host's busy time is below the parts (outside 0). So over the measured phase, 19 s:
    outside 3.6 / 19 cores, steal 0.05."""
    lines = [HOST_HEADER]
    for t, u in enumerate(unix):
        if t == 0:
            lines.append(f"{u},{t}.0,{t},ok,,2,,,,,,,0.5,")
            continue
        outside = 0.3 if 2 <= t <= 11 else 0.1 if 12 <= t <= 21 else 3.0
        outside = 5.0 if t == 7 else outside
        busy = 0.4 if t == 15 else 0.5 + 0.02 + 0.03 + outside
        study = "" if t == 7 else "0.5"
        lines.append(f"{u},{t}.0,{t},ok,1.0,2,{busy:.9f},0,0.05,{study},0.02,0.03,{1 + t / 10},")
    return "\n".join(lines) + "\n"


def requests_frame(start, dur_ms, status=None, blocked_ns=None, route=None):
    """`route`: each request's route (by default none: write_run writes `feed`)."""
    start = np.asarray(start, dtype=np.int64)
    dur_ms = np.asarray(dur_ms, dtype=float)
    if status is None:
        status = np.full(len(start), 200, dtype=np.int64)
    blocked = np.zeros(len(start), dtype=np.int64) if blocked_ns is None else blocked_ns
    end = start + blocked + np.round(dur_ms * MS).astype(np.int64)
    df = pd.DataFrame({"start_ns": start, "end_ns": end, "status": status,
                       "duration_ms": dur_ms})
    if route is not None:
        df["route"] = np.asarray(route, dtype=object)
    # k6 writes rows roughly by end time, not by start
    return df.sort_values("end_ns", kind="stable").reset_index(drop=True)


def container_rows(name, role, ticks, unix, cpu, mem, rss, status=None, monotonic=None,
                   ws=None):
    """`monotonic`: the reads' times on the monitors' clock (unix ns), when the wall clock
    (`unix`) does not keep it; `offset_s` is taken from it. `ws`: the working set
    (`memory_working_set_bytes`); by default halfway between `rss` and `mem`, row by row
    (empty where either is)."""
    n = len(ticks)
    on_clock = unix if monotonic is None else monotonic
    if ws is None:
        ws = (np.asarray(rss, dtype=float) + np.asarray(mem, dtype=float)) / 2
    return pd.DataFrame({
        "unix_ns": np.asarray(unix, dtype=np.int64),
        "offset_s": [(u - T0) / 1e9 for u in on_clock],
        "tick": ticks, "container": name, "role": role, "source": "cgroup",
        "status": status if status is not None else ["ok"] * n,
        "cpu_usage_s": cpu, "memory_bytes": mem, "memory_rss_bytes": rss,
        "memory_working_set_bytes": ws,
    })


def simple_containers(a, b, caps=None, cpu_per_s=None):
    """One ok row per second per capped container over [a - 1 s, b + 1 s], steady CPU.

    The i-th container in name order holds memory 100 MB + i, working set 70 MB + i and
    RSS 50 MB + i (bytes)."""
    caps = caps if caps is not None else DEFAULT_CAPS
    cpu_per_s = cpu_per_s or {}
    ticks = np.arange(0, (b - a) // NS + 3)
    unix = a - NS + ticks * NS + 5 * MS
    parts = []
    for i, (name, c) in enumerate(sorted(caps.items())):
        rate = cpu_per_s.get(name, 0.1)
        parts.append(container_rows(name, c["role"], ticks, unix, rate * ticks + 3.0,
                                    [100_000_000 + i] * len(ticks),
                                    [50_000_000 + i] * len(ticks),
                                    ws=[70_000_000 + i] * len(ticks)))
    return interleave(parts)


def interleave(parts):
    """Rows of each tick together, as the monitors write them."""
    df = pd.concat(parts, ignore_index=True)
    return df.sort_values(["tick", "container"], kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------
# Scenarios


def constant_run(root, repetition=1, shift_ms=0.0, rss_column=True, native=False,
                 working_set_column=True, route_column=True):
    """A constant 10/s run: 20 s measured after 5 s of warm-up.

    In measured second k, request j (j = 0..9) starts at k s + j·100 ms and takes
    (j + 1)·(k + 1) ms + shift_ms. Routes: every second's last request (j = 9) is on route
    `post` and answered 404, the others (j = 0..8) are on route `feed`. Statuses in the
    measured phase: 2 × 0, 3 × 503 and 3 × 404 on `feed` (the rest 200), 20 × 404 on `post`:
    23 × 404 in all, 172 × 200. Per route: `post` 20 requests (1/s), durations 10·(k + 1)
    ms + shift_ms (p99 200 ms + shift_ms), all 404; `feed` 180 requests (9/s), p99 171 ms
    + shift_ms, 172 × 200, 3 × 404, 5 failed. The post route declares an expected 4xx share
    of 99.5 % (its 100 % is within a point of it; 19.9 of its 20 404s are served answers),
    the feed route none (its 1.67 % is over). `route_column` False writes requests.csv
    without its `route` column.
    With `native`, requests.csv has `scheduled_ns`: request j was sent 2·j ms after its
    scheduled instant (so its latency from the schedule is its duration + 2·j ms).

    Memory (bytes) at tick t, ticks 2–21 in the measured phase: replica-1 RSS 100 M + t M,
    working set 140 M + 2t M, usage 200 M; replica-2 RSS 80 M, working set 120 M, usage
    150 M, down at tick 10 and with an empty working set (an ok row) at tick 12; the others
    RSS 20 M, working set 25 M, usage 30 M. `rss_column` / `working_set_column` False write
    containers.csv without that column, as older files.
    """
    ms = T0 + 5 * NS
    me = ms + 20 * NS
    starts, durs = [], []
    for k in range(-5, 22):  # warm-up, measured, and 2 s after
        for j in range(10):
            starts.append(ms + k * NS + j * 100 * MS)
            durs.append((j + 1) * (abs(k) + 1) + shift_ms if 0 <= k < 20 else 1000.0)
    starts = np.array(starts)
    status = np.full(len(starts), 200)
    m0 = 5 * 10  # index of the first measured request
    status[m0 + 3] = 0
    status[m0 + 17] = 0
    status[[m0 + 20, m0 + 21, m0 + 150]] = 503
    status[[m0 + 30, m0 + 31, m0 + 32]] = 404
    # every second's last request (m0 + 199 among them): route `post`, 404
    last = np.arange(len(starts)) % 10 == 9
    status[last] = 404
    route = np.where(last, "post", "feed")
    req = requests_frame(starts, durs, status, route=route)
    if native:
        lag = ((req["start_ns"] - ms) % NS) // (100 * MS) * 2 * MS
        req["scheduled_ns"] = req["start_ns"] - lag
    f = frame(repetition=repetition, start=ms, end=me, offered=202,
              expected_4xx={"post": 0.995})

    # containers: rows every second, unix a little late, over [ms - 2 s, me + 1 s]
    ticks = np.arange(0, 24)
    unix = ms - 2 * NS + ticks * NS + 10 * MS
    parts = []
    # replica-1: 0.125 cores steadily = 50 % of its 0.25 cap, on the monitors' clock; the
    # wall clock of its rows runs 1 % fast (a rate over `unix_ns` would read 49.5 %), and
    # no row crosses the measured phase's edges for it
    fast = ms - 2 * NS + (ticks * NS * 101) // 100 + 10 * MS
    parts.append(container_rows("feedbench-replica-1", "replica-1", ticks, fast,
                                1.0 + 0.125 * ticks, [200_000_000] * 24,
                                [100_000_000 + 1_000_000 * t for t in ticks],
                                monotonic=unix,
                                ws=[140_000_000 + 2_000_000 * t for t in ticks]))
    # replica-2: 0.05 cores (20 % of its cap); down at tick 10 (breaks the chain); a
    # counter reset without a down row at tick 15 (restarted between two reads)
    cpu2 = [2.0 + 0.05 * t for t in ticks]
    status2 = ["ok"] * 24
    status2[10] = "down"
    cpu2[10] = np.nan
    for t in range(15, 24):
        cpu2[t] = 0.05 * (t - 15)
    rss2 = [80_000_000] * 24
    rss2[10] = np.nan
    ws2 = [120_000_000] * 24
    ws2[10] = ws2[12] = np.nan
    parts.append(container_rows("feedbench-replica-2", "replica-2", ticks, unix, cpu2,
                                [150_000_000] * 24, rss2, status2, ws=ws2))
    for name, c in DEFAULT_CAPS.items():
        if c["role"].startswith("replica"):
            continue
        parts.append(container_rows(name, c["role"], ticks, unix, 0.02 * ticks,
                                    [30_000_000] * 24, [20_000_000] * 24))
    cont = interleave(parts)
    return write_run(root, f, req, cont, dropped=3, rss_column=rss_column,
                     working_set_column=working_set_column, route_column=route_column,
                     host=host_csv(unix))


RAMP_RATES = (10, 20, 30, 40, 50)


def ramp_requests(ms, rates, duration):
    """10 s steps at `rates` from `ms`, each request on its step's even grid; `duration(rate,
    i, step_start, start)` gives request i's duration in ms, or None for one not sent.
    Returns the frame's steps, the requests and the ramp's end."""
    starts, durs, steps = [], [], []
    t = ms
    for rate in rates:
        a, b = t, t + 10 * NS
        steps.append({"rate": rate, "start_ns": a, "end_ns": b, "offered_arrivals": rate * 10})
        gap = NS // rate
        for i in range(rate * 10):
            d = duration(rate, i, a, a + i * gap)
            if d is not None:
                starts.append(a + i * gap)
                durs.append(d)
        t = b
    return steps, requests_frame(starts, durs), t


def ramp_cpu(ms, rates, cores_per_rate):
    """The cumulative CPU seconds at unix ns `u` of a container using `cores_per_rate` cores
    per 1/s of each 10 s step's rate."""
    def cpu_at(u):
        total, tt = 0.0, ms
        for rate in rates:
            span = min(max(u - tt, 0), 10 * NS)
            total += span / 1e9 * cores_per_rate * rate
            tt += 10 * NS
        return total
    return cpu_at


def ramp_run(root, repetition=1):
    """Steps of 10 s at 10, 20, 30, 40, 50/s with a 5 s objective window (p99 ≤ 500 ms, 1 %).

    - step 20: one second holds 1 slow request of its 20 (every-second breaks, the 5 s
      windows of 100 requests do not);
    - step 40: 30 % of the second window's requests take 800 ms (p99 breaks);
    - step 50: only 90 % of the arrivals were sent (the throughput knee), all fast, no error.
    Saturation: objective-windows and p99-only 30 (breach 40), every-second 10 (breach 20),
    errors-only 50 not reached, throughput-knee 40 (breach 50).
    """
    ms = T0 + 5 * NS

    def duration(rate, i, a, s):
        if rate == 50 and i % 10 == 9:
            return None  # not sent
        if rate == 20 and i == 45:
            return 900.0
        if rate == 40 and i >= 200 and i % 10 < 3:
            return 800.0
        return 10.0 + (i % 7)

    steps, req, me = ramp_requests(ms, RAMP_RATES, duration)
    f = frame(profile="ramp", repetition=repetition, start=ms, end=me, offered=1500,
              steps=steps, window_ns=5 * NS)
    # replicas busier with each step: 0.02 cores per 10/s of rate
    cpu_at = ramp_cpu(ms, RAMP_RATES, 0.002)

    ticks = np.arange(0, 53)
    unix = ms - NS + ticks * NS
    parts = []  # every container: memory 10 MB, working set 7 MB, RSS 5 MB
    for name, c in DEFAULT_CAPS.items():
        cpu = [cpu_at(u) * (1.0 if c["role"].startswith("replica") else 0.5) for u in unix]
        parts.append(container_rows(name, c["role"], ticks, unix, cpu, [10_000_000] * 53,
                                    [5_000_000] * 53, ws=[7_000_000] * 53))
    return write_run(root, f, req, interleave(parts))


STALLED_RATES = tuple(range(20, 181, 20))


def stalled_ramp_run(root, repetition=1, confirm_steps=1):
    """A ramp of 10 s steps at 20, 40, …, 180/s (5 s objective window, p99 ≤ 500 ms, 1 %),
    stopped at its knee: a ramp to 200/s whose load stopped after the step at 180/s, the one
    confirming the breach at 160/s (frame.stopped set; the measured phase ends with 180/s).

    Every request is fast (10 + i mod 7 ms, none fails), except
    - step 80: every request starting in seconds 2.0–5.0 of the step takes 1000 ms (a 3 s
      stall of the host): its first 5 s window (and its seconds 2, 3 and 4) break the p99;
      the steps after it meet the objective again (a transient);
    - steps 160 and 180: 30 % of the requests take 800 ms, in every second (a real knee).

    Step verdicts under objective-windows, p99-only and every-second alike (the stall breaks
    one 5 s window and three 1 s windows of the same step, the knee every window of its
    steps): met at 20–60, breached at 80, met at 100–140, breached at 160 and 180. With
    confirm_steps 1 the breach at 80 is refuted by 100 and the one at 160 confirmed by 180:
    saturation 140, saturation_before_first_breach 60, first_breach 80, sustained_breach
    160, transient_steps 1. errors-only (nothing fails) and throughput-knee (every arrival
    sent) never breach: every reading `censored at the stop` (the last step, 180, for both
    saturations), transient_steps 0.

    `confirm_steps` None writes no field (as older run.json files): 0, every breach sustained,
    so saturation is 60 and sustained_breach 80, as the first breach; transient_steps 0.
    """
    ms = T0 + 5 * NS

    def duration(rate, i, a, s):
        if rate == 80 and a + 2 * NS <= s < a + 5 * NS:
            return 1000.0
        if rate >= 160 and i % 10 < 3:
            return 800.0
        return 10.0 + (i % 7)

    steps, req, me = ramp_requests(ms, STALLED_RATES, duration)
    stopped = {"breach_rate": 160.0, "last_rate": 180.0, "at_ns": me}
    f = frame(profile="stalled-ramp", repetition=repetition, start=ms, end=me,
              offered=sum(STALLED_RATES) * 10, steps=steps, window_ns=5 * NS,
              stopped=stopped, confirm_steps=confirm_steps)

    # replicas busier with each step: 0.001 cores per 1/s of rate (72 % of a 0.25 cap at 180/s)
    cpu_at = ramp_cpu(ms, STALLED_RATES, 0.001)

    n = len(STALLED_RATES) * 10 + 3
    ticks = np.arange(0, n)
    unix = ms - NS + ticks * NS
    parts = []
    for name, c in DEFAULT_CAPS.items():
        cpu = [cpu_at(u) * (1.0 if c["role"].startswith("replica") else 0.5) for u in unix]
        parts.append(container_rows(name, c["role"], ticks, unix, cpu, [10_000_000] * n,
                                    [5_000_000] * n, ws=[7_000_000] * n))
    return write_run(root, f, req, interleave(parts))


def fault_run(root, repetition=1, observe_s=60, injection="kill-replica", restart=True,
              fault="replica-kill", up_after_clear=None, bystander=True,
              target=True, up_s=2):
    """100/s with a kill at 60 s into the measured phase, cleared 5 s later.

    Request i (on a 10 ms grid from the warm-up's start) takes 1 + (i mod 100) ms, so every
    10 s window (1000 requests) has p95 95 and p99 99, as the control does. During the fault
    every request takes 1000 ms and seconds 2–3 of the fault hold 40 requests, second 4
    holds 85. 5 requests fail (502) at applied + 0.5 s. 100 extra requests (50 ms) start at
    cleared + 11.99 s: every recovery window holding that instant is above the control's
    throughput, so recovery from `cleared` is exactly 12.0 s; the replica back in service
    (health UP at cleared + 2 s) makes it 10.0 s from `restart`.

    `up_after_clear` (default: `restart`) writes that UP row without a restart: a replica
    marked DOWN while its database link is cut is UP again once it returns, yet a link fault
    has no `restart` origin (`not applicable`).

    `bystander`: replica-2, which the fault is not aimed at, is marked DOWN at applied + 1 s
    and UP at cleared + 1 s. A fault on replica-1 reads its own rows (detection 2.5 s, restart
    at cleared + 2 s); a link fault reads any replica's first DOWN: replica-2's, at 1.0 s.
    `target=False` leaves the target out of the frame, as run.json files written before it
    was recorded do: then any server's rows count.

    `up_s`: the target's UP comes this long after the clear. At 20 the service has recovered
    (through the other replica) 8 s before the replica is back: recovery from `restart` is
    −8.0 s, from `cleared` still 12.0 s.

    With `restart`, replica-1 is started again 300 ms before the clear (`replica-starting`)
    and its readiness probe (readiness.csv) asks every 100 ms from 10 ms after: refused,
    refused, 503, then 200, each answered in 5 ms: `time_to_ready`, from the first
    attempt to the end of the 200, is 0.305 s.
    """
    if up_after_clear is None:
        up_after_clear = restart
    warm = 10 * NS
    ms = T0 + warm
    applied = ms + 60 * NS
    cleared = applied + 5 * NS
    restart_at = applied + 3 * NS
    me = cleared + 60 * NS
    n = (me - T0) // (10 * MS) + 200
    i = np.arange(n)
    starts = T0 + i * 10 * MS
    durs = 1.0 + (i % 100)
    status = np.full(n, 200)
    keep = np.ones(n, dtype=bool)
    in_fault = (starts >= applied) & (starts < cleared)
    durs = np.where(in_fault, 1000.0, durs)
    sec = (starts - applied) // NS
    off = (starts - applied) % NS
    keep &= ~(((sec == 2) | (sec == 3)) & (off >= 400 * MS))  # 40 of 100 kept
    keep &= ~((sec == 4) & (off >= 850 * MS))  # 85 kept
    fail = np.flatnonzero(starts >= applied + 500 * MS)[:5]
    status[fail] = 502
    obs_fail = np.flatnonzero(starts >= cleared + 30 * NS)[:3]
    status[obs_fail] = 0
    starts, durs, status = starts[keep], durs[keep], status[keep]
    burst = np.full(100, cleared + 11_990 * MS)
    starts = np.concatenate([starts, burst])
    durs = np.concatenate([durs, np.full(100, 50.0)])
    status = np.concatenate([status, np.full(100, 200)])
    req = requests_frame(starts, durs, status)
    fw = {"name": fault, "injection": injection, "observe_ns": observe_s * NS}
    if target and injection in ("kill-replica", "stop-replica"):
        fw["server"] = "replica-1"
    f = frame(fault=fault, repetition=repetition, start=ms, end=me, offered=12500,
              window_ns=10 * NS, fault_window=fw)
    events = [
        (T0 - NS, -1.0, "phase", "measure", ""),
        (T0 - NS // 2, -0.5, "container-restarted", "feedbench-replica-1", "before the fault"),
        (applied, 70.0, "fault-applied", fault, f"{injection} replica-1"),
    ]
    if restart:
        events.append((restart_at, 73.0, "container-restarted", "feedbench-replica-1", ""))
        events.append((cleared - 300 * MS, 74.7, "replica-starting", "replica-1", ""))
    events.append((cleared, 75.0, "fault-cleared", fault, "replica-1"))
    events.append((cleared + 70 * NS, 145.0, "fault-applied", fault, "a second one, ignored"))
    health = [
        (applied - 20 * NS, "feed/replica-2", "DOWN"),
        (applied - 19 * NS, "feed/replica-2", "UP"),
        (applied + 2_500 * MS, "feed/replica-1", "DOWN"),
    ]
    if bystander:
        health.insert(2, (applied + 1 * NS, "feed/replica-2", "DOWN"))
        health.append((cleared + 1 * NS, "feed/replica-2", "UP"))
    if up_after_clear:
        health.append((cleared + up_s * NS, "feed/replica-1", "UP"))
    cont = simple_containers(ms, me)
    d = write_run(root, f, req, cont, events=events, health=health)
    if restart:
        starts = [cleared - 290 * MS + k * 100 * MS for k in range(4)]
        pd.DataFrame({
            "start_ns": starts, "end_ns": [t + 5 * MS for t in starts],
            "server": "replica-1", "status": [0, 0, 503, 200],
            "error": ["connect: refused", "connect: refused", "", ""],
        }).to_csv(d / "readiness.csv", index=False)
    return d


def findings_run(root, fault, injection):
    """100/s for 125 s measured after 10 s of warm-up, a fault 60 s in, cleared 5 s later,
    observed 60 s; every 4th request an `upload` (20 ms), the rest `feed` (10 ms).
    `db-cut`: every request during the cut is answered 503 in 20 ms. `store-latency`: the
    uploads during it take 170 ms, the feeds 10 ms as before. For the seeds' findings as
    checks (tests/plans/valid/findings.yaml)."""
    warm = 10 * NS
    ms = T0 + warm
    applied = ms + 60 * NS
    cleared = applied + 5 * NS
    me = cleared + 60 * NS
    i = np.arange((me - T0) // (10 * MS))
    starts = T0 + i * 10 * MS
    upload = i % 4 == 3
    durs = np.where(upload, 20.0, 10.0)
    status = np.full(len(i), 200)
    in_fault = (starts >= applied) & (starts < cleared)
    if fault == "db-cut":
        status[in_fault] = 503
        durs[in_fault] = 20.0
    elif fault == "store-latency":
        durs[in_fault & upload] = 170.0
    else:
        raise ValueError(fault)
    req = requests_frame(starts, durs, status, route=np.where(upload, "upload", "feed"))
    fw = {"name": fault, "injection": injection, "observe_ns": 60 * NS}
    f = frame(fault=fault, start=ms, end=me, offered=12500, window_ns=10 * NS,
              fault_window=fw)
    events = [
        (T0 - NS, -1.0, "phase", "measure", ""),
        (applied, 70.0, "fault-applied", fault, injection),
        (cleared, 75.0, "fault-cleared", fault, ""),
    ]
    return write_run(root, f, req, simple_containers(ms, me), events=events)


def findings_runs(root):
    """The runs tests/plans/valid/findings.yaml's checks read: a database cut, the kill
    (fault_run's: every request 1000 ms until replica-1 is marked DOWN 2.5 s in) and a slow
    object store."""
    return [
        findings_run(root, "db-cut", "link-down"),
        fault_run(root),
        findings_run(root, "store-latency", "link-latency"),
    ]


def big_run(root, n_requests=100_000, repetition=1, fault=True, seed=0, variant="indexed",
            scale=1.0):
    """A run of n_requests at 300/s with random latencies (times `scale`), for the benchmark
    and for comparisons of two arms."""
    rng = np.random.default_rng(seed + repetition)
    rate = 300
    warm = 30 * NS
    total = n_requests * NS // rate
    ms = T0 + warm
    me = T0 + total
    starts = T0 + np.sort(rng.integers(0, total, n_requests))
    durs = np.round(scale * rng.lognormal(3.0, 0.6, n_requests), 3)
    status = np.where(rng.random(n_requests) < 0.002, 503, 200)
    req = requests_frame(starts, durs, status)
    fw = None
    events, health = [], []
    fname = None
    if fault:
        applied = ms + (me - ms) // 3
        cleared = applied + 15 * NS
        fname = "replica-kill"
        fw = {"name": fname, "injection": "kill-replica", "observe_ns": 175 * NS}
        events = [(applied, 1.0, "fault-applied", fname, ""),
                  (applied + 5 * NS, 2.0, "container-restarted", "feedbench-replica-1", ""),
                  (cleared, 3.0, "fault-cleared", fname, "")]
        health = [(applied + 2 * NS, "feed/replica-1", "DOWN")]
    f = frame(variant=variant, fault=fname, repetition=repetition, start=ms, end=me,
              offered=(me - ms) * rate // NS, window_ns=60 * NS, fault_window=fw)
    cont = simple_containers(ms, me)
    return write_run(root, f, req, cont, events=events, health=health)


def schedule_run(root, profile, judged_by="by-schedule", dropped=None, late_ms=None):
    """A native run at 100/s, 30 s measured after 5 s of warm-up, objective p99 500 ms and
    1 % failed over 10 s windows; every request answered in 20 ms. `dropped`: second of the
    scenario → starts dropped in it (no row; the load summary counts them); `late_ms`:
    (first, last) second of the scenario whose requests started that many ms after their
    scheduled instant, as `(seconds, ms)`."""
    ms = T0 + 5 * NS
    me = ms + 30 * NS
    dropped = dropped or {}
    scheduled, starts = [], []
    for t in range(37):  # the scenario's seconds: warm-up, measured, 2 s after
        n = 100 - dropped.get(t, 0)
        lag = late_ms[1] * MS if late_ms and t in late_ms[0] else 0
        for j in range(n):
            at = T0 + t * NS + j * 10 * MS
            scheduled.append(at)
            starts.append(at + lag)
    req = requests_frame(starts, [20.0] * len(starts))
    req["scheduled_ns"] = np.array(scheduled, dtype=np.int64)[
        np.argsort(np.array(starts) + 20 * MS, kind="stable")]
    per_second = [dropped.get(t, 0) for t in range(max(dropped, default=-1) + 1)]
    f = frame(profile=profile, start=ms, end=me, offered=3000, window_ns=10 * NS,
              judged_by=judged_by)
    return write_run(root, f, req, simple_containers(ms, me), dropped=sum(per_second),
                     load={"generator": "native", "scenario_start_ns": int(T0),
                           "dropped_per_second": per_second})


def schedule_runs(root):
    """The runs that tell windows judged by schedule from windows judged by start: a 4 s
    stall of the generator (its starts dropped); 2 % of one window's starts dropped, judged
    by schedule and by start; requests of one window started 600 ms late."""
    stall = {t: 100 for t in range(17, 21)}
    two_percent = {t: 2 for t in range(5, 15)}
    return [
        schedule_run(root, "stall", dropped=stall),
        schedule_run(root, "drops", dropped=two_percent),
        schedule_run(root, "drops-by-start", judged_by=None, dropped=two_percent),
        schedule_run(root, "late", late_ms=(range(25, 35), 600)),
    ]


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="write the test scenarios, or big runs")
    ap.add_argument("root", type=Path)
    ap.add_argument("--big", type=int, default=0, help="write this many big runs instead")
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--arms", action="store_true",
                    help="write two arms (indexed, production 1.5x slower), 3 repetitions each")
    ap.add_argument("--findings", action="store_true",
                    help="write the runs of tests/plans/valid/findings.yaml instead")
    ap.add_argument("--schedule", action="store_true",
                    help="write the runs judged by schedule (dropped and late starts) instead")
    a = ap.parse_args()
    if a.schedule:
        for d in schedule_runs(a.root):
            print(d)
    elif a.findings:
        for d in findings_runs(a.root):
            print(d)
    elif a.arms:
        for variant, seed, scale in (("indexed", 0, 1.0), ("production", 7, 1.5)):
            for r in (1, 2, 3):
                print(big_run(a.root, 15_000, repetition=r, fault=False, seed=seed,
                              variant=variant, scale=scale))
    elif a.big:
        for r in range(a.big):
            print(big_run(a.root, a.requests, repetition=r + 1, fault=r % 2 == 0))
    else:
        for r in (1, 2, 3):
            print(constant_run(a.root, repetition=r, shift_ms=0.5 * (r - 1), native=r == 3))
        print(ramp_run(a.root))
        print(stalled_ramp_run(a.root))
        print(fault_run(a.root))
        print(fault_run(a.root, injection="link-down", restart=False, fault="db-cut",
                        up_after_clear=True))
        print(fault_run(a.root, fault="late-restart", up_s=20))
