#!/usr/bin/python3
"""Listens for speakerd's signals on a bus as whatever user runs it, then tries its API.

Usage: signal-listener.py BUS_ADDRESS MAX_SECONDS

Subscribes to every signal from io.speakerd.Daemon, prints "ready" once the match rule is on
the bus, and listens until SIGUSR1 (or, as a safety net, MAX_SECONDS), then calls Introspect
and Status. Prints one JSON line: {"signals": N, "members": [...], "introspect": "ok" | ERROR,
"status": "ok" | ERROR, "stopped": "asked" | "time limit"}.

Why until told, not for a fixed time: the caller emits after both of its listeners are ready,
and on a loaded machine a window counted from each listener's own start closed before the
first signal. The caller makes a round trip to the bus after emitting (so the bus has routed
its signals) and then sends SIGUSR1; the listener makes a round trip of its own, whose reply
is dispatched after every signal the bus queued for it before.
Used by the signal privacy test and scripts/reliability, run as two real Unix users.
"""
import json
import signal
import sys

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

address, limit = sys.argv[1], float(sys.argv[2])
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)
members = []
bus.add_signal_receiver(lambda *args, **kw: members.append(kw["member"]), sender_keyword="sender",
                        member_keyword="member", bus_name="io.speakerd.Daemon")
loop = GLib.MainLoop()
stopped = {"by": "time limit"}


def stop():
    def done(*_):
        stopped["by"] = "asked"
        loop.quit()
    bus.call_async("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", (),
                   done, done)
    return GLib.SOURCE_REMOVE


GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, stop)
GLib.timeout_add(int(limit * 1000), loop.quit)
bus.get_name_owner("org.freedesktop.DBus")  # a round trip: the match rule is in place
print("ready", flush=True)
loop.run()


def attempt(interface, method):
    try:
        proxy = bus.get_object("io.speakerd.Daemon", "/io/speakerd/Daemon", introspect=False)
        getattr(dbus.Interface(proxy, interface), method)(timeout=5)
        return "ok"
    except dbus.exceptions.DBusException as error:
        return error.get_dbus_name()


result = {"signals": len(members), "members": sorted(set(members)),
          "introspect": attempt("org.freedesktop.DBus.Introspectable", "Introspect"),
          "status": attempt("io.speakerd.Daemon1", "Status"), "stopped": stopped["by"]}
print(json.dumps(result), flush=True)
