#!/usr/bin/python3
"""speakerd's reliability suite: hostile and heavy use of the release build, with figures.

Run through scripts/reliability [--short|--full]. Each check prints one line with its figure and
its bound; the run ends with a summary and exits 1 if any bound was violated. Every check runs
the real release binaries (or those in SPEAKERD_BIN_DIR) against the fake BlueZ
(scripts/fake-bluez with our dbusmock template), on private buses; the signal privacy check uses
Debian's own system.conf, run as root, with two real Unix users. The api-fuzz and cli-fuzz
checks live in api_fuzz.py. docs/RELIABILITY.md records the figures and the commands.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

import api_fuzz

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
RELEASE = os.path.join(ROOT, ".build", "release")
# SPEAKERD_BIN_DIR runs the suite against other binaries, such as the debug build's.
BINARIES = os.path.realpath(os.environ.get("SPEAKERD_BIN_DIR") or RELEASE)
SPEAKERD = os.path.join(BINARIES, "speakerd")
CLI = os.path.join(BINARIES, "composer-cli")
TEMPLATE = os.path.join(ROOT, "Tests", "FakeBlueZ", "speakerd_bluez.py")
FLIP = "11:22:33:AA:BB:CC"
PARAMETERS = json.dumps({"adapters": ["hci0"], "speakers": [{"adapter": "hci0", "address": FLIP, "alias": "JBL Flip 5"}]})
STATE = json.dumps({"version": 1, "speakers": [{"address": FLIP, "name": "JBL Flip 5", "firstConnected": "2027-01-01T08:00:00Z",
                                                 "lastConnected": "2027-01-15T08:00:00Z"}]})
CORPUS = os.environ.get("SPEAKERD_MIDI_CORPUS") or os.path.join(ROOT, "..", "shared", "corpus", "jazz-soft-midi")
NAME, PATH, IFACE = "io.speakerd.Daemon", "/io/speakerd/Daemon", "io.speakerd.Daemon1"

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
results = []


def report(name, figure, ok, command):
    results.append((name, figure, ok, command))
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {figure}", flush=True)


class FakeBus:
    """A private bus with the fake BlueZ (adapter hci0, the speaker), torn down on close."""

    def __init__(self):
        self.process = subprocess.Popen([os.path.join(ROOT, "scripts", "fake-bluez"), "--template", TEMPLATE,
                                         "--parameters", PARAMETERS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        self.address = self.process.stdout.readline().strip()
        if not self.address.startswith("unix:"):
            raise SystemExit("reliability: scripts/fake-bluez did not start")

    def command(self, line):
        """One scripts/fake-bluez command (e.g. restart-mock); raises unless it answers ok."""
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if answer != "ok":
            raise RuntimeError(f"fake-bluez {line!r}: {answer or 'no answer'}")

    def mock(self, method, *arguments):
        """A method of the mock BlueZ's control interface (AddAdapter, SetConnectBehavior, ...)."""
        connection = connect(self.address)
        try:
            return getattr(dbus.Interface(connection.get_object("org.bluez", "/org/bluez"), "org.bluez.Mock"), method)(*arguments)
        finally:
            connection.close()

    def speaker_connected(self, adapter="hci0"):
        """What the mock BlueZ says of the speaker's link (the world, not speakerd's view of it)."""
        connection = connect(self.address)
        try:
            device = connection.get_object("org.bluez", f"/org/bluez/{adapter}/dev_{FLIP.replace(':', '_')}")
            return bool(dbus.Interface(device, dbus.PROPERTIES_IFACE).Get("org.bluez.Device1", "Connected"))
        except dbus.exceptions.DBusException:
            return False
        finally:
            connection.close()

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


class Daemon:
    """The release speakerd on `bus`, with the descriptor limit its unit sets (LimitNOFILE=1024)."""

    def __init__(self, bus, directory, state=STATE, config=""):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        if state is not None:
            with open(os.path.join(directory, "state.json"), "w") as f:
                f.write(state)
        with open(os.path.join(directory, "speakerd.conf"), "w") as f:
            f.write(config)
        self.log = os.path.join(directory, "speakerd.log")
        self.process = subprocess.Popen(["prlimit", "--nofile=1024:1024", SPEAKERD, "--config", os.path.join(directory, "speakerd.conf"),
                                         "--state-dir", directory, "--bus", bus.address, "--audio-output", "null"],
                                        stderr=open(self.log, "w"))
        self.bus = bus

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process.poll() is None

    def fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def rss_kb(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def threads(self):
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def sample_peaks(self):
        """Samples RSS (KiB) and threads every 10 ms in a thread until the returned stop() is
        called; stop() returns (peak RSS, peak threads)."""
        peaks = {"rss": self.rss_kb(), "threads": self.threads()}
        done = threading.Event()

        def sample():
            while not done.is_set():
                try:
                    peaks["rss"] = max(peaks["rss"], self.rss_kb())
                    peaks["threads"] = max(peaks["threads"], self.threads())
                except (OSError, ValueError):
                    return
                time.sleep(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()

        def stop():
            done.set()
            sampler.join(timeout=5)
            return peaks["rss"], peaks["threads"]
        return stop

    def wait_ready(self, timeout=30):
        deadline = time.monotonic() + timeout
        api = None
        while time.monotonic() < deadline:
            try:
                api = api or interface(connect(self.bus.address))
                if str(api.Status(timeout=5)["Readiness"]) == "playbackReady":
                    return api
            except dbus.exceptions.DBusException:
                api = None
            time.sleep(0.02)
        raise SystemExit(f"reliability: speakerd was not ready within {timeout} s (log: {self.log})")

    def stop(self, sig=signal.SIGTERM):
        if self.alive():
            self.process.send_signal(sig)
        self.process.wait(timeout=30)


def connect(address):
    return dbus.bus.BusConnection(address)


def interface(connection):
    return dbus.Interface(connection.get_object(NAME, PATH, introspect=False), IFACE)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0


def run_loop_until(predicate, timeout):
    """Runs the GLib main loop until predicate() holds or timeout seconds pass."""
    context = GLib.MainContext.default()
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        context.iteration(True) if context.pending() else time.sleep(0.001)
    return predicate()


# ---------------------------------------------------------------------------------------------
def kill9_during_state_writes(bus, work, rounds):
    invalid = rewritten = 0
    for index in range(rounds):
        directory = os.path.join(work, f"kill9-{index}")
        daemon = Daemon(bus, directory)
        api = daemon.wait_ready()
        stop = threading.Event()

        def churn():  # every connection rewrites state.json (its lastConnected)
            try:
                while not stop.is_set():
                    api.Disconnect(timeout=10)
                    api.Connect(FLIP, timeout=10)
            except dbus.exceptions.DBusException:
                pass

        worker = threading.Thread(target=churn, daemon=True)
        worker.start()
        time.sleep(random.uniform(0.01, 0.3))
        daemon.stop(signal.SIGKILL)
        stop.set()
        worker.join(timeout=15)
        try:
            with open(os.path.join(directory, "state.json")) as f:
                state = json.load(f)
            assert state["version"] == 1 and all("address" in s for s in state["speakers"])
            rewritten += any(s["lastConnected"] != "2027-01-15T08:00:00Z" for s in state["speakers"])
        except Exception:
            invalid += 1
        shutil.rmtree(directory, ignore_errors=True)
    report("kill -9 during state writes", f"{rounds} kills ({rewritten} after the file had been rewritten), "
           f"{invalid} invalid state files (bound 0)", invalid == 0 and rewritten > 0,
           f"scripts/reliability --{'full' if rounds >= 200 else 'short'}")


def concurrent_status(bus, work, calls):
    daemon = Daemon(bus, os.path.join(work, "status"))
    daemon.wait_ready()
    connection = connect(bus.address)
    api = interface(connection)
    latencies, failures = [], []
    for _ in range(calls):
        started = time.monotonic()
        api.Status(reply_handler=lambda *_, s=started: latencies.append(time.monotonic() - s),
                   error_handler=lambda e: failures.append(str(e)), timeout=25)
    run_loop_until(lambda: len(latencies) + len(failures) == calls, 60)
    daemon.stop()
    p99 = percentile(latencies, 0.99) * 1000
    ok = not failures and len(latencies) == calls
    report("concurrent status calls", f"{calls} at once: {len(failures)} failures, p50 {percentile(latencies, 0.5) * 1000:.1f} ms, "
           f"p99 {p99:.1f} ms", ok, "scripts/reliability --short")


def fd_flood(bus, work, clients, per_client):
    daemon = Daemon(bus, os.path.join(work, "flood"))
    daemon.wait_ready()
    baseline = daemon.fds()
    connections = [connect(bus.address) for _ in range(clients)]
    pipes = []
    outcomes = {"busy": 0, "other": 0}
    peak = baseline

    def failed(error):
        outcomes["busy" if error.get_dbus_name() == "io.speakerd.Error.Busy" else "other"] += 1

    for connection in connections:
        api = interface(connection)
        for index in range(per_client):
            read_end, write_end = os.pipe()
            pipes += [read_end, write_end]
            api.Play(dbus.types.UnixFd(read_end), f"flood-{index}.mid", False, reply_handler=lambda *_: None,
                     error_handler=failed, timeout=60)
    total = clients * per_client
    run_loop_until(lambda: outcomes["busy"] + outcomes["other"] >= total - 128, 30)
    time.sleep(0.5)
    peak = max(peak, daemon.fds())
    on_bus = daemon.alive()
    try:
        status_ok = str(interface(connect(bus.address)).Status(timeout=10)["Readiness"]) == "playbackReady"
    except dbus.exceptions.DBusException:
        status_ok = False
    for connection in connections:
        connection.close()
    for fd in pipes:
        os.close(fd)
    time.sleep(1)
    after = daemon.fds() if daemon.alive() else -1
    daemon.stop()
    bound = baseline + 3 * 128 + 16
    ok = on_bus and status_ok and peak <= bound and daemon.process.returncode == 0 and after <= baseline + 4
    report("fd-exhaustion flood", f"{total} never-closing Plays from {clients} clients: {outcomes['busy']} Busy, daemon "
           f"{'on the bus' if on_bus and status_ok else 'GONE'}, fds {baseline} -> peak {peak} (bound {bound}) -> {after} after",
           ok, "scripts/reliability --short")


MIB = 1 << 20
READ_BUDGET_MIB = 64  # speakerd.conf's read_budget_mib default
QUEUE_MIB = 128       # max_queue_mib default


def byte_flood(bus, work, clients, per_client):
    """Many Plays whose pipes are filled to just under the 16 MiB song limit and never closed: the
    bytes they hold are bounded by the read budget, not by the request count."""
    daemon = Daemon(bus, os.path.join(work, "byte-flood"))
    daemon.wait_ready()
    time.sleep(0.5)
    idle = daemon.rss_kb()
    stop_sampling = daemon.sample_peaks()
    connections = [connect(bus.address) for _ in range(clients)]
    outcomes = {"busy": 0, "timed out": 0, "other": 0}
    writers, write_ends = [], []

    def fill(fd):  # blocks while the daemon does not read; ends when it closes its end
        chunk = b"M" * (1 << 16)
        left = 16 * MIB - 4096
        try:
            while left > 0:
                left -= os.write(fd, chunk[:min(left, len(chunk))])
        except OSError:
            pass

    def failed(error):
        name = error.get_dbus_name()
        outcomes["busy" if name == "io.speakerd.Error.Busy" else "timed out" if "did not finish" in str(error) else "other"] += 1

    started = time.monotonic()
    for connection in connections:
        api = interface(connection)
        for index in range(per_client):
            read_end, write_end = os.pipe()
            write_ends.append(write_end)
            writer = threading.Thread(target=fill, args=(write_end,), daemon=True)
            writer.start()
            writers.append(writer)
            api.Play(dbus.types.UnixFd(read_end), f"bytes-{index}.mid", False, reply_handler=lambda *_: None,
                     error_handler=failed, timeout=60)
            os.close(read_end)
    total = clients * per_client
    run_loop_until(lambda: sum(outcomes.values()) >= total, 40)
    took = time.monotonic() - started
    peak, threads = stop_sampling()
    for fd in write_ends:
        os.close(fd)
    for writer in writers:
        writer.join(timeout=5)
    alive = daemon.alive()
    try:
        status_ok = str(interface(connect(bus.address)).Status(timeout=10)["Readiness"]) == "playbackReady"
    except dbus.exceptions.DBusException:
        status_ok = False
    for connection in connections:
        connection.close()
    daemon.stop()
    bound = idle + (READ_BUDGET_MIB + 64) * 1024
    ok = alive and status_ok and peak <= bound and sum(outcomes.values()) == total and outcomes["busy"] > 0
    report("byte flood", f"{total} Plays of never-closed 16 MiB - 4 KiB pipes from {clients} connections: {outcomes['busy']} Busy, "
           f"{outcomes['timed out']} read until their time-out, {outcomes['other']} other, all answered in {took:.1f} s; "
           f"RSS idle {idle // 1024} MiB -> peak {peak // 1024} MiB (bound idle + {READ_BUDGET_MIB} + 64 = {bound // 1024} MiB); "
           f"peak threads {threads}", ok, "scripts/reliability --only bytes")
    return idle, peak, threads


def large_song(path, megabytes):
    """A valid format-0 MIDI file of about `megabytes` MB: note on/off pairs, explicit status
    bytes, a tick apart (about 3.75 million events for 15 MB, under the 4 million limit)."""
    body = bytearray()
    pair = bytes([0x00, 0x90, 60, 100, 0x01, 0x80, 60, 0])
    body += bytes([0x00, 0xFF, 0x51, 0x03, 0x07, 0xA1, 0x20])  # 500,000 us a quarter
    body += pair * ((megabytes * 1_000_000 - 40) // len(pair))
    body += bytes([0x00, 0xFF, 0x2F, 0x00])
    with open(path, "wb") as f:
        f.write(b"MThd" + (6).to_bytes(4, "big") + (0).to_bytes(2, "big") + (1).to_bytes(2, "big") + (480).to_bytes(2, "big"))
        f.write(b"MTrk" + len(body).to_bytes(4, "big") + body)
    return os.path.getsize(path)


def unit_memory_high_kb():
    """MemoryHigh= of systemd/speakerd.service, in KiB (the floods must stay under it)."""
    units = {"K": 1, "M": 1024, "G": 1024 * 1024}
    with open(os.path.join(ROOT, "systemd", "speakerd.service")) as f:
        for line in f:
            if line.startswith("MemoryHigh="):
                value = line.split("=", 1)[1].strip()
                return int(value[:-1]) * units[value[-1]]
    raise RuntimeError("systemd/speakerd.service has no MemoryHigh=")


def queue_flood(bus, work, plays):
    """One large valid song played, then queued again and again: the queue stops at its memory
    limit with Busy naming it, and the RSS stays bounded."""
    daemon = Daemon(bus, os.path.join(work, "queue-flood"))
    daemon.wait_ready()
    time.sleep(0.5)
    idle = daemon.rss_kb()
    song = os.path.join(work, "large.mid")
    size = large_song(song, 15)
    stop_sampling = daemon.sample_peaks()
    api = interface(connect(bus.address))
    accepted, refusals, other = 0, [], []
    started = time.monotonic()
    for index in range(plays):
        with open(song, "rb") as f:
            try:
                api.Play(dbus.types.UnixFd(f.fileno()), f"large-{index}.mid", index > 0, timeout=60)
                accepted += 1
            except dbus.exceptions.DBusException as error:
                (refusals if error.get_dbus_name() == "io.speakerd.Error.Busy" else other).append(str(error.get_dbus_message()))
    took = time.monotonic() - started
    peak, threads = stop_sampling()
    alive = daemon.alive()
    daemon.stop()
    named = all("max_queue_mib" in message or "max_queued_songs" in message for message in refusals)
    # The bound is the unit's own MemoryHigh=: sized for a full queue, a full read budget, the
    # song playing and a song being parsed (systemd/speakerd.service says how).
    bound = unit_memory_high_kb()
    ok = alive and not other and refusals and named and peak <= bound
    report("queue flood", f"{plays} Plays of one valid {size / MIB:.1f} MiB song (the first plays, the rest --queue): "
           f"{accepted - 1} queued, {len(refusals)} Busy naming the limit ({refusals[0][:110] if refusals else 'none'!r}), "
           f"{len(other)} other, in {took:.1f} s; RSS idle {idle // 1024} MiB -> peak {peak // 1024} MiB "
           f"(bound: the unit's MemoryHigh= {bound // 1024} MiB); peak threads {threads}",
           ok, "scripts/reliability --only queue")
    return idle, peak, threads


def concurrent_scans(bus, work, per_user, scan_seconds):
    """Scans from two clients at once share one discovery: each answers within its own scan's
    duration, and a Connect from the other client meanwhile is not held behind them."""
    daemon = Daemon(bus, os.path.join(work, "scans"), config=f"scan_seconds = {scan_seconds}\n")
    api = daemon.wait_ready()
    api.Disconnect(timeout=10)
    users = [connect(bus.address), connect(bus.address)]
    answers, failures = [], []
    started = time.monotonic()
    for user in users:
        for _ in range(per_user):
            asked = time.monotonic()
            interface(user).Scan(reply_handler=lambda *_, a=asked: answers.append(time.monotonic() - a),
                                 error_handler=lambda e: failures.append(str(e)), timeout=120)
    run_loop_until(lambda: False, 0.3)  # the scans are under way
    asked = time.monotonic()
    try:
        interface(users[1]).Connect("", timeout=30)
        connect_took = time.monotonic() - asked
    except dbus.exceptions.DBusException as error:
        connect_took = None
        failures.append(str(error))
    run_loop_until(lambda: len(answers) + len(failures) >= 2 * per_user, 60)
    total = time.monotonic() - started
    alive = daemon.alive()
    daemon.stop()
    slowest = max(answers) if answers else float("inf")
    ok = (alive and not failures and len(answers) == 2 * per_user and slowest <= scan_seconds + 1.0
          and connect_took is not None and connect_took < 2.0)
    report("concurrent scans", f"{2 * per_user} Scans from 2 connections with scan_seconds = {scan_seconds}: {len(answers)} answered, "
           f"{len(failures)} failed, slowest {slowest:.2f} s (bound {scan_seconds + 1.0:.1f} s), all in {total:.1f} s; the other "
           f"client's Connect meanwhile took {connect_took * 1000 if connect_took is not None else float('nan'):.0f} ms (bound 2,000 ms)",
           ok, "scripts/reliability --only scans")


def recovery(work):
    """Faults of the world, each ending in the user's outcome: speakerd ready again with the
    speaker connected as BlueZ itself reports it. One private bus per fault, so none inherits
    another's state."""

    def ready_and_connected(bus, api, adapter="hci0"):
        try:
            return str(api.Status(timeout=5)["Readiness"]) == "playbackReady" and bus.speaker_connected(adapter)
        except dbus.exceptions.DBusException:
            return False

    def wait_for(predicate, timeout):
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if predicate():
                return time.monotonic() - started
            time.sleep(0.02)
        return None

    def scenario(name, fault, adapter="hci0", bound=20):
        bus = FakeBus()
        daemon = Daemon(bus, os.path.join(work, "recovery-" + name.split()[0]))
        try:
            api = daemon.wait_ready()
            wait_for(lambda: ready_and_connected(bus, api), 15)
            began = time.monotonic()
            detail, fault_ok = fault(bus, api)
            ended = time.monotonic() - began
            took = wait_for(lambda: ready_and_connected(bus, api, adapter), bound)
            ok = took is not None and daemon.alive() and fault_ok
            figure = (f"ready with the speaker connected {(ended + took) * 1000:.0f} ms after the fault began "
                      f"({took * 1000:.0f} ms after it was over)" if took is not None
                      else f"NOT ready with the speaker connected within {bound} s (log: {daemon.log})")
            report(f"recovery: {name}", figure + (f"; {detail}" if detail else "") + f" (bound {bound} s)", ok,
                   "scripts/reliability --only recovery")
        finally:
            daemon.stop()
            bus.close()

    def restart_connected(bus, api):
        bus.command("restart-mock")  # comes back with the adapter and the speaker, not connected
        return None, True

    def restart_connecting(bus, api):
        device = f"/org/bluez/hci0/dev_{FLIP.replace(':', '_')}"
        bus.mock("SetConnectBehavior", dbus.ObjectPath(device), "hang")
        api.Disconnect(timeout=10)
        pending = []
        api.Connect("", timeout=30, reply_handler=lambda *_: pending.append("answered"),
                    error_handler=lambda error: pending.append(error.get_dbus_name()))
        run_loop_until(lambda: False, 0.5)  # the Connect is in flight, hanging in BlueZ
        bus.command("restart-mock")
        run_loop_until(lambda: pending, 15)
        return f"the user's Connect ended with {pending[0] if pending else 'no answer'}", bool(pending)

    def reindex(bus, api):
        bus.mock("RemoveAdapterWithDevices", "hci0")
        run_loop_until(lambda: False, 0.3)
        bus.mock("AddAdapter", "hci1", "box")
        bus.mock("AddSpeaker", "hci1", FLIP, "JBL Flip 5")
        return "hci0 removed, hci1 added with the speaker", True

    def hanging_connect(bus, api):
        device = f"/org/bluez/hci0/dev_{FLIP.replace(':', '_')}"
        bus.mock("SetConnectBehavior", dbus.ObjectPath(device), "hang")
        api.Disconnect(timeout=10)
        started = time.monotonic()
        outcome, latencies = [], []
        api.Connect("", timeout=60, reply_handler=lambda *_: outcome.append("answered"),
                    error_handler=lambda error: outcome.append(str(error.get_dbus_message())))
        while not outcome and time.monotonic() - started < 30:
            asked = time.monotonic()
            try:
                api.Status(timeout=5)
                latencies.append(time.monotonic() - asked)
            except dbus.exceptions.DBusException:
                latencies.append(5.0)
            run_loop_until(lambda: outcome, 0.2)
        given_up = time.monotonic() - started
        bus.mock("SetConnectBehavior", dbus.ObjectPath(device), "ok")
        bus.mock("ReleaseConnect", dbus.ObjectPath(device))
        api.Connect("", timeout=30)
        hang_ok = bool(outcome) and outcome[0] != "answered" and given_up < 15 and percentile(latencies, 0.99) < 1.0
        return (f"the hanging Connect failed after {given_up:.1f} s: {outcome[0] if outcome else 'no answer'!r}; "
                f"Status during the hang p99 {percentile(latencies, 0.99) * 1000:.0f} ms over {len(latencies)} calls; "
                f"then connected again"), hang_ok

    scenario("bluetoothd restart while connected", restart_connected)
    scenario("bluetoothd restart while connecting", restart_connecting)
    scenario("adapter re-index (hci0 -> hci1)", reindex, adapter="hci1")
    scenario("hanging Connect", hanging_connect)

    # Bus loss: the bus itself goes away. speakerd cannot serve without it, so it exits 75 at
    # once with one clear line and systemd's Restart= brings it back; "recovered" is that
    # restart on a new bus being ready.
    bus = FakeBus()
    daemon = Daemon(bus, os.path.join(work, "recovery-bus"))
    daemon.wait_ready()
    lost = time.monotonic()
    bus.close()
    try:
        status = daemon.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        status = None
        daemon.stop(signal.SIGKILL)
    exited = time.monotonic() - lost
    with open(daemon.log) as f:
        lines = [line.strip() for line in f if "D-Bus connection" in line or "bus" in line.lower() and "lost" in line.lower()]
    bus = FakeBus()
    restarted = time.monotonic()
    again = Daemon(bus, os.path.join(work, "recovery-bus"), state=None)
    try:
        api = again.wait_ready()
        ready = time.monotonic() - restarted
        connected = bus.speaker_connected()
    finally:
        again.stop()
        bus.close()
    ok = status == 75 and exited < 5 and bool(lines) and connected
    report("recovery: bus loss", f"speakerd exited {status} {exited * 1000:.0f} ms after the bus went away, logging "
           f"{lines[-1][:90] if lines else 'nothing'!r}; started again on a new bus (as systemd's Restart= does): ready "
           f"with the speaker connected in {ready * 1000:.0f} ms" if status is not None else "speakerd did not exit within 10 s",
           ok, "scripts/reliability --only recovery")


def connect_cycles(bus, work, cycles):
    daemon = Daemon(bus, os.path.join(work, "cycles"))
    api = daemon.wait_ready()
    failures = 0

    def cycle():
        nonlocal failures
        try:
            api.Disconnect(timeout=10)
            api.Connect("", timeout=30)
        except dbus.exceptions.DBusException:
            failures += 1

    for _ in range(20):  # warm-up: caches, first allocations
        cycle()
    rss0, fds0 = daemon.rss_kb(), daemon.fds()
    for _ in range(cycles):
        cycle()
    rss1, fds1 = daemon.rss_kb(), daemon.fds()
    daemon.stop()
    with open(daemon.log) as f:
        logind_lines = sum("no logind on the bus" in line for line in f)
    ok = failures == 0 and fds1 <= fds0 + 2 and rss1 - rss0 <= 4096 and logind_lines <= 1
    report("connect/disconnect cycles", f"{cycles} cycles: {failures} failures, RSS {rss0} -> {rss1} KiB ({rss1 - rss0:+d}, bound +4096), "
           f"fds {fds0} -> {fds1}, 'no logind' logged {logind_lines}x", ok, "scripts/reliability --short")


def mutated_midi(bus, work, count):
    seeds = sorted(os.path.join(CORPUS, f) for f in os.listdir(CORPUS) if f.endswith(".mid")) if os.path.isdir(CORPUS) else []
    if not seeds:
        report("mutated MIDI", f"no corpus at {CORPUS}", False, "scripts/reliability --short")
        return
    rng = random.Random(16)
    files = []
    for index in range(count):
        data = bytearray(open(rng.choice(seeds), "rb").read())
        for _ in range(rng.randint(1, 3)):  # mostly small damage, so many mutants still parse
            kind = rng.random()
            position = rng.randrange(22, len(data)) if len(data) > 22 else 0
            if kind < 0.75 and data:
                data[position] = rng.randrange(256)
            elif kind < 0.87:
                data[position:position] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            elif kind < 0.95:
                del data[position:position + rng.randint(1, 64)]
            else:
                data = data[:position]
        path = os.path.join(work, f"mutant-{index}.mid")
        with open(path, "wb") as f:
            f.write(data)
        files.append(path)

    def judge(run, elapsed, figures):
        if run is None or elapsed > 10:
            figures["hangs"] += 1
        elif run.returncode < 0 or run.returncode >= 128:
            figures["crashes"] += 1
        elif run.returncode == 0:
            figures["accepted"] += 1
        else:
            lines = run.stderr.decode(errors="replace").splitlines()
            if len(lines) != 1:
                figures["bad errors"] += 1

    render = {"crashes": 0, "hangs": 0, "bad errors": 0, "accepted": 0}
    output = os.path.join(work, "mutant.wav")
    for path in files:
        started = time.monotonic()
        try:
            run = subprocess.run([CLI, "render", path, "-o", output, "--max-duration", "300"], capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            run = None
        judge(run, time.monotonic() - started, render)
        if os.path.exists(output):
            os.unlink(output)
    accepted = render.pop("accepted")
    report("mutated MIDI through render", f"{count} files ({accepted} rendered, {count - accepted} refused): {render['crashes']} crashes, "
           f"{render['hangs']} hangs > 10 s, {render['bad errors']} failures not one line", not any(render.values()),
           "scripts/reliability --short")

    daemon = Daemon(bus, os.path.join(work, "mutated-play"))
    daemon.wait_ready()
    play = {"crashes": 0, "hangs": 0, "bad errors": 0, "accepted": 0}
    for path in files:
        started = time.monotonic()
        try:
            run = subprocess.run([CLI, "play", path, "--bus", bus.address], capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            run = None
        judge(run, time.monotonic() - started, play)
    alive = daemon.alive()
    daemon.stop()
    accepted = play.pop("accepted")
    ok = alive and daemon.process.returncode == 0 and not any(play.values())
    report("mutated MIDI through the daemon's Play", f"{count} files ({accepted} played, {count - accepted} refused): {play['crashes']} client crashes, {play['hangs']} hangs > 10 s, "
           f"{play['bad errors']} failures not one line, speakerd {'alive, exit 0' if ok else 'CRASHED or unclean'}", ok,
           "scripts/reliability --short")


def signal_privacy(work):
    """Debian's system.conf plus our policy, as root; the release speakerd serving on it (owning its
    name through a test-only policy for root), the fake BlueZ beside it, and two real users."""
    if os.geteuid() != 0:
        report("signal privacy", "needs root (a system bus dropping to messagebus, two Unix users)", False, "sudo scripts/reliability")
        return
    directory = tempfile.mkdtemp(prefix="speakerd-privacy-", dir="/tmp")
    os.chmod(directory, 0o755)
    created_group = subprocess.run(["getent", "group", "speakerd"], capture_output=True).returncode != 0
    if created_group:
        subprocess.run(["groupadd", "--system", "speakerd"], check=True)
    suffix = random.randrange(1_000_000)
    member, outsider = f"spkm{suffix}", f"spko{suffix}"
    subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", "-G", "speakerd", member], check=True)
    subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", outsider], check=True)
    processes = []
    try:
        config = open("/usr/share/dbus-1/system.conf").read()
        socket = os.path.join(directory, "bus")
        for old, new in [("<listen>unix:path=/run/dbus/system_bus_socket</listen>", f"<listen>unix:path={socket}</listen>"),
                         ("<pidfile>/run/dbus/pid</pidfile>", ""), ("<fork/>", ""), ("<standard_system_servicedirs/>", ""),
                         ("<includedir>system.d</includedir>", f"<includedir>{directory}/system.d</includedir>"),
                         ("<includedir>/etc/dbus-1/system.d</includedir>", "")]:
            config = config.replace(old, new)
        os.makedirs(os.path.join(directory, "system.d"))
        open(os.path.join(directory, "system.conf"), "w").write(config)
        shutil.copy(os.path.join(ROOT, "systemd", "dbus", "io.speakerd.Daemon.conf"), os.path.join(directory, "system.d"))
        open(os.path.join(directory, "system.d", "test.conf"), "w").write(
            '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" '
            '"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd"><busconfig><policy user="root">'
            '<allow own="io.speakerd.Daemon"/><allow own="org.bluez"/><allow send_destination="org.bluez"/></policy></busconfig>')
        shutil.copy(os.path.join(ROOT, "Tests", "Tools", "signal-listener.py"), directory)
        # Ready once it prints its address (after listen()); the socket file appears at bind().
        bus = subprocess.Popen(["dbus-daemon", f"--config-file={directory}/system.conf", "--nofork", "--nosyslog",
                                "--print-address=1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        processes.append(bus)
        address = f"unix:path={socket}"
        if not bus.stdout.readline().strip():
            raise RuntimeError("dbus-daemon exited before it listened")
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
        processes.append(subprocess.Popen(["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", TEMPLATE,
                                           "--parameters", PARAMETERS], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.5)
        listeners = []
        for user in (member, outsider):
            out = os.path.join(directory, f"{user}.out")
            listeners.append((subprocess.Popen(["setpriv", f"--reuid={user}", "--regid=nogroup", "--init-groups", "env", "-C", directory,
                                                "/usr/bin/python3", os.path.join(directory, "signal-listener.py"), address, "60"],
                                               stdout=open(out, "w"), stderr=subprocess.DEVNULL), out))
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not all(open(out).read().startswith("ready") for _, out in listeners):
            time.sleep(0.05)

        class Bus:
            pass
        bus = Bus()
        bus.address = address
        daemon = Daemon(bus, os.path.join(directory, "state"))
        daemon.wait_ready()
        # Listeners hear until told (see signal-listener.py), not for a window from their own
        # start: speakerd's start-up signals (its status changing) went out before READY.
        for process, _ in listeners:
            process.send_signal(signal.SIGUSR1)
        reports = []
        for process, out in listeners:
            process.wait(timeout=30)
            reports.append(json.loads(open(out).read().splitlines()[-1]))
        daemon.stop()
        heard, outside = reports
        ok = heard["signals"] > 0 and outside["signals"] == 0 and outside["introspect"] == "ok" and heard["status"] == "ok"
        report("signal privacy", f"member heard {heard['signals']} signals ({', '.join(heard['members'])}); outsider heard "
               f"{outside['signals']} (bound 0), introspect {outside['introspect']}, Status {outside['status'].split('.')[-1]}",
               ok, "sudo scripts/reliability --short")
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=10)
        subprocess.run(["userdel", member])
        subprocess.run(["userdel", outsider])
        if created_group:
            subprocess.run(["groupdel", "speakerd"])
        shutil.rmtree(directory, ignore_errors=True)


def fuzz(seconds):
    started = time.monotonic()
    run = subprocess.run([os.path.join(ROOT, "scripts", "fuzz-midi", "run"), str(seconds)], capture_output=True, text=True)
    runs = [line for line in run.stderr.splitlines() if line.startswith("Done ")]
    if run.returncode == 3:
        # The target did not build (scripts/fuzz-midi/run says why): not a crash, and not a pass.
        failure = next((line for line in run.stderr.splitlines() if line.startswith("fuzz-midi:")), "the fuzz target did not build")
        report("libFuzzer over the MIDI reader", failure, False, f"scripts/fuzz-midi/run {seconds}")
        return
    report("libFuzzer over the MIDI reader", f"{seconds} s: {'no crash' if run.returncode == 0 else 'CRASH (see .build/fuzz-midi)'}"
           f"{'; ' + runs[-1] if runs else ''} ({time.monotonic() - started:.0f} s with the build)", run.returncode == 0,
           f"scripts/fuzz-midi/run {seconds}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the by-hand figures (about 20 minutes)")
    parser.add_argument("--short", action="store_true", help="the CI figures (under 5 minutes; the default)")
    parser.add_argument("--only", help="run only the checks whose name contains this")
    full = parser.parse_args().full
    only = parser.parse_args().only
    for program in (SPEAKERD, CLI):
        if not os.access(program, os.X_OK):
            raise SystemExit(f"reliability: {program} is missing; run swift build -c release first"
                             f"{' (or point SPEAKERD_BIN_DIR at a build)' if BINARIES == RELEASE else ''}")
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="speakerd-reliability-")
    bus = FakeBus()
    checks = [
        ("kill9", lambda: kill9_during_state_writes(bus, work, 200 if full else 25)),
        ("status", lambda: concurrent_status(bus, work, 1000)),
        ("flood", lambda: fd_flood(bus, work, 10, 60)),
        ("bytes", lambda: byte_flood(bus, work, 8, 16)),
        ("queue", lambda: queue_flood(bus, work, 8)),
        ("scans", lambda: concurrent_scans(bus, work, 8, 3)),
        ("privacy", lambda: signal_privacy(work)),
        ("cycles", lambda: connect_cycles(bus, work, 2000 if full else 150)),
        ("recovery", lambda: recovery(work)),
        ("mutated", lambda: mutated_midi(bus, work, 200 if full else 60)),
        ("fuzz", lambda: fuzz(600 if full else 60)),
        ("api-fuzz", lambda: api_fuzz.api_fuzz(sys.modules[__name__], work, full)),
        ("cli-fuzz", lambda: api_fuzz.cli_fuzz(sys.modules[__name__], work, full)),
    ]
    try:
        for name, check in checks:
            if only and only not in name:
                continue
            try:
                check()
            except Exception as error:  # a broken check is a failed bound, never a silent pass
                traceback.print_exc()
                report(name, f"the check itself failed: {error!r}", False, "scripts/reliability")
    finally:
        bus.close()
        shutil.rmtree(work, ignore_errors=True)
    failed = [r for r in results if not r[2]]
    print(f"reliability ({'full' if full else 'short'}): {len(results) - len(failed)} passed, {len(failed)} failed "
          f"in {time.monotonic() - started:.0f} s", flush=True)
    sys.exit(1 if failed or not results else 0)


if __name__ == "__main__":
    main()
