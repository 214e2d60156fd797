#!/usr/bin/python3
"""Listens for speakerd's signals on a bus as whatever user runs it, then tries its API.

Usage: signal-listener.py BUS_ADDRESS SECONDS

Subscribes to every signal from io.speakerd.Daemon, prints "ready" once the match rule is on
the bus, listens for SECONDS, then calls Introspect and Status. Prints one JSON line:
{"signals": N, "members": [...], "introspect": "ok" | ERROR, "status": "ok" | ERROR}.
Used by the signal privacy test and scripts/reliability, run as two real Unix users.
"""
import json
import sys

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

address, seconds = sys.argv[1], float(sys.argv[2])
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(address)
members = []
bus.add_signal_receiver(lambda *args, **kw: members.append(kw["member"]), sender_keyword="sender",
                        member_keyword="member", bus_name="io.speakerd.Daemon")
bus.get_name_owner("org.freedesktop.DBus")  # a round trip: the match rule is in place
print("ready", flush=True)
loop = GLib.MainLoop()
GLib.timeout_add(int(seconds * 1000), loop.quit)
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
          "status": attempt("io.speakerd.Daemon1", "Status")}
print(json.dumps(result), flush=True)
