#!/usr/bin/env python3
"""Drives fault-proxy with the toxiproxy-python client from PyPI.

The client was written for Toxiproxy by other people, so its working
against fault-proxy shows the API is compatible. Run by
tests/python_client.rs with FAULT_PROXY_API=host:port set; all traffic
stays on 127.0.0.1.
"""

import os
import socket
import sys
import threading
import time

from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

CHECKS = []
# A round trip without latency toxic: far below the 100 ms toxic, with room
# for a loaded machine.
FAST = 0.08


def check(name, condition, detail=""):
    CHECKS.append(name)
    if not condition:
        raise AssertionError(f"{name} failed {detail}")
    print(f"ok {len(CHECKS)} - {name}")


def echo_server():
    """A threaded echo server on a free loopback port; returns host:port."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def serve(conn):
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                conn.sendall(data)

    def accept():
        while True:
            conn, _ = listener.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return "127.0.0.1:%d" % listener.getsockname()[1]


def split(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def round_trip(addr, rounds=5):
    """Median seconds of `rounds` small echo round trips on one connection."""
    with socket.create_connection(split(addr), timeout=5) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.sendall(b"warm")
        conn.recv(16)
        times = []
        for _ in range(rounds):
            start = time.monotonic()
            conn.sendall(b"ping")
            got = b""
            while len(got) < 4:
                chunk = conn.recv(16)
                if not chunk:
                    raise ConnectionError("closed")
                got += chunk
            times.append(time.monotonic() - start)
        return sorted(times)[len(times) // 2]


def refused(addr):
    try:
        socket.create_connection(split(addr), timeout=1).close()
        return False
    except OSError:
        return True


def main():
    api_host, api_port = split(os.environ["FAULT_PROXY_API"])
    server = Toxiproxy()
    server.update_api_consumer(api_host, api_port)
    check("server running", server.running())
    check("version", b"version" in server.version(), repr(server.version()))

    upstream = echo_server()
    proxy = server.create(upstream=upstream, name="db", listen="127.0.0.1:0")
    listen = proxy.listen
    check("create proxy", proxy.name == "db" and proxy.enabled and not listen.endswith(":0"), listen)
    try:
        server.create(upstream=upstream, name="db")
        check("duplicate proxy raises", False)
    except ProxyExists:
        check("duplicate proxy raises", True)

    proxies = server.proxies()
    check("list proxies", list(proxies) == ["db"] and proxies["db"].upstream == upstream)
    check("get proxy", server.get_proxy("db").listen == listen)
    check("get missing proxy", server.get_proxy("nope") is None)

    base = round_trip(listen)
    check("forwarding works", base < FAST, f"{base:.4f}s")

    proxy.add_toxic(type="latency", attributes={"latency": 100})
    toxics = proxy.toxics()
    check("add latency toxic", list(toxics) == ["latency_downstream"])
    toxic = toxics["latency_downstream"]
    check(
        "toxic fields",
        toxic.type == "latency" and toxic.stream == "downstream"
        and toxic.toxicity == 1 and toxic.attributes["latency"] == 100,
        vars(toxic),
    )
    slow = round_trip(listen)
    check("latency toxic adds 100 ms", 0.1 <= slow < base + 0.19, f"{slow:.4f}s")
    try:
        proxy.add_toxic(type="latency", attributes={"latency": 5})
        check("duplicate toxic raises", False)
    except ProxyExists:
        check("duplicate toxic raises", True)
    try:
        proxy.add_toxic(type="no_such_toxic", name="x")
        check("invalid toxic raises", False)
    except InvalidToxic:
        check("invalid toxic raises", True)
    proxy.add_toxic(type="bandwidth", stream="upstream", toxicity=0.5, attributes={"rate": 1000})
    check("second toxic listed", sorted(proxy.toxics()) == ["bandwidth_upstream", "latency_downstream"])
    check("get toxic", proxy.get_toxic("bandwidth_upstream").toxicity == 0.5)

    check("remove toxic", proxy.destroy_toxic("latency_downstream"))
    check("toxic gone", proxy.get_toxic("latency_downstream") is None)
    fast = round_trip(listen)
    check("latency gone", fast < FAST, f"{fast:.4f}s")
    try:
        APIConsumer.delete("/proxies/db/toxics/latency_downstream")
        check("missing toxic raises", False)
    except NotFound:
        check("missing toxic raises", True)

    proxy.disable()
    check("disable refuses connections", refused(listen))
    check("disabled state listed", server.get_proxy("db").enabled is False)
    proxy.enable()
    check("enable restores", round_trip(listen) < FAST)
    with proxy.down():
        check("down() takes the link down", refused(listen))
    check("up again after down()", round_trip(listen) < FAST)

    proxy.add_toxic(type="timeout", attributes={"timeout": 0})
    proxy.disable()
    check("reset returns true", server.reset())
    check("reset removes toxics", proxy.toxics() == {})
    check("reset enables proxies", server.get_proxy("db").enabled and round_trip(listen) < FAST)

    created = server.populate([{"name": "cache", "upstream": upstream, "listen": "127.0.0.1:0"}])
    check("populate creates", len(created) == 1 and round_trip(created[0].listen) < FAST)
    check("destroy proxy", server.destroy(server.get_proxy("cache")))
    check("destroyed proxy gone", server.get_proxy("cache") is None)
    try:
        APIConsumer.get("/proxies/cache")
        check("missing proxy raises", False)
    except NotFound:
        check("missing proxy raises", True)
    server.destroy_all()
    check("destroy_all", server.proxies() == {} and refused(listen))
    print(f"toxiproxy-python compatibility: all {len(CHECKS)} checks ok")


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # noqa: BLE001 - report any failure, exit non-zero
        print(f"FAILED after {len(CHECKS)} checks: {exc!r}", file=sys.stderr)
        sys.exit(1)
