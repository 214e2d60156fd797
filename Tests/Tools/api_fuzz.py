"""Generated hostile input for speakerd and composer-cli, two checks of the reliability suite.

api-fuzz: calls to every method of io.speakerd.Daemon1 (and the standard interfaces beside it)
with generated arguments, right and wrong types, concurrent from several connections and
threads, interleaved with real plays of corpus songs so that the live controls hit a playing
song. cli-fuzz: composer-cli run with generated argument vectors, every subcommand, hostile
values and hostile paths. Both are seeded (SPEAKERD_FUZZ_SEED) and print their seed.

Imported by reliability.py, whose harness (FakeBus, Daemon, report, the binaries) they use: each
check takes that module as `harness`. docs/RELIABILITY.md describes the checks and their bounds.
"""
import os
import random
import re
import shlex
import signal
import socket
import stat
import subprocess
import threading
import time
import xml.etree.ElementTree as ElementTree
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import dbus
import dbus.mainloop

ERROR_PREFIX = "io.speakerd.Error."
STANDARD = "org.freedesktop.DBus.Error."
INVALID_ARGS, UNKNOWN_METHOD = STANDARD + "InvalidArgs", STANDARD + "UnknownMethod"
UNKNOWN_INTERFACE, UNKNOWN_PROPERTY = STANDARD + "UnknownInterface", STANDARD + "UnknownProperty"
UNKNOWN_OBJECT, READ_ONLY = STANDARD + "UnknownObject", STANDARD + "PropertyReadOnly"
PROPERTIES, INTROSPECTABLE = "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Introspectable"

# The configuration both checks run speakerd with: scans short enough to be called often, and a
# play timeout well inside Play's 20 s answer window (a Play waiting for a speaker the user
# disconnected ends in 5 s), so that every reply comes within 20 s.
FUZZ_CONFIG = "scan_seconds = 2\nplay_timeout_seconds = 5\n"
SCAN_SECONDS = 2

# Reply timeouts, in seconds: each method's own bound (SpeakerdDBusObject.swift,
# SpeakerdDaemon+Control.swift), none over 20 s. A call still unanswered then is a hang.
QUICK = 10       # answered from memory, or a live control laid out again
LONG = 15        # Connect (10 s operation timeout), Disconnect, Forget (10 s BlueZ removal), Volume
PLAY = 20        # read the song (a pipe's writer closes within 1.5 s here), then wait ≤ play_timeout_seconds
TIMEOUTS = {"Scan": SCAN_SECONDS + 5, "Connect": LONG, "ConnectAnyDevice": LONG, "Disconnect": LONG, "Forget": 20,
            "ForgetKeepingPairing": 20, "Volume": LONG, "SetVolume": LONG, "Play": PLAY, "PlayArranged": PLAY}

TRAP_TEXT = ("Fatal error", "Swift/", "Illegal instruction", "Segmentation fault", "Stack dump", "Current stack trace",
             "Program crashed", "Aborted (core dumped)")


VERBOSE = bool(os.environ.get("SPEAKERD_FUZZ_VERBOSE"))  # every call or run and its outcome, one line each


def shell_line(argv):
    """argv as one shell line, very long arguments shortened."""
    return " ".join(shlex.quote(a if len(a) <= 80 else a[:40] + "…") for a in argv)


def seed_from_environment():
    text = os.environ.get("SPEAKERD_FUZZ_SEED", "").strip()
    return int(text) if text else int.from_bytes(os.urandom(3), "big")


def reproduce_command(check, seed):
    """The command that runs `check` again with `seed` (against the same binaries)."""
    if os.environ.get("SPEAKERD_BIN_DIR"):
        return (f"SPEAKERD_BIN_DIR={shlex.quote(os.environ['SPEAKERD_BIN_DIR'])} SPEAKERD_FUZZ_SEED={seed} "
                f"python3 Tests/Tools/reliability.py --only {check}")
    return f"SPEAKERD_FUZZ_SEED={seed} scripts/reliability --only {check}"


def short(value, limit=60):
    """A printable, bounded repr of an argument (long strings by their shape and length)."""
    if isinstance(value, FdKind):
        return f"<fd: {value.kind}>"
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:12]!r}…({len(value)} chars, {len(value.encode())} bytes)"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{short(k, 20)}: {short(v, 30)}" for k, v in list(value.items())[:8]) + \
            (", …" if len(value) > 8 else "") + "}"
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"[{', '.join(short(v, 20) for v in value[:4])}, … ({len(value)} items)]"
    text = repr(value)
    return text if len(text) <= limit + 10 else text[:limit] + "…"


# ---------------------------------------------------------------------------------------------
# Hostile values, shared by both checks

def hostile_texts(rng):
    """Strings of every kind the API and the command line may be sent (valid UTF-8, no NUL)."""
    return [
        "", " ", "\t", "\n", "-", "+", "--", ",,,", ",", "%", "bpm", "s", ":", "::", "-0", "+0", "-1", "0", "1",
        "99999999", "999999999", "9999999999", "99999999999999999999", "nan", "inf", "-inf", "NaN", "1e309", "-1e309",
        "1e-309", "0x10", "0b1", "1_000", "１２", "١٢", "\u200f12", "\u202e5-3", "\u200b", "é", "😀", "\u0301",
        "\x01\x02\x1b[2J", "\x7f", "%s%n%x", "../../etc/passwd", "off", "OFF", "Off ", "ü" * 128, "ü" * 129,
        "x" * 16, "x" * 17, "x" * 32, "x" * 33, "x" * 255, "x" * 256, "x" * 257, "x" * 4096, "x" * rng.choice([65536, 1 << 20]),
        "".join(chr(rng.choice([rng.randrange(0x20, 0x7f), rng.randrange(0xa0, 0xd7ff), rng.randrange(0xe000, 0xfffd),
                                rng.randrange(0x10000, 0x10ffff)])) for _ in range(rng.randint(1, 40))),
    ]


def position_texts(rng, bars=8):
    """Places in a song of `bars` bars as a person writes them, sane and not (BAR[:BEAT[:TICK]],
    SECONDSs): inside it, at its last bar, just past its end, far past it, malformed."""
    bar = rng.randint(1, bars)
    return ["1", "2", str(bar), str(bar), f"{bar}:2", f"{bar}:3:120", f"{rng.uniform(0, 2 * bars):.2f}s", str(bars),
            f"{bars}:4", str(bars + 1), f"{bars + 1}:1:1", f"{2 * bars:.0f}s", "0", "0:0", "0:0:0", "1:0",
            "1:1:0", "1:99", "1:1:99999", "999", "99999999", "999999999", "999999999:999999999:999999999", "1234567890",
            "0s", "-1s", "1e308s", "1e309s", "nans", "infs", "-0s", "0x10", "1:", ":1", "1::1", "1:2:3:4", "1.5",
            " 3 ", "３", "\u200f3", "3s ", "s", "1e-320s", "4.9e-324s", "0.0000001s", "1:1:2147483648"]


def loop_texts(rng, bars=8):
    """Sections A-B of a song of `bars` bars: forward, inverted, empty, past the end, malformed."""
    a, b = sorted((rng.randint(1, bars), rng.randint(1, bars)))
    return ["5-3", "10s-5s", "9-9", "0-0", "1-2", f"{a}-{b}", f"{a}-{b}", f"{b}-{a}", f"{b + 1}-{a}", f"{a}-{a}",
            f"{a}:3-{a}:2", f"{bars}-{bars + 1}", f"{bars + 1}-{bars + 3}", f"{a}s-{b}s", f"{b}s-{a}s", f"{a}:2-{b}:3",
            "3:4-3:2", "1:1-1:1", "2-1:1",
            "0s-0s", "1s-1.0000001s", "5s-3", "3-2s", "1-9999", "1-999999999", "0s-1e308s", "1e308s-1e309s",
            "0s-4.9e-324s", "off", "OFF", "Off", "-", "--", "1-2-3", "-1-2", "nan-inf", "1e309s-2s", "1 - 2",
            "\u200f1-2", "１-２", "999999999:999999999-999999999:999999999:999999999", "1:1:999999999-2"]


def tempo_texts(rng):
    return ["%", "bpm", "0bpm", "-5%", "400.0000001%", "400%", "10%", "9.9999%", "100%", "80%", "96bpm", "96BPM",
            "nan%", "inf%", "-inf%", "1e309%", "1e308%", "0x10%", "0x10bpm", "1e-300bpm", "4.9e-324bpm", "1e308bpm",
            "80 %", "%80", " 80%", "5e-324%", "0%", "-0%", "1e-9%", "999999999999bpm", "60bpm ", "٨٠%",
            f"{rng.uniform(5, 450):.3f}%", f"{rng.uniform(0, 1000):.3f}bpm"]


def transpose_texts(rng):
    return ["+0", "-0", "0", "48", "+48", "-48", "49", "-49", "12", "-12", "99999999999999999999", "-9223372036854775808",
            "9223372036854775807", "0x10", "+", "-", "++1", "--1", "nan", "1.5", " 2", "２", str(rng.randint(-60, 60))]


def part_texts(rng):
    return [",,,", "", "0", "1", "10", "16", "17", "-1", "99999999999999999999", "piano", "drums", "no such track",
            "1,2,,3", "1," * 200, "ü" * 30, "\u200fpiano", "Piano", " piano ", ",piano,", "9223372036854775807",
            "-9223372036854775808", ",".join(str(rng.randint(-3, 20)) for _ in range(rng.randint(1, 6)))]


def control_texts(rng, name, bars=8):
    pools = {"seek": lambda: position_texts(rng, bars) + ["+1", "-1", "+2", "+0", "-0", "+100000", "+100001", "-100000",
                                                    "+99999999999999999999", "+-1", "+ 1"],
             "loop": lambda: loop_texts(rng, bars), "tempo": lambda: tempo_texts(rng), "transpose": lambda: transpose_texts(rng),
             "mute": lambda: part_texts(rng), "solo": lambda: part_texts(rng), "unmute": lambda: ["", " ", "x", "all", "\t"]}
    return pools[name]() if name in pools else hostile_texts(rng)


ADDRESS = "11:22:33:AA:BB:CC"
LIVE_NAMES = ["seek", "loop", "tempo", "transpose", "mute", "solo", "unmute"]


def address_texts(rng):
    random_address = ":".join(f"{rng.randrange(256):02X}" for _ in range(6))
    return [ADDRESS, ADDRESS.lower(), random_address, "00:00:00:00:00:00", "FF:FF:FF:FF:FF:FF", "11:22:33:AA:BB:C",
            "11-22-33-AA-BB-CC", "112233AABBCC", "11:22:33:AA:BB:CC:DD", "", " " + ADDRESS, ADDRESS + " ",
            "GG:22:33:AA:BB:CC", "１1:22:33:AA:BB:CC", "::::::", "1:2:3:4:5:6", "x" * 32, "x" * 33, "x" * 4096]


def volume_texts(rng):
    return ["40", "+5", "-5", "", "+", "-", "101", "1000", "-1000", "+999", "+1000", "0x10", "1e3", " 4", "٤", "nan",
            "100", "0", "-0", "+0", "00040", "4 0", "+-5", str(rng.randint(-200, 200))]


def write_tiny_song(path):
    """A valid format-1 MIDI file of 4 bars of 4/4 at 240 BPM (4 s): a conductor track, a piano
    track named "piano" on channel 1 and a drum track named "drums" on channel 10."""
    def track(events):
        body = bytearray()
        for delta, data in events:
            value, stack = delta, [delta & 0x7F]
            while value > 0x7F:
                value >>= 7
                stack.append(0x80 | (value & 0x7F))
            body += bytes(reversed(stack)) + bytes(data)
        body += bytes([0x00, 0xFF, 0x2F, 0x00])
        return b"MTrk" + len(body).to_bytes(4, "big") + bytes(body)

    conductor = [(0, [0xFF, 0x51, 0x03, 0x03, 0xD0, 0x90]), (0, [0xFF, 0x58, 0x04, 0x04, 0x02, 0x18, 0x08])]
    piano = [(0, [0xFF, 0x03, 0x05] + list(b"piano")), (0, [0xC0, 0x00])]
    drums = [(0, [0xFF, 0x03, 0x05] + list(b"drums"))]
    for beat in range(16):  # a quarter note each: 400 ticks sounding, 80 silent
        note, drum = 60 + beat % 8, 36 if beat % 2 == 0 else 38
        piano += [(0 if beat == 0 else 80, [0x90, note, 90]), (400, [0x80, note, 0])]
        drums += [(0 if beat == 0 else 380, [0x99, drum, 100]), (100, [0x89, drum, 0])]
    with open(path, "wb") as f:
        f.write(b"MThd" + (6).to_bytes(4, "big") + (1).to_bytes(2, "big") + (3).to_bytes(2, "big") + (480).to_bytes(2, "big"))
        f.write(track(conductor) + track(piano) + track(drums))
    return path


# ---------------------------------------------------------------------------------------------
# Descriptors for `h`, made when a call is sent and closed on our side at once (dbus-python
# duplicates the descriptor into the message)

FD_KINDS = ["song", "song", "song", "tiny", "half", "at-eof", "empty-file", "random-bytes", "pipe-song", "pipe-trickle",
            "pipe-empty", "pipe-held", "fifo-no-writer", "dev-zero", "dev-null", "dev-urandom", "directory",
            "socket-song", "socket-silent", "write-only", "eventfd", "memfd-song", "proc-file"]


class FdKind:
    """A descriptor to send, by kind; `make()` opens it (with writer threads for the pipes)."""

    def __init__(self, kind, song, work, delay):
        self.kind, self.song, self.work, self.delay = kind, song, work, delay

    def __repr__(self):
        return f"<fd: {self.kind}>"

    def make(self):
        kind, song = self.kind, self.song
        data = open(song, "rb").read() if song else b""
        if kind in ("song", "tiny"):
            return os.open(song, os.O_RDONLY)
        if kind in ("half", "empty-file", "random-bytes"):
            path = os.path.join(self.work, f"{kind}-{threading.get_ident()}-{time.monotonic_ns()}.mid")
            with open(path, "wb") as f:
                f.write(data[:len(data) // 2] if kind == "half" else b"" if kind == "empty-file"
                        else random.Random(self.delay).randbytes(int(self.delay * 20000)))
            fd = os.open(path, os.O_RDONLY)
            os.unlink(path)
            return fd
        if kind == "at-eof":
            fd = os.open(song, os.O_RDONLY)
            os.lseek(fd, 0, os.SEEK_END)
            return fd
        if kind.startswith("pipe-"):
            read_end, write_end = os.pipe()
            threading.Thread(target=self._feed, args=(write_end, data), daemon=True).start()
            return read_end
        if kind == "fifo-no-writer":
            path = os.path.join(self.work, f"fifo-{threading.get_ident()}-{time.monotonic_ns()}")
            os.mkfifo(path)
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.unlink(path)
            return fd
        if kind.startswith("dev-"):
            return os.open("/dev/" + kind[4:], os.O_RDONLY)
        if kind == "directory":
            return os.open(self.work, os.O_RDONLY | os.O_DIRECTORY)
        if kind.startswith("socket-"):
            ours, theirs = socket.socketpair()
            sender = ours.detach()
            threading.Thread(target=self._feed, args=(sender, data if kind == "socket-song" else b""), daemon=True).start()
            return theirs.detach()
        if kind == "write-only":
            path = os.path.join(self.work, f"wo-{threading.get_ident()}-{time.monotonic_ns()}.mid")
            with open(path, "wb") as f:
                f.write(data)
            fd = os.open(path, os.O_WRONLY)
            os.unlink(path)
            return fd
        if kind == "eventfd":
            return os.eventfd(1)
        if kind == "memfd-song":
            fd = os.memfd_create("song")
            os.write(fd, data)
            os.lseek(fd, 0, os.SEEK_SET)
            return fd
        if kind == "proc-file":
            return os.open("/proc/self/status", os.O_RDONLY)
        raise ValueError(kind)

    def _feed(self, fd, data):
        """Writes a pipe's or socket's side as its kind says, then closes it (within 1.5 s)."""
        try:
            if self.kind in ("pipe-song", "socket-song"):
                os.write(fd, data)
            elif self.kind == "pipe-trickle":
                step = max(1, len(data) // 8)
                for start in range(0, len(data), step):
                    os.write(fd, data[start:start + step])
                    time.sleep(self.delay / 8)
            elif self.kind == "pipe-held":
                time.sleep(self.delay)
        except OSError:
            pass
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------------------------
# api-fuzz

class Call:
    """One method call to send: interface, member, signature and arguments (descriptors by kind),
    the standard error names its reply may carry, and its reply timeout."""

    def __init__(self, member, signature, args, interface=None, allowed=(INVALID_ARGS,), timeout=None, path=None,
                 wrong=False):
        self.member, self.signature, self.args = member, signature, list(args)
        self.interface = interface
        self.allowed = set(allowed)
        self.timeout = timeout or TIMEOUTS.get(member, QUICK)
        self.path = path
        self.wrong = wrong

    @property
    def ours(self):
        """A method of io.speakerd.Daemon1: its errors may be io.speakerd.Error.*."""
        return self.interface is None

    def __str__(self):
        where = "" if self.ours else f"{self.interface}."
        where += "" if self.path is None else f" at {self.path} "
        return f"{where}{self.member}[{self.signature}]({', '.join(short(a) for a in self.args)})"

    def materialize(self):
        """The arguments as sent (descriptors opened and wrapped) and the descriptors to close."""
        values, opened = [], []
        for arg in self.args:
            values.append(self._value(arg, opened))
        return values, opened

    def _value(self, arg, opened):
        if isinstance(arg, FdKind):
            fd = arg.make()
            opened.append(fd)
            return dbus.types.UnixFd(fd)
        if isinstance(arg, dict):
            return dbus.Dictionary({k: self._value(v, opened) for k, v in arg.items()}, signature="sv")
        return arg


class Outcome:
    def __init__(self, call, name=None, message="", elapsed=0.0, reply=None):
        self.call, self.name, self.message, self.elapsed, self.reply = call, name, message, elapsed, reply

    @property
    def acceptable(self):
        if self.name is None:
            return True
        return self.name in self.call.allowed or (self.call.ours and not self.call.wrong and self.name.startswith(ERROR_PREFIX))


class ApiGenerator:
    """Seeded calls: the daemon's methods from its own introspection, each with a generator of
    right-typed hostile arguments, plus wrong signatures, property access and unknown members."""

    def __init__(self, rng, bars, long_songs, tiny, work, methods, playing):
        self.rng, self.tiny, self.work = rng, tiny, work
        self.bars = bars  # {corpus song that plays: its bars}
        self.songs, self.long_songs = sorted(bars), long_songs
        self.methods = methods  # {name: input signature}, from Introspect
        self.playing = playing  # the song the last normal Play started

    def fd(self, song):
        return FdKind(self.rng.choice(FD_KINDS), song, self.work, self.rng.uniform(0.2, 1.5))

    def text(self):
        return self.rng.choice(hostile_texts(self.rng))

    def name(self):
        rng = self.rng
        return rng.choice(["", "song.mid", os.path.basename(rng.choice(self.songs)), "x" * 255, "x" * 256, "é" * 128,
                           "é" * 200, "\u202etxt.mid", "a/b/../c.mid", "\x1b[31mred", self.text()])

    def arrangement(self, bars=8):
        rng = self.rng
        texts = {"From": lambda: rng.choice(position_texts(rng, bars)), "To": lambda: rng.choice(position_texts(rng, bars)),
                 "Loop": lambda: rng.choice(loop_texts(rng, bars)), "Tempo": lambda: rng.choice(tempo_texts(rng)),
                 "Mute": lambda: rng.choice(part_texts(rng)), "Solo": lambda: rng.choice(part_texts(rng))}
        numbers = {"LoopCount": [0, 1, 2, 3, 1000, 1001, -1, 2**31 - 1, -2**31],
                   "Transpose": [0, 12, -12, 48, -48, 49, -49, 2**31 - 1, -2**31],
                   "CountIn": [0, 1, 4, 16, 17, -1, 2**31 - 1]}
        bag = {}
        for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4, 6])):
            key = rng.choice(list(texts) + list(numbers))
            if rng.random() < 0.12:  # the wrong type in the variant
                bag[key] = rng.choice([dbus.Int32(7), dbus.String("7"), dbus.UInt32(7), dbus.Double(7.5), dbus.Boolean(True),
                                       dbus.Array(["1"], signature="s"), dbus.Int64(2**40), dbus.Byte(7)])
            elif key in texts:
                bag[key] = dbus.String(texts[key]() if rng.random() < 0.9 else rng.choice(["x" * 256, "x" * 257, "é" * 129]))
            else:
                bag[key] = dbus.Int32(rng.choice(numbers[key]))
        if rng.random() < 0.08:
            bag[rng.choice(["", "from", "FROM", "Loop\u200f", "x" * 300, "Speed"])] = dbus.String("1")
        if rng.random() < 0.03:
            bag.update({f"K{i}": dbus.String("v") for i in range(2000)})
        return bag

    def right(self, member):
        """A call of `member` with its declared signature and generated hostile values."""
        rng, signature = self.rng, self.methods[member]
        if member == "Adjust":
            name = rng.choice(LIVE_NAMES * 6 +
                              ["", "SEEK", "seek\u200f", "x" * 256, "x" * 257, "Loop", "speed", self.text()])
            bars = self.bars.get(self.playing(), 8)
            value = rng.choice(control_texts(rng, name, bars)) if rng.random() < 0.92 else self.text()
            return Call(member, signature, [name, value])
        if member in ("Connect", "ConnectAnyDevice", "Forget", "ForgetKeepingPairing"):
            return Call(member, signature, [rng.choice(address_texts(rng))])
        if member == "SetVolume":
            return Call(member, signature, [rng.choice(volume_texts(rng) + [self.text()])])
        if member == "ScanFor":  # 4 to 300 would be a valid scan of that length: not sent
            return Call(member, signature, [dbus.UInt32(seconds := rng.choice([0, 1, 2, 301, 1000, 2**31, 2**32 - 1]))],
                        timeout=(seconds if 1 <= seconds <= 300 else 0) + 5)
        if member in ("Play", "PlayArranged"):
            song = rng.choice(self.songs) if rng.random() < 0.85 else self.tiny
            if rng.random() < 0.4:  # a real song, as a person plays it: the controls then act on it
                song = rng.choice(self.long_songs)
                args = [FdKind("song", song, self.work, 0), os.path.basename(song), dbus.Boolean(rng.random() < 0.15)]
            else:
                args = [self.fd(song), self.name(), dbus.Boolean(rng.random() < 0.3)]
            if member == "PlayArranged":
                args.append(self.arrangement(self.bars.get(song, 4)))
            return Call(member, signature, args)
        return Call(member, signature, [self.generic(code) for code in split_signature(signature)])

    def generic(self, code):
        """A value for a signature code no generator above knows (a method added later)."""
        rng = self.rng
        if code == "s":
            return self.text()
        if code == "h":
            return self.fd(rng.choice(self.songs))
        if code == "b":
            return dbus.Boolean(rng.random() < 0.5)
        if code in "yqut":
            bits = {"y": 8, "q": 16, "u": 32, "t": 64}[code]
            return {"y": dbus.Byte, "q": dbus.UInt16, "u": dbus.UInt32, "t": dbus.UInt64}[code](
                rng.choice([0, 1, 2, 2**bits - 1, rng.randrange(2**bits)]))
        if code in "nix":
            bits = {"n": 16, "i": 32, "x": 64}[code]
            return {"n": dbus.Int16, "i": dbus.Int32, "x": dbus.Int64}[code](rng.choice([0, -1, 1, -2**(bits - 1), 2**(bits - 1) - 1]))
        if code == "d":
            return dbus.Double(rng.choice([0.0, -1.0, 1e308, float("inf"), float("nan")]))
        if code == "a{sv}":
            return self.arrangement()
        if code == "as":
            return dbus.Array([self.text() for _ in range(rng.randint(0, 3))], signature="s")
        return self.text()

    def wrong(self, member):
        """A call of `member` with the wrong signature: none, an extra argument, other types."""
        rng, signature = self.rng, self.methods[member]
        codes = split_signature(signature)
        choice = rng.random()
        if choice < 0.25 and codes:
            codes, args = [], []
        elif choice < 0.45:
            extra = rng.choice(["s", "i", "h", "b"])
            args = [self.generic(c) for c in codes] + [self.generic(extra)]
            codes = codes + [extra]
        else:
            swaps = {"s": ["i", "u", "as", "v", "o", "ay"], "u": ["i", "s", "t", "d"], "h": ["u", "i", "s"],
                     "b": ["i", "s", "y"], "a{sv}": ["a{ss}", "as", "s", "a{si}"]}
            if not codes:
                codes, args = ["s"], [self.text()]
            else:
                index = rng.randrange(len(codes))
                codes = list(codes)
                codes[index] = rng.choice(swaps.get(codes[index], ["s", "i"]))
                args = [self.wrong_value(c) for c in codes]
        return Call(member, "".join(codes), args, wrong=True)

    def wrong_value(self, code):
        rng = self.rng
        if code == "v":
            return dbus.String(self.text(), variant_level=1)
        if code == "o":
            return dbus.ObjectPath(rng.choice(["/", "/io/speakerd/Daemon", "/a/b"]))
        if code == "ay":
            return dbus.ByteArray(rng.randbytes(rng.randint(0, 64)))
        if code == "a{ss}":
            return dbus.Dictionary({"From": "1"}, signature="ss")
        if code == "a{si}":
            return dbus.Dictionary({"LoopCount": 3}, signature="si")
        if code == "u":  # a number where a descriptor is expected, too: a non-fd for `h`
            return dbus.UInt32(rng.choice([0, 1, 2, 3, 255, 2**32 - 1]))
        return self.generic(code)

    def beside(self):
        """A call beside the daemon's own methods: properties, introspection, unknown members."""
        rng = self.rng
        names = ["Version", "Readiness", "Status", "Speaker", "Playback", "Volume", "", "Nope", "status", "x" * 300]
        interfaces = ["io.speakerd.Daemon1", "io.speakerd.Daemon2", "", "org.freedesktop.DBus.Properties"]
        props = (UNKNOWN_INTERFACE, UNKNOWN_PROPERTY, READ_ONLY, INVALID_ARGS, UNKNOWN_METHOD)
        choice = rng.random()
        if choice < 0.25:
            return Call("Get", "ss", [rng.choice(interfaces), rng.choice(names)], interface=PROPERTIES, allowed=props)
        if choice < 0.35:
            return Call("GetAll", "s", [rng.choice(interfaces)], interface=PROPERTIES, allowed=props)
        if choice < 0.5:
            value = rng.choice([dbus.String("playbackReady", variant_level=1), dbus.Int32(1, variant_level=1),
                                dbus.Dictionary({}, signature="sv", variant_level=1)])
            return Call("Set", "ssv", [rng.choice(interfaces), rng.choice(names), value], interface=PROPERTIES, allowed=props)
        if choice < 0.58:  # the wrong signature, or a member the interface does not have
            signature = rng.choice(["", "s", "i", "sss"])
            return Call(rng.choice(["Get", "Set", "GetAll", "Frob"]), signature,
                        [self.generic(code) for code in split_signature(signature)], interface=PROPERTIES, allowed=props)
        if choice < 0.7:
            return Call("Introspect", "", [], interface=INTROSPECTABLE, allowed=())
        if choice < 0.85:
            return Call(rng.choice(["Frobnicate", "status", "PLAY", "Play2", "Adjust_", "x" * 200]), "s", [self.text()],
                        interface="io.speakerd.Daemon1", allowed=(UNKNOWN_METHOD,))
        if choice < 0.93:
            return Call("Status", "", [], interface=rng.choice(["io.speakerd.Daemon2", "io.speakerd.Daemon1.X"]),
                        allowed=(UNKNOWN_INTERFACE, UNKNOWN_METHOD))
        return Call("Status", "", [], interface="io.speakerd.Daemon1", path=rng.choice(["/", "/io", "/io/speakerd/Daemon/x"]),
                    allowed=(UNKNOWN_METHOD, UNKNOWN_OBJECT))

    def race(self):
        """A playback call with a sane value, for two sent at the same moment."""
        rng = self.rng
        member = rng.choice(["Pause", "Resume", "Resume", "Stop", "Skip", "ClearQueue", "Adjust", "Adjust", "Play"])
        if member == "Adjust":
            bars = self.bars.get(self.playing(), 4)
            name = rng.choice(LIVE_NAMES)
            value = {"seek": lambda: rng.choice([str(rng.randint(1, bars)), "+1", "-1", "0.5s"]),
                     "loop": lambda: rng.choice([f"1-{max(1, bars - 1)}", "off", f"{bars}-1"]),
                     "tempo": lambda: rng.choice(["80%", "120%", "100%", "60bpm"]), "transpose": lambda: rng.choice(["2", "-3", "0"]),
                     "mute": lambda: rng.choice(["1", "10", "1,2"]), "solo": lambda: rng.choice(["1", "2,3"]),
                     "unmute": lambda: ""}[name]()
            return Call("Adjust", "ss", [name, value])
        if member == "Play":
            song = rng.choice(self.long_songs)
            return Call("Play", "hsb", [FdKind("song", song, self.work, 0), os.path.basename(song), dbus.Boolean(rng.random() < 0.3)])
        return Call(member, "", [])

    # Weights: live controls most (they must hit a playing song), then plays, then the rest.
    def next(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.10:
            return self.wrong(rng.choice(sorted(self.methods)))
        if roll < 0.15:
            return self.beside()
        available = lambda *names: [m for m in names if m in self.methods] or sorted(self.methods)
        if roll < 0.55:
            return self.right(rng.choice(available("Adjust")))
        if roll < 0.69:
            return self.right(rng.choice(available("Play", "PlayArranged")))
        if roll < 0.75:
            return self.right(rng.choice(available("Pause", "Resume")))
        if roll < 0.79:
            return self.right(rng.choice(available("Stop", "Skip", "ClearQueue")))
        return self.right(rng.choice(sorted(self.methods)))


def split_signature(signature):
    """Complete types of a signature: "hsba{sv}" -> ["h", "s", "b", "a{sv}"]."""
    codes, index = [], 0
    while index < len(signature):
        end = index
        while signature[end] == "a":
            end += 1
        if signature[end] in "({":
            depth, end = 0, end
            while True:
                depth += signature[end] in "({"
                depth -= signature[end] in ")}"
                end += 1
                if depth == 0:
                    break
        else:
            end += 1
        codes.append(signature[index:end])
        index = end
    return codes


class ApiFuzz:
    """One api-fuzz run: a daemon (restarted after a crash), its connections, and the tally."""

    def __init__(self, harness, work, seed, full):
        self.h, self.work, self.seed, self.full = harness, work, seed, full
        self.rng = random.Random(seed)
        self.lives = 0
        self.bus = self.daemon = None
        self.connections = []
        self.calls = self.abandoned = 0
        self.by_member = {}
        self.errors = {}
        self.crashes, self.hangs, self.wrong_names = [], [], []
        self.slowest = {}
        self.log = []  # (life, call text) of the calls sent, the latest last
        self.playing, self.last_song = None, "no song"  # what the last normal Play started
        self.burst_calls, self.burst_note = [], ""
        self.suspects = []  # this burst's replies that are neither a result nor an allowed error
        self.known_culprits = {}  # call text -> its crash record

    # The daemon's life ------------------------------------------------------------------------
    def start(self):
        self.lives += 1
        self.bus = self.h.FakeBus()
        self.daemon = self.h.Daemon(self.bus, os.path.join(self.work, f"api-fuzz-{self.lives}"), config=FUZZ_CONFIG)
        self.api = self.daemon.wait_ready()
        self.connections = [self.h.connect(self.bus.address) for _ in range(4)]
        self.baseline_fds = self.daemon.fds()

    def stop(self, sig=signal.SIGKILL):
        """Ends this life: SIGKILL for a daemon found wedged or already gone; the daemon's exit
        status (None if there was none)."""
        for connection in self.connections:
            try:
                connection.close()
            except dbus.exceptions.DBusException:
                pass
        self.connections = []
        status = None
        if self.daemon:
            self.daemon.stop(sig)
            status = self.daemon.process.returncode
        if self.bus:
            self.bus.close()
        self.daemon = self.bus = None
        return status

    def tail(self, lines=12):
        try:
            with open(self.daemon.log, errors="replace") as f:
                return [line.rstrip() for line in f.readlines()[-lines:]]
        except OSError:
            return []

    def death(self):
        """How the daemon ended: 'exit 1', 'signal 4 (SIGILL)'."""
        code = self.daemon.process.returncode
        if code is None:
            return "alive"
        if code < 0:
            return f"signal {-code} ({signal.Signals(-code).name})"
        return f"exit {code}"

    # Sending ------------------------------------------------------------------------------------
    def send_async(self, connection, call, outcomes):
        values, opened = call.materialize()
        started = time.monotonic()
        self.note(call)

        def replied(*reply):
            outcomes.append(Outcome(call, elapsed=time.monotonic() - started, reply=reply))

        def failed(error):
            outcomes.append(Outcome(call, error.get_dbus_name(), str(error.get_dbus_message() or "")[:200], time.monotonic() - started))
        try:
            connection.call_async(self.h.NAME, call.path or self.h.PATH, call.interface or self.h.IFACE, call.member,
                                  call.signature, values, replied, failed, timeout=call.timeout)
        except (TypeError, ValueError, dbus.exceptions.DBusException) as error:  # not marshallable: never sent
            outcomes.append(Outcome(call, "(not sent)", str(error)[:120]))
        finally:
            for fd in opened:
                os.close(fd)

    def send_blocking(self, connection, call):
        values, opened = call.materialize()
        started = time.monotonic()
        self.note(call)
        try:
            reply = connection.call_blocking(self.h.NAME, call.path or self.h.PATH, call.interface or self.h.IFACE, call.member,
                                             call.signature, values, timeout=call.timeout)
            return Outcome(call, elapsed=time.monotonic() - started, reply=reply)
        except dbus.exceptions.DBusException as error:
            return Outcome(call, error.get_dbus_name(), str(error.get_dbus_message() or "")[:200], time.monotonic() - started)
        except (TypeError, ValueError) as error:
            return Outcome(call, "(not sent)", str(error)[:120])
        finally:
            for fd in opened:
                os.close(fd)

    def note(self, call):
        self.log.append((self.lives, str(call)))
        del self.log[:-40]
        if call.member in ("Play", "PlayArranged") and call.args and isinstance(call.args[0], FdKind) and call.args[0].kind == "song":
            self.playing, self.last_song = call.args[0].song, os.path.basename(call.args[0].song)

    def tally(self, outcome):
        call = outcome.call
        if VERBOSE:
            print(f"        {outcome.elapsed:5.2f}s {str(call)[:200]} -> {outcome.name or 'ok'} {outcome.message[:120]}", flush=True)
        if outcome.name == "(not sent)":
            return
        self.calls += 1
        key = call.member if call.ours else f"{call.interface}.{call.member}"
        self.by_member[key] = self.by_member.get(key, 0) + 1
        self.slowest[key] = max(self.slowest.get(key, 0.0), outcome.elapsed)
        if outcome.name is None:
            return
        self.errors[outcome.name] = self.errors.get(outcome.name, 0) + 1
        if not outcome.acceptable:
            self.suspects.append(outcome)

    def gone(self, grace=0.0):
        """Whether the daemon has died, waiting up to `grace` s for it (a reply such as NoReply or
        ServiceUnknown may come a moment before the process is seen to end)."""
        try:
            self.daemon.process.wait(timeout=grace)
            return True
        except subprocess.TimeoutExpired:
            return False

    def judge_suspects(self):
        """After a burst: the unacceptable replies are part of a crash if the daemon died, else
        hangs (no reply within the call's timeout) or wrong error names. True if it died."""
        suspects, self.suspects = self.suspects, []
        if self.gone(3.0 if suspects else 0.0):
            return True
        for outcome in suspects:
            call = outcome.call
            if outcome.name == STANDARD + "NoReply":
                self.hangs.append((str(call), f"no reply within {call.timeout} s", self.last_song,
                                   [str(c) for c in self.burst_calls], self.burst_note))
            else:
                self.wrong_names.append((str(call), f"{outcome.name}: {outcome.message[:140]}"))
        return False

    # Keeping a song playing ---------------------------------------------------------------------
    def ensure_speaker(self):
        """The speaker connected again (after a Disconnect or Forget in the mix); re-added to the
        fake BlueZ if a Forget removed its pairing there."""
        try:
            status = self.api.Status(timeout=QUICK)
            if bool(status.get("Speaker", {}).get("Connected", False)):
                return
            self.api.Connect(ADDRESS, timeout=LONG)
        except dbus.exceptions.DBusException as error:
            if error.get_dbus_name() == ERROR_PREFIX + "UnknownDevice":
                self.bus.mock("AddSpeaker", "hci0", ADDRESS, "JBL Flip 5")
                try:
                    self.api.Connect(ADDRESS, timeout=LONG)
                except dbus.exceptions.DBusException:
                    pass

    def play_song(self, song):
        """A normal Play of a corpus song; its reply (a status), or the error's name."""
        self.playing, self.last_song = song, os.path.basename(song)
        with open(song, "rb") as f:
            try:
                return self.api.Play(dbus.types.UnixFd(f.fileno()), os.path.basename(song), False, timeout=PLAY)
            except dbus.exceptions.DBusException as error:
                return error.get_dbus_name()

    # Bursts ---------------------------------------------------------------------------------------
    def burst(self, generator, size):
        """A song started, then `size` generated calls: one after another (three bursts in ten),
        as races of two playback calls at the same moment (three in ten), or all fired at once over
        the connections and two threads, so that they land on a playing song. Returns the calls
        sent and whether they went one at a time (a crash is then the last one's)."""
        self.ensure_speaker()
        self.play_song(self.rng.choice(self.long_songs))
        mode = self.rng.choices(["in order", "races", "at once"], [3, 3, 4])[0]
        if mode == "races":
            return self.races(generator, max(1, size // 2))
        calls = [generator.next() for _ in range(size)]
        self.burst_calls = calls
        self.burst_note = "one after another" if mode == "in order" else "all at once from 4 connections and 2 threads"
        in_order = mode == "in order"
        outcomes = []
        if in_order:
            for call in calls:
                outcome = self.send_blocking(self.connections[0], call)
                outcomes.append(outcome)
                if self.gone(0.0 if outcome.acceptable else 3.0):
                    break
        else:
            threaded = [c for c in calls if self.rng.random() < 0.25]
            collected = []
            workers = [threading.Thread(target=self.thread_calls, args=(threaded[i::2], collected), daemon=True) for i in range(2)]
            for worker in workers:
                worker.start()
            sent = 0
            for call in calls:
                if call in threaded:
                    continue
                self.send_async(self.rng.choice(self.connections), call, outcomes)
                sent += 1
                if self.rng.random() < 0.3:  # a little spacing, so some land mid-change
                    self.h.run_loop_until(lambda: False, self.rng.uniform(0, 0.05))
            calls += self.depart(generator)
            self.h.run_loop_until(lambda: len(outcomes) >= sent or not self.daemon.alive(), PLAY + 1)
            if not self.daemon.alive():
                self.h.run_loop_until(lambda: len(outcomes) >= sent, 2)
            for worker in workers:
                worker.join(timeout=PLAY + 2)
            outcomes += collected
        for outcome in outcomes:
            self.tally(outcome)
        return calls, in_order

    def races(self, generator, rounds):
        """Rounds of two playback calls sent at the same moment on two connections, some after a
        Pause; each round judged on its own, so a hang or crash names its two calls."""
        for _ in range(rounds):
            before = [Call("Pause", "", [])] if self.rng.random() < 0.5 else []
            pair = [generator.race(), generator.race()]
            self.burst_calls = before + pair
            self.burst_note = f"{'after a Pause, ' if before else ''}two calls at the same moment on two connections"
            for call in before:
                self.tally(self.send_blocking(self.connections[0], call))
            outcomes = []
            for connection, call in zip(self.connections, pair):
                self.send_async(connection, call, outcomes)
            self.h.run_loop_until(lambda: len(outcomes) >= 2 or not self.daemon.alive(), max(c.timeout for c in pair) + 1)
            for outcome in outcomes:
                self.tally(outcome)
            if self.suspects:
                return before + pair, False
            if self.rng.random() < 0.3:
                self.play_song(self.rng.choice(self.long_songs))
        return self.burst_calls, False

    def thread_calls(self, calls, collected):
        connection = dbus.bus.BusConnection(self.bus.address, mainloop=dbus.mainloop.NULL_MAIN_LOOP)
        try:
            for call in calls:
                collected.append(self.send_blocking(connection, call))
        finally:
            connection.close()

    def depart(self, generator):
        """A caller that leaves the bus mid-call (its requests must be cancelled, not crash);
        the calls it left, for a replay."""
        left = []
        if self.rng.random() < 0.4:
            connection = self.h.connect(self.bus.address)
            for _ in range(self.rng.randint(1, 3)):
                left.append(generator.right(self.rng.choice(
                    [m for m in ("Play", "PlayArranged", "Scan", "Connect", "Adjust") if m in generator.methods])))
                self.send_async(connection, left[-1], [])
                self.abandoned += 1
            self.h.run_loop_until(lambda: False, self.rng.uniform(0, 0.2))
            connection.close()
        return left

    def culprit(self, calls, song):
        """After a crash in a concurrent burst: the burst replayed one call at a time on a fresh
        daemon playing the same song; the first call after which it is gone, or None."""
        self.start()
        self.ensure_speaker()
        self.play_song(song)
        for call in calls:
            outcome = self.send_blocking(self.connections[0], call)
            self.tally(outcome)
            if self.gone(0.0 if outcome.acceptable else 3.0):
                self.suspects = []
                return call
        self.judge_suspects()
        return None

    def crashed(self, calls, in_order, song):
        """The daemon died in a burst: which call killed it (the last one sent, in order; else the
        first a one-at-a-time replay dies on, unless the burst holds a call that killed it
        before), recorded once per call with a count; then a fresh daemon."""
        death, tail, last = self.death(), self.tail(), [text for life, text in self.log if life == self.lives][-6:]
        known = next((str(c) for c in calls if str(c) in self.known_culprits), None)
        if in_order:
            culprit = last[-1] if last else None
        elif known:
            culprit = known
        else:
            self.stop()
            found = self.culprit(calls, song)
            culprit = str(found) if found else None
            if found:
                death, tail = self.death(), self.tail()
        # One record per kind of call: "Adjust('loop', '5-3')" and "Adjust('loop', '10-9')" are one.
        kind = re.sub(r"\d+", "N", culprit) if culprit else None
        record = next((r for r in self.crashes if kind and r["kind"] == kind), None)
        if record:
            record["count"] += 1
            if culprit not in record["examples"]:
                record["examples"].append(culprit)
        else:
            trap = next((line for line in tail if any(marker in line for marker in TRAP_TEXT)), tail[-1] if tail else "")
            record = {"call": culprit, "kind": kind, "examples": [culprit] if culprit else [], "death": death,
                      "song": os.path.basename(song or "no song"), "trap": trap, "tail": tail,
                      "last": last if culprit is None else [], "count": 1}
            self.crashes.append(record)
        if culprit:
            self.known_culprits[culprit] = record
        self.stop()
        self.start()

    # The run --------------------------------------------------------------------------------------
    def songs(self):
        corpus = self.h.CORPUS
        return sorted(os.path.join(corpus, f) for f in os.listdir(corpus) if f.endswith(".mid")) if os.path.isdir(corpus) else []

    def introspect(self):
        xml = self.connections[0].call_blocking(self.h.NAME, self.h.PATH, INTROSPECTABLE, "Introspect", "", [], timeout=QUICK)
        methods = {}
        for interface in ElementTree.fromstring(str(xml)).iter("interface"):
            if interface.get("name") != self.h.IFACE:
                continue
            for method in interface.iter("method"):
                methods[method.get("name")] = "".join(a.get("type") for a in method.iter("arg") if a.get("direction", "in") == "in")
        return methods

    def run(self):
        songs = self.songs()
        if not songs:
            return None
        tiny = write_tiny_song(os.path.join(self.work, "tiny.mid"))
        self.start()
        methods = self.introspect()
        durations, bars = {}, {}
        for song in songs:  # which corpus songs play, for how long, in how many bars
            reply = self.play_song(song)
            if not isinstance(reply, str):
                playback = reply.get("Playback", {})
                durations[song] = float(playback.get("DurationSeconds", 0))
                bars[song] = int(playback.get("MusicalPosition", {}).get("Bars", 4))
        self.api.Stop(timeout=QUICK)
        if not bars:
            bars[tiny] = 4
        self.long_songs = [s for s in sorted(durations, key=durations.get) if durations[s] >= 8] or sorted(bars)[-5:]
        generator = ApiGenerator(self.rng, bars, self.long_songs, tiny, self.work, methods, lambda: self.playing)
        budget = 600 if self.full else 40
        bursts = 2000 if self.full else 60
        started = time.monotonic()
        done = 0
        while done < bursts and time.monotonic() - started < budget:
            calls, in_order = self.burst(generator, self.rng.randint(6, 24))
            done += 1
            if self.judge_suspects():
                self.crashed(calls, in_order, self.playing)
                continue
            try:
                self.api.Status(timeout=QUICK)
            except dbus.exceptions.DBusException as error:
                # Alive but not answering: wedged. Counted as a hang, then a fresh daemon.
                self.hangs.append(("Status after the burst", f"{error.get_dbus_name()}", self.last_song,
                                   [str(c) for c in self.burst_calls], self.burst_note))
                self.stop()
                self.start()
        # The end: the daemon still answers, and a normal song still plays.
        self.ensure_speaker()
        final_status = final_play = False
        try:
            final_status = str(self.api.Status(timeout=QUICK)["Readiness"]) == "playbackReady"
        except dbus.exceptions.DBusException:
            pass
        reply = self.play_song(self.long_songs[0])
        final_play = not isinstance(reply, str) and str(reply.get("Playback", {}).get("State", "")) == "playing"
        # Every descriptor the fuzzing sent is given back once its calls are over and it is idle.
        try:
            self.api.Stop(timeout=QUICK)
        except dbus.exceptions.DBusException:
            pass
        fds = (self.baseline_fds, None)
        if self.daemon.alive():
            self.h.run_loop_until(lambda: self.daemon.fds() <= self.baseline_fds + 4, 5)
            fds = (self.baseline_fds, self.daemon.fds())
        alive = self.daemon.alive()
        status = self.stop(signal.SIGTERM)
        return {"bursts": done, "methods": methods, "took": time.monotonic() - started, "final_status": final_status,
                "final_play": final_play, "alive": alive, "exit": status, "budget_hit": done < bursts, "fds": fds}


def api_fuzz(harness, work, full):
    seed = seed_from_environment()
    command = reproduce_command("api-fuzz", seed)
    fuzz = ApiFuzz(harness, os.path.join(work, "api-fuzz"), seed, full)
    os.makedirs(fuzz.work, exist_ok=True)
    try:
        result = fuzz.run()
    finally:
        fuzz.stop()
    if result is None:
        harness.report("api-fuzz", f"no corpus at {harness.CORPUS}", False, command)
        return
    methods = result["methods"]
    ours = [m for m in methods if m in fuzz.by_member]
    missed = sorted(set(methods) - set(fuzz.by_member))
    beside = sum(n for m, n in fuzz.by_member.items() if m not in methods)
    errors = sum(fuzz.errors.values())
    named = sum(n for name, n in fuzz.errors.items() if name.startswith(ERROR_PREFIX))
    allowed = {INVALID_ARGS, UNKNOWN_METHOD, UNKNOWN_INTERFACE, UNKNOWN_PROPERTY, UNKNOWN_OBJECT, READ_ONLY}
    standard = {name.rsplit(".", 1)[1]: n for name, n in fuzz.errors.items() if name in allowed}
    lost = errors - named - sum(standard.values()) - len(fuzz.wrong_names)  # NoReply and the like: the crashes and hangs
    crashes = sum(crash["count"] for crash in fuzz.crashes)
    for crash in fuzz.crashes:
        print(f"      api-fuzz CRASH ({crash['count']}x): speakerd {crash['death']} on "
              f"{crash['call'] or 'a concurrent burst (not reproduced one call at a time)'} while {crash['song']} played; "
              f"{crash['trap'][:200]!r}", flush=True)
        for example in crash["examples"][1:4]:
            print(f"        also: {example[:200]}", flush=True)
        for line in (crash["last"] or [])[-6:]:
            print(f"        sent before: {line[:200]}", flush=True)
        for line in crash["tail"][-4:]:
            print(f"        stderr: {line[:200]}", flush=True)
    shown = set()
    for call, what, song, before, note in fuzz.hangs:
        count = sum(1 for hang in fuzz.hangs if hang[0] == call)
        if call in shown:
            continue
        shown.add(call)
        print(f"      api-fuzz HANG ({count}x): {call[:200]}: {what} (while {song} played), in a burst sent {note}:", flush=True)
        for line in before:
            print(f"        {line[:200]}", flush=True)
    for call, what in fuzz.wrong_names[:10]:
        print(f"      api-fuzz WRONG ERROR: {call[:160]} -> {what}", flush=True)
    slow = sorted(fuzz.slowest.items(), key=lambda item: -item[1])[:3]
    before, after = result["fds"]
    ok = (not fuzz.crashes and not fuzz.hangs and not fuzz.wrong_names and not missed and result["alive"]
          and result["final_status"] and result["final_play"] and result["exit"] == 0
          and after is not None and after <= before + 4)
    figure = (f"seed {seed}: {fuzz.calls} calls to {len(ours)} of {len(methods)} methods (+{beside} to properties, "
              f"introspection and unknown members; {fuzz.abandoned} more left by callers leaving the bus) in {result['bursts']} "
              f"bursts over {result['took']:.0f} s{' (time budget reached)' if result['budget_hit'] else ''}: "
              f"{crashes} crashes ({len(fuzz.crashes)} distinct; bound 0), {len(fuzz.hangs)} hangs (bound 0; reply timeouts "
              f"10 s, Scan 7 s, Connect/Disconnect/Volume 15 s, Forget/Play 20 s), {errors} errors: {named} io.speakerd.Error.*, "
              f"{', '.join(f'{n} {k}' for k, n in sorted(standard.items())) or 'no standard ones'}, "
              f"{len(fuzz.wrong_names)} of other names (bound 0){f', {lost} lost to the crashes and hangs' if lost else ''}; "
              f"{'missed ' + ', '.join(missed) + '; ' if missed else ''}"
              f"afterwards Status {'answered' if result['final_status'] else 'NOT answered'}, a Play "
              f"{'accepted' if result['final_play'] else 'NOT accepted'}, descriptors {before} -> {after} once idle "
              f"(bound +4), exit {result['exit']} on SIGTERM; slowest {', '.join(f'{m} {t:.1f} s' for m, t in slow)}"
              f"{'; speakerd restarted ' + str(fuzz.lives - 1) + 'x' if fuzz.lives > 1 else ''}")
    harness.report("api-fuzz", figure, ok, command)


# ---------------------------------------------------------------------------------------------
# cli-fuzz

LIVE = LIVE_NAMES
DAEMON_COMMANDS = ["play", "stop", "pause", "resume", "status", "scan", "connect", "disconnect", "forget", "speakers",
                   "startup", "doctor", "volume", "queue", "skip", "clear"] + LIVE


# The labels of hostile paths (CliPaths and the options taking a file), by which findings are grouped.
PATH_LABELS = {"directory", "fifo", "dev-zero", "dev-null", "missing", "random-bytes", "empty", "half", "symlink-loop",
               "link-to-dir", "proc-file", "empty-path", "long-path", "long-name", "dash", "dev-stdin", "unicode",
               "out-directory", "out-fifo", "out-missing-dir", "out-under-file", "out-empty", "out-long-name", "out-proc",
               "out-root", "out-input", "sf-missing", "sf-directory", "sf-fifo", "sf-dev-zero", "sf-random", "sf-empty",
               "sf-midi", "config-fifo", "config-directory", "config-dev-zero", "config-missing", "config-garbage",
               "config-midi", "config-empty", "state-file", "state-fifo", "state-missing", "state-dev-null", "state-relative",
               "state-empty", "svg-dash", "bus-empty", "bus-word", "bus-missing", "bus-fifo", "bus-file", "bus-tcp-refused",
               "bus-abstract", "bus-junk", "bus-long"}


class CliPaths:
    """The hostile paths of the cli-fuzz run, made once in its directory."""

    def __init__(self, work, tiny, songs):
        self.work, self.tiny, self.songs = work, tiny, songs
        j = lambda *parts: os.path.join(work, *parts)
        os.makedirs(j("dir.mid"), exist_ok=True)
        for name in ("fifo.mid", "fifo.wav", "fifo.svg", "fifo.conf", "fifo.sf2"):
            self.fifo(name)
        with open(j("random.mid"), "wb") as f:
            f.write(random.Random(7).randbytes(3000))
        open(j("empty.mid"), "wb").close()
        with open(j("file"), "w") as f:
            f.write("a regular file\n")
        with open(j("garbage.conf"), "wb") as f:
            f.write(b"scan_seconds = \xff\xfe\n[[[\n= =\nbus = unix:path=\n" + b"x" * 5000 + b"\n")
        with open(j("random.sf2"), "wb") as f:
            f.write(b"RIFF" + (1 << 31).to_bytes(4, "little") + b"sfbk" + random.Random(8).randbytes(2000))
        if not os.path.lexists(j("loop.mid")):
            os.symlink(j("loop.mid"), j("loop.mid"))
            os.symlink(j("dir.mid"), j("link-to-dir.mid"))
        with open(j("half.mid"), "wb") as f:
            data = open(tiny, "rb").read()
            f.write(data[:len(data) // 2])

    def fifo(self, name):
        """The FIFO `name` in the run's directory, made again if a run wrote a file in its place
        (render and startup --svg may replace their output)."""
        path = os.path.join(self.work, name)
        if not (os.path.lexists(path) and stat.S_ISFIFO(os.lstat(path).st_mode)):
            if os.path.lexists(path):
                os.unlink(path)
            os.mkfifo(path)
        return path

    def input(self, rng):
        """A song to read: (label, path)."""
        j = lambda name: os.path.join(self.work, name)
        return rng.choice([("tiny", self.tiny)] * 8 + [("song", rng.choice(self.songs))] * 2 + [
            ("directory", j("dir.mid")), ("fifo", self.fifo("fifo.mid")), ("dev-zero", "/dev/zero"), ("dev-null", "/dev/null"),
            ("missing", j("missing.mid")), ("random-bytes", j("random.mid")), ("empty", j("empty.mid")),
            ("half", j("half.mid")), ("symlink-loop", j("loop.mid")), ("link-to-dir", j("link-to-dir.mid")),
            ("proc-file", "/proc/self/status"), ("empty-path", ""), ("long-path", "/" + "x/" * 2100 + "a.mid"),
            ("long-name", j("y" * 300 + ".mid")), ("dash", "-"), ("dev-stdin", "/dev/stdin"), ("unicode", j("\u202eém😀.mid"))])

    def output(self, rng, index, extension=".wav"):
        """A file to write: (label, path)."""
        j = lambda name: os.path.join(self.work, name)
        return rng.choice([("out", j(f"out-{index}{extension}"))] * 6 + [
            ("out-directory", j("dir.mid")), ("out-fifo", self.fifo("fifo" + extension)), ("out-missing-dir", j(f"nodir/x{extension}")),
            ("out-under-file", j(f"file/x{extension}")), ("out-empty", ""), ("out-long-name", j("z" * 300 + extension)),
            ("out-proc", f"/proc/x{extension}"), ("out-root", "/"), ("out-input", j("copy-of-tiny.mid"))])


class CliGenerator:
    def __init__(self, rng, paths, bus_address):
        self.rng, self.paths, self.address = rng, paths, bus_address

    def common(self):
        rng, args, labels = self.rng, [], []
        if rng.random() < 0.95:
            args += ["--bus", self.address]
        else:
            label, value = rng.choice([("bus-empty", ""), ("bus-word", "x"), ("bus-missing", "unix:path=/nonexistent/bus"),
                                       ("bus-fifo", "unix:path=" + os.path.join(self.paths.work, "fifo.conf")),
                                       ("bus-file", "unix:path=" + os.path.join(self.paths.work, "file")),
                                       ("bus-tcp-refused", "tcp:host=127.0.0.1,port=1"), ("bus-abstract", "unix:abstract=nosuch"),
                                       ("bus-junk", "=:"), ("bus-junk", "a:b=c"), ("bus-long", "unix:path=" + "x" * 5000)])
            args += ["--bus", value]
            labels.append(label)
        if rng.random() < 0.3:
            args.append("--json")
        return args, labels

    def arrangement(self, for_render, bars=4):
        """The composer's controls, a few at a time, for a song of `bars` bars (the tiny song's 4)."""
        rng, args, labels = self.rng, [], []
        options = {"--from": lambda: rng.choice(position_texts(rng, bars)), "--to": lambda: rng.choice(position_texts(rng, bars)),
                   "--loop": lambda: rng.choice(loop_texts(rng, bars)), "--tempo": lambda: rng.choice(tempo_texts(rng)),
                   "--transpose": lambda: rng.choice(transpose_texts(rng)), "--mute": lambda: rng.choice(part_texts(rng)),
                   "--solo": lambda: rng.choice(part_texts(rng)),
                   "--loop-count": lambda: rng.choice(["0", "1", "2", "1000", "1001", "-1", "99999999999999999999", "x", ""]),
                   "--count-in": lambda: rng.choice(["0", "1", "16", "17", "-1", "99999999999999999999", "x", ""])}
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            option = rng.choice(list(options))
            value = options[option]()
            if option == "--loop-count" and for_render and value in ("1000",):
                value = "2"  # a thousand passes of a song would be a long render, not a hang
            # "-1" after an option is read as an option: mostly written --option=-1, as a person must.
            args += [option + "=" + value] if rng.random() < (0.7 if value.startswith("-") else 0.2) else [option, value]
            labels.append(option.lstrip("-"))
        return args, labels

    def junk(self):
        rng = self.rng
        if rng.random() < 0.15:
            token = rng.choice(["--bogus", "-", "--", "-x", "--json=1", "--bus", "--from", "-o", "--help", "-h", "--version",
                                "\u202e", "x" * 10000, "--=", "-" * 300, "--tempo=", rng.choice(hostile_texts(rng))])
            return [token], ["junk"]
        return [], []

    def argv(self, index):
        """One command line: (argv without the program, the labels of its hostile parts, the
        subcommand, the key its findings are grouped by)."""
        rng = self.rng
        sub = rng.choice(DAEMON_COMMANDS + ["render"] * 6 + ["play"] * 3 + ["startup", "doctor"] + LIVE +
                         ["help", "--help", "--version", "", "plya", "rendr", "x" * 300, "-x"])
        args, labels = [], []
        if sub == "render":
            label, path = self.paths.input(rng)
            out_label, out = self.paths.output(rng, index)
            if rng.random() < 0.5:  # one hostile part at most: the rest as a person writes it
                if rng.random() < 0.5:
                    label, path = rng.choice([("tiny", self.paths.tiny), ("song", rng.choice(self.paths.songs))])
                else:
                    out_label, out = "out", os.path.join(self.paths.work, f"out-{index}.wav")
            args += [path, "-o", out]
            labels += [label, out_label]
            if rng.random() < 0.15:
                sf_label, sf = rng.choice([("sf-missing", "/nonexistent.sf2"), ("sf-directory", self.paths.work),
                                           ("sf-fifo", os.path.join(self.paths.work, "fifo.sf2")), ("sf-dev-zero", "/dev/zero"),
                                           ("sf-random", os.path.join(self.paths.work, "random.sf2")), ("sf-empty", ""),
                                           ("sf-midi", self.paths.tiny)])
                args += ["--soundfont", sf]
                labels.append(sf_label)
            if rng.random() < 0.2:
                value = rng.choice(["0", "-1", "nan", "inf", "1e309", "0x10", "1e-300", "4.9e-324", "99999999999999999999",
                                    "", "x", "1", "-inf"])
                args += ["--max-duration=" + value] if value.startswith("-") else ["--max-duration", value]
                labels.append("max-duration")
            else:  # a render of at most 2 minutes of audio: a few seconds of work
                args += ["--max-duration", "120"]
            more, more_labels = self.arrangement(for_render=True)
            args, labels = args + more, labels + more_labels
        elif sub == "play":
            files = [self.paths.input(rng) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
            args += [path for _, path in files]
            labels += [label for label, _ in files]
            if rng.random() < 0.3:
                args.append("--queue")
            more, more_labels = self.arrangement(for_render=False)
            if rng.random() < 0.15 and all(label == "tiny" for label, _ in files) and not more:
                args.append("--wait")  # a 4 s song followed to its end
            args, labels = args + more, labels + more_labels
        elif sub in LIVE:
            for _ in range(rng.choice([0, 1, 1, 1, 2])):
                args.append(rng.choice(control_texts(rng, sub)))
            labels.append("value")
        elif sub == "volume":
            args += [rng.choice(volume_texts(rng)) for _ in range(rng.choice([0, 1, 1, 2]))]
        elif sub == "scan":
            if rng.random() < 0.6:
                value = rng.choice(["1", "2", "0", "301", "-1", "99999999999999999999", "nan", "1e3", "", "x"])
                args += ["--duration", value]
                labels.append("duration" if value not in ("1", "2") else "")
            if rng.random() < 0.3:
                args.append("--all")
        elif sub in ("connect", "forget"):
            if sub == "forget" or rng.random() < 0.8:
                args.append(rng.choice(address_texts(rng)))
            if rng.random() < 0.3:
                args.append("--force" if sub == "connect" else "--keep-pairing")
        elif sub == "startup":
            if rng.random() < 0.8:
                label, path = rng.choice([("svg-out", os.path.join(self.paths.work, f"chart-{index}.svg")), ("svg-dash", "-")]
                                         + [self.paths.output(rng, index, ".svg")] * 3)
                args += ["--svg", path]
                labels.append(label)
        elif sub == "doctor":
            j = lambda name: os.path.join(self.paths.work, name)
            if rng.random() < 0.6:
                label, path = rng.choice([("config-fifo", j("fifo.conf")), ("config-directory", j("dir.mid")),
                                          ("config-dev-zero", "/dev/zero"), ("config-missing", j("missing.conf")),
                                          ("config-garbage", j("garbage.conf")), ("config-midi", self.paths.tiny), ("config-empty", "")])
                args += ["--config", path]
                labels.append(label)
            if rng.random() < 0.4:
                label, path = rng.choice([("state-file", j("file")), ("state-fifo", j("fifo.conf")), ("state-missing", j("nostate")),
                                          ("state-dev-null", "/dev/null"), ("state-relative", "relative/dir"), ("state-empty", "")])
                args += ["--state-dir", path]
                labels.append(label)
        elif sub == "help":
            args.append(rng.choice(["render", "play", "nosuch", "", "help", "loop"]))
        if sub in DAEMON_COMMANDS:
            more, more_labels = self.common()
            args, labels = args + more, labels + more_labels
        more, more_labels = self.junk()
        position = rng.randint(0, len(args))
        args[position:position] = more
        labels += more_labels
        # An argument is at most MAX_ARG_STRLEN (128 KiB) long: longer ones are cut to 100,000 bytes.
        argv = ([sub] if sub else []) + [a if len(a.encode()) <= 100_000 else a.encode()[:100_000].decode(errors="ignore") for a in args]
        # What a finding is known by: the first hostile path it was given (a FIFO, a directory...),
        # or when none, all its hostile parts.
        paths = [label for label in labels if label in PATH_LABELS]
        labels = sorted(set(label for label in labels if label))
        return argv, labels, sub or "(none)", (sub or "(none)", tuple(paths[:1]) or tuple(labels))


def judge_cli(run):
    """What a finished run shows: None when it is fine, else (kind, detail)."""
    if run["timed out"]:
        return "hang", f"no exit within {run['limit']} s (killed)"
    code, stderr = run["code"], run["stderr"]
    trap = next((line for line in stderr.splitlines() if any(marker in line for marker in TRAP_TEXT)), None)
    if code < 0 or code >= 128:
        how = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit {code}"
        return "crash", how + (f": {trap.strip()[:200]}" if trap else "")
    if trap:
        return "trap text", trap.strip()[:200]
    if code != 0 and not any(line.strip() for line in stderr.splitlines()):
        return "silent failure", f"exit {code} with nothing on stderr"
    return None


def cli_fuzz(harness, work, full):
    seed = seed_from_environment()
    command = reproduce_command("cli-fuzz", seed)
    rng = random.Random(seed)
    directory = os.path.join(work, "cli-fuzz")
    os.makedirs(directory, exist_ok=True)
    corpus = harness.CORPUS
    songs = sorted(os.path.join(corpus, f) for f in os.listdir(corpus) if f.endswith(".mid")) if os.path.isdir(corpus) else []
    tiny = write_tiny_song(os.path.join(directory, "tiny.mid"))
    with open(os.path.join(directory, "copy-of-tiny.mid"), "wb") as f:
        f.write(open(tiny, "rb").read())
    paths = CliPaths(directory, tiny, songs or [tiny])
    state = {"bus": None, "daemon": None, "lives": 0}

    def start():
        state["lives"] += 1
        state["bus"] = harness.FakeBus()
        state["daemon"] = harness.Daemon(state["bus"], os.path.join(directory, f"daemon-{state['lives']}"), config=FUZZ_CONFIG)
        state["api"] = state["daemon"].wait_ready()

    def stop():
        if state["daemon"]:
            state["daemon"].stop()
        if state["bus"]:
            state["bus"].close()
        state["daemon"] = state["bus"] = None

    def keep_playing():
        """A song playing for the live controls to act on, and the speaker connected for the rest."""
        api = state["api"]
        try:
            status = api.Status(timeout=QUICK)
            if not bool(status.get("Speaker", {}).get("Connected", False)):
                try:
                    api.Connect(ADDRESS, timeout=LONG)
                except dbus.exceptions.DBusException as error:
                    if error.get_dbus_name() == ERROR_PREFIX + "UnknownDevice":
                        state["bus"].mock("AddSpeaker", "hci0", ADDRESS, "JBL Flip 5")
                        api.Connect(ADDRESS, timeout=LONG)
            if str(status.get("Playback", {}).get("State", "")) != "playing" and songs:
                with open(rng.choice(songs), "rb") as f:
                    api.Play(dbus.types.UnixFd(f.fileno()), "background.mid", False, timeout=PLAY)
        except dbus.exceptions.DBusException:
            pass

    def execute(argv, index):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=state["bus"].address, DBUS_SESSION_BUS_ADDRESS=state["bus"].address)
        started = time.monotonic()
        try:  # in a session of its own, so that a hang is killed with anything it started
            process = subprocess.Popen([harness.CLI] + argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, cwd=directory, env=env, start_new_session=True)
        except OSError as error:  # could not be started (the binary being relinked, say): not a finding
            return {"not started": f"{error.strerror or error}"}
        try:
            _, stderr = process.communicate(timeout=20)
            return {"code": process.returncode, "stderr": stderr.decode(errors="replace"), "timed out": False,
                    "elapsed": time.monotonic() - started, "limit": 20}
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            _, stderr = process.communicate()
            return {"code": None, "stderr": stderr.decode(errors="replace"), "timed out": True,
                    "elapsed": time.monotonic() - started, "limit": 20}

    generator = CliGenerator(rng, paths, "")
    budget = 600 if full else 34
    total = 12000 if full else 1200
    findings = {}
    known_hangs = set()
    runs = skipped = daemon_crashes = 0
    by_sub, exits = {}, {}
    not_started = []  # why a run could not be started at all

    def judged(argv, labels, sub, key, run):
        nonlocal runs
        if "not started" in run:
            not_started.append(run["not started"])
            return
        runs += 1
        by_sub[sub] = by_sub.get(sub, 0) + 1
        exits[run["code"]] = exits.get(run["code"], 0) + 1
        if VERBOSE:
            print(f"        {run['code']} {run['elapsed']:.1f}s composer-cli {shell_line(argv)[:300]} | "
                  f"{(run['stderr'].strip().splitlines() or [''])[-1][:160]}", flush=True)
        verdict = judge_cli(run)
        if verdict is None:
            return
        kind, detail = verdict
        if kind == "hang":
            known_hangs.add(key)
        entry = findings.setdefault((kind,) + key, {"count": 0, "argv": argv, "detail": detail, "labels": labels,
                                                    "stderr": run["stderr"].strip().splitlines()[-3:]})
        entry["count"] += 1
        if len(shell_line(argv)) < len(shell_line(entry["argv"])):  # the shortest reproducer seen
            entry.update(argv=argv, detail=detail, labels=labels, stderr=run["stderr"].strip().splitlines()[-3:])

    start()
    started = time.monotonic()
    index = 0
    recent = []  # the latest command lines, for a daemon crash
    try:
        with ThreadPoolExecutor(max_workers=3) as pool:
            running = {}
            while running or (index < total and time.monotonic() - started < budget):
                while len(running) < 4 and index < total and time.monotonic() - started < budget:
                    if index % 8 == 0:
                        keep_playing()
                        generator.address = state["bus"].address
                    argv, labels, sub, key = generator.argv(index)
                    index += 1
                    # A hang found once is not waited out again, nor is a second run with the same
                    # hostile path started while one runs (three FIFO hangs at once would be 20 s each).
                    hostile_path = bool(key[1]) and key[1][0] in PATH_LABELS
                    if key in known_hangs or (hostile_path and any(key == job[3] for job in running.values())):
                        skipped += 1
                        continue
                    recent = (recent + [shell_line(argv)[:150]])[-6:]
                    running[pool.submit(execute, argv, index)] = (argv, labels, sub, key)
                if not running:
                    break
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in done:
                    judged(*running.pop(future), future.result())
                if not state["daemon"].alive():
                    daemon_crashes += 1
                    code = state["daemon"].process.returncode
                    with open(state["daemon"].log, errors="replace") as f:
                        tail = [line.rstrip() for line in f.readlines()[-4:]]
                    findings[("daemon crash", "speakerd", (str(code),))] = {
                        "count": 1, "argv": [], "recent": recent, "labels": [], "detail": f"speakerd ended with {code}",
                        "stderr": tail}
                    wait(list(running))
                    for future in list(running):
                        judged(*running.pop(future), future.result())
                    stop()
                    start()
    finally:
        alive = state["daemon"].alive() if state["daemon"] else False
        stop()
    took = time.monotonic() - started
    counts = {kind: sum(e["count"] for (k, _, _), e in findings.items() if k == kind)
              for kind in ("crash", "hang", "trap text", "silent failure")}
    for (kind, sub, _), entry in sorted(findings.items(), key=lambda item: (item[0][0], item[0][1])):
        if kind == "daemon crash":
            print(f"      cli-fuzz DAEMON CRASH: {entry['detail']}, after one of:", flush=True)
            for line in entry["recent"] + [f"stderr: {line}" for line in entry["stderr"]]:
                print(f"        {line[:200]}", flush=True)
            continue
        shown = shell_line(entry["argv"])
        print(f"      cli-fuzz {kind.upper()}: composer-cli {shown[:400]}  [{', '.join(entry['labels']) or 'plain'}; "
              f"{entry['count']}x]: {entry['detail']}", flush=True)
        for line in entry["stderr"]:
            print(f"        stderr: {line[:200]}", flush=True)
    ok = not findings and alive and daemon_crashes == 0 and len(not_started) <= runs // 20
    usage = exits.get(64, 0)
    figure = (f"seed {seed}: {runs} runs of {len(by_sub)} subcommands (and none, and unknown ones) in {took:.0f} s"
              f"{' (time budget reached)' if index < total else ''}: {exits.get(0, 0)} exit 0, {usage} usage errors (64), "
              f"{runs - exits.get(0, 0) - usage} other failures; "
              f"{counts['crash']} crashes (bound 0), {counts['hang']} hangs past 20 s (bound 0; {skipped} repeats of a "
              f"hang or of a hostile path still running not run), {counts['trap text']} Swift trap messages, {counts['silent failure']} failures with nothing "
              f"on stderr (bound 0); speakerd {'alive' if alive and not daemon_crashes else f'CRASHED {daemon_crashes}x'}"
              f"{f'; {len(not_started)} runs could not start ({not_started[0]})' if not_started else ''}")
    harness.report("cli-fuzz", figure, ok, command)
