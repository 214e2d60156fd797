'''The person-facing commands of scripts/fake-bluez, one per call:

  python3 fake_bluez_commands.py BUS_ADDRESS COMMAND ARGS...

  add-adapter [NAME]         an adapter (hci0 by default); the add-* commands add hci0 if none exists
  add-speaker ADDRESS NAME   a device that looks like a real A2DP speaker
  add-phone ADDRESS NAME     a phone (no audio sink: speakerd never offers it)
  speaker-off ADDRESS        the device goes silent: Connect fails with a page timeout and, if
                             it was connected, the link drops (Disconnected with a timeout reason)
  speaker-on ADDRESS         Connect works again

Prints one line: "ok" (or the new object's path) or "error: ...". speakerd's template extension
(speakerd_bluez.py) is loaded on top of a stock bluez5 mock the first time it is needed.
'''
import os
import sys

import dbus

HERE = os.path.dirname(os.path.abspath(__file__))
MOCK = 'org.bluez.Mock'
DEVICE = 'org.bluez.Device1'
PHONE_CLASS = 0x5a020c  # phone / smartphone, with networking, audio and telephony services


def device_path(bus, address):
    address = address.upper()
    if len(address) != 17 or any(address[i] != ':' for i in (2, 5, 8, 11, 14)):
        raise ValueError(f"'{address}' is not a Bluetooth address (expected the form 11:22:33:44:55:66)")
    manager = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')
    for path, interfaces in manager.GetManagedObjects().items():
        if DEVICE in interfaces and str(interfaces[DEVICE].get('Address', '')).upper() == address:
            return path
    raise ValueError(f'no device {address}: add it first (add-speaker or add-phone)')


def adapters(bus):
    manager = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')
    return sorted(str(p).rsplit('/', 1)[1] for p, i in manager.GetManagedObjects().items() if 'org.bluez.Adapter1' in i)


def mock(bus):
    root = bus.get_object('org.bluez', '/')
    # Our extension answers Introspect with AddSpeaker; a stock bluez5 mock gets it added.
    if 'AddSpeaker' not in dbus.Interface(root, 'org.freedesktop.DBus.Introspectable').Introspect():
        dbus.Interface(root, 'org.freedesktop.DBus.Mock').AddTemplate(os.path.join(HERE, 'speakerd_bluez.py'),
                                                                       dbus.Dictionary({}, signature='sv'))
    return dbus.Interface(root, MOCK)


def first_adapter(bus, bluez):
    names = adapters(bus)
    if names:
        return names[0]
    bluez.AddAdapter('hci0', 'fake-bluez')
    bluez.UpgradeAdapter('hci0')
    return 'hci0'


def run(bus, command, args):
    bluez = mock(bus)
    if command == 'add-adapter' and len(args) <= 1:
        name = args[0] if args else 'hci0'
        bluez.AddAdapter(name, 'fake-bluez')
        bluez.UpgradeAdapter(name)
        return 'ok'
    if command in ('add-speaker', 'add-phone') and len(args) >= 2:
        address, name = args[0].upper(), ' '.join(args[1:])
        adapter = first_adapter(bus, bluez)
        if command == 'add-speaker':
            bluez.AddSpeaker(adapter, address, name)
            return 'ok'
        path = bluez.AddDevice(adapter, address, name)
        bluez.UpgradeDevice(path)
        dbus.Interface(bus.get_object('org.bluez', path), 'org.freedesktop.DBus.Mock').UpdateProperties(
            DEVICE, {'Class': dbus.UInt32(PHONE_CLASS), 'Icon': dbus.String('phone')})
        return 'ok'
    if command in ('speaker-off', 'speaker-on') and len(args) == 1:
        path = device_path(bus, args[0])
        if command == 'speaker-on':
            bluez.SetConnectBehavior(path, 'ok')
            return 'ok'
        bluez.SetConnectBehavior(path, 'br-connection-page-timeout')
        props = dbus.Interface(bus.get_object('org.bluez', path), 'org.freedesktop.DBus.Properties')
        if bool(props.Get(DEVICE, 'Connected')):
            bluez.EmitDisconnected(path, 'org.bluez.Reason.Timeout', 'Connection timed out')
        return 'ok'
    usage = {'add-adapter': 'add-adapter [NAME]', 'add-speaker': 'add-speaker ADDRESS NAME',
             'add-phone': 'add-phone ADDRESS NAME', 'speaker-off': 'speaker-off ADDRESS', 'speaker-on': 'speaker-on ADDRESS'}
    if command in usage:
        raise ValueError(f'usage: {usage[command]}')
    raise ValueError(f"unknown command '{command}' (see scripts/fake-bluez --help)")


def main():
    address, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    try:
        print(run(dbus.bus.BusConnection(address), command, args))
    except ValueError as error:
        print(f'error: {error}')
    except dbus.exceptions.DBusException as error:
        print(f'error: {error.get_dbus_message() or error.get_dbus_name()}')


main()
