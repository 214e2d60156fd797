'''speakerd's extension of python-dbusmock's bluez5 template.

Load it instead of bluez5 (`python3 -m dbusmock --system --template speakerd_bluez.py`) or on
top of a running bluez5 mock (`org.freedesktop.DBus.Mock.AddTemplate` with this file's path).
It keeps everything bluez5 offers and adds, on the org.bluez.Mock interface of `/`, what the stock
template lacks and speakerd must be tested against:

- AddSpeaker(adapter, address, alias): a device that looks like a real A2DP speaker
  (Class 0x240414, Icon audio-card, A2DP sink UUIDs) with BlueZ-faithful Device1 methods.
- UpgradeDevice(path): gives a device added by the stock AddDevice the same methods.
- SetConnectBehavior(path, behavior): 'ok', 'hang' (no reply until Disconnect or ReleaseConnect),
  a br-/le- reason ('br-connection-page-timeout': org.bluez.Error.Failed), or 'org.bluez.Error.X:msg'.
- ReleaseConnect(path): answers hanging Connect calls with br-connection-canceled.
- EmitDisconnected(path, reason, message): Device1.Disconnected, then Connected=false (bluetoothd's order).
- SetPowerState(adapter, state): PowerState; 'off-blocked' makes Powered=true fail as rfkill does.
- SetPowerFailure(adapter, message): Powered=true fails with that message, no PowerState involved
- SetPowerBusy(adapter, count): the next `count` Powered=true fail with org.bluez.Error.Busy, as
  real bluetoothd 5.66 answers while it powers a controller that has just come back itself
  (an adapter that cannot be powered on a BlueZ older than 5.64); '' lets it power again.
- UpdateRSSI(path, rssi), UpdateManufacturerData(path, company, bytes).
- SetPairingMode(path, mode): 'just-works' (default), 'confirm' (asks the default agent
  RequestConfirmation), 'authorize' (RequestAuthorization), 'reject', 'hang' (until CancelPairing).

Template parameters (`--parameters` JSON) describe what bluetoothd knows when it (re)starts, so a
restarted mock comes back like a real bluetoothd that re-reads its adapters and paired devices:
  {"adapters": ["hci0"], "speakers": [{"adapter": "hci0", "address": "11:22:33:AA:BB:CC", "alias": "JBL Flip 5"}]}

Unlike the stock template, Connect/Disconnect/Pair here keep the stored properties in step with the
signals they emit. speakerd's code must work against both.
'''

import time
import types

import dbus
import dbus.service

from dbusmock import mockobject
from dbusmock.templates import bluez5
# Re-export the stock D-Bus methods so AddTemplate installs them exactly as bluez5 does.
from dbusmock.templates.bluez5 import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

BUS_NAME, MAIN_OBJ, SYSTEM_BUS, IS_OBJECT_MANAGER = (bluez5.BUS_NAME, bluez5.MAIN_OBJ, bluez5.SYSTEM_BUS,
                                                     bluez5.IS_OBJECT_MANAGER)

MOCK_IFACE, DEVICE_IFACE, ADAPTER_IFACE = bluez5.BLUEZ_MOCK_IFACE, bluez5.DEVICE_IFACE, bluez5.ADAPTER_IFACE
AGENT_MANAGER_IFACE = bluez5.AGENT_MANAGER_IFACE
AGENT_IFACE = 'org.bluez.Agent1'
ERROR = 'org.bluez.Error.'

A2DP_SINK = '0000110b-0000-1000-8000-00805f9b34fb'
SPEAKER_UUIDS = [A2DP_SINK, '0000110c-0000-1000-8000-00805f9b34fb',
                 '0000110e-0000-1000-8000-00805f9b34fb', '0000111e-0000-1000-8000-00805f9b34fb']
SPEAKER_CLASS = 0x240414  # audio/video loudspeaker, audio + rendering services


def _error(name, message): return dbus.exceptions.DBusException(message, name=ERROR + name)


def _fresh(function, name=None):
    '''A copy of the function: the dbus decorator marks its argument, and AddTemplate would
    otherwise mistake a marked module-level helper for a method of `/`. The copy carries the D-Bus
    method's name, because introspection (and so every proxy-based client) reads it from there.'''
    return types.FunctionType(function.__code__, function.__globals__, name or function.__name__,
                              function.__defaults__, function.__closure__)


def _install(obj, interface, name, in_sig, out_sig, function, **options):
    '''Puts a dbus-python method on one object only. With async_callbacks=('ok', 'err') it can
    answer later or never, without blocking the mock.'''
    decorated = dbus.service.method(interface, in_signature=in_sig, out_signature=out_sig, **options)(_fresh(function, name))
    obj.methods.setdefault(interface, {})[name] = (in_sig, out_sig, '', decorated)


def _set_and_emit(obj, interface, changes):
    '''Stores the new values and emits PropertiesChanged: signals and state never disagree here.'''
    for key, value in changes.items():
        obj.props.setdefault(interface, {})[key] = value
    obj.EmitSignal(dbus.PROPERTIES_IFACE, 'PropertiesChanged', 'sa{sv}as',
                   [interface, dbus.Dictionary(changes, signature='sv'), dbus.Array([], signature='s')])


def _device(path):
    path = str(path)
    if path not in mockobject.objects:
        raise dbus.exceptions.DBusException(f'Device {path} does not exist.', name=MOCK_IFACE + '.NoSuchDevice')
    return mockobject.objects[path]


# --- Device1 methods that behave like bluetoothd ---------------------------------------------

def _connect_like(device, ok, err):
    behavior = getattr(device, 'speakerd_behavior', 'ok')
    if behavior == 'hang':
        device.speakerd_pending.append((ok, err))
        return
    if behavior != 'ok':
        if behavior.startswith(ERROR):
            name, _, message = behavior[len(ERROR):].partition(':')
            err(_error(name, message))
        else:
            err(_error('Failed', behavior))
        return
    if device.props[DEVICE_IFACE]['Connected']:
        err(_error('AlreadyConnected', 'Already Connected'))
        return
    device.connected = True
    _set_and_emit(device, DEVICE_IFACE, {'Connected': dbus.Boolean(True, variant_level=1)})
    ok()


def _record(device, method, args=()):
    '''Logs like dbusmock's own methods do, so GetMethodCalls sees our Device1 methods too.'''
    device.log(method)
    device.call_log.append((int(time.time()), method, list(args)))


def device_connect(device, ok, err):
    _record(device, 'Connect')
    _connect_like(device, ok, err)


def device_connect_profile(device, uuid, ok, err):
    _record(device, 'ConnectProfile', [uuid])
    if str(uuid).lower() not in [str(u).lower() for u in device.props[DEVICE_IFACE]['UUIDs']]:
        err(_error('Failed', 'br-connection-profile-unavailable'))
        return
    _connect_like(device, ok, err)


def _release_pending(device, message):
    pending, device.speakerd_pending = device.speakerd_pending, []
    for _, err in pending:
        err(_error('Failed', message))


def device_disconnect(device):
    _record(device, 'Disconnect')
    # bluetoothd: Disconnect also cancels a Connect that has not been answered yet.
    had_pending = bool(device.speakerd_pending)
    _release_pending(device, 'br-connection-canceled')
    if not device.props[DEVICE_IFACE]['Connected']:
        if had_pending:
            return
        raise _error('NotConnected', 'Not Connected')
    _emit_disconnected(device, 'org.bluez.Reason.Local', 'Connection terminated by local host')


def _emit_disconnected(device, reason, message):
    device.EmitSignal(DEVICE_IFACE, 'Disconnected', 'ss', [reason, message])
    device.connected = False
    _set_and_emit(device, DEVICE_IFACE, {'Connected': dbus.Boolean(False, variant_level=1)})


def _finish_pairing(device):
    device.paired = True
    _set_and_emit(device, DEVICE_IFACE, {
        'Paired': dbus.Boolean(True, variant_level=1),
        'Bonded': dbus.Boolean(True, variant_level=1),
    })


def device_pair(device, ok, err):
    _record(device, 'Pair')
    if device.props[DEVICE_IFACE]['Paired']:
        err(_error('AlreadyExists', 'Already Paired'))
        return
    mode = getattr(device, 'speakerd_pairing', 'just-works')
    if mode == 'hang':
        device.speakerd_pairing_pending.append(err)
        return
    if mode == 'reject':
        err(_error('AuthenticationRejected', 'Authentication Rejected'))
        return
    manager = mockobject.objects['/org/bluez']
    agent = getattr(manager, 'speakerd_default_agent', None)
    if mode == 'just-works' or agent is None:
        _finish_pairing(device)
        ok()
        return

    sender, agent_path = agent

    def answered(*_):
        _finish_pairing(device)
        ok()

    def refused(error):
        err(_error('AuthenticationRejected', f'agent refused: {error.get_dbus_name()}'))

    bus = device.connection
    proxy = bus.get_object(sender, agent_path, introspect=False)
    path = dbus.ObjectPath(device.path)
    if mode == 'authorize':
        proxy.RequestAuthorization(path, dbus_interface=AGENT_IFACE,
                                   reply_handler=answered, error_handler=refused)
    else:
        proxy.RequestConfirmation(path, dbus.UInt32(123456), dbus_interface=AGENT_IFACE,
                                  reply_handler=answered, error_handler=refused)


def device_cancel_pairing(device):
    _record(device, 'CancelPairing')
    pending, device.speakerd_pairing_pending = device.speakerd_pairing_pending, []
    if not pending:
        raise _error('DoesNotExist', 'No pairing in progress')
    for err in pending:
        err(_error('AuthenticationCanceled', 'Authentication Canceled'))


def _upgrade_device(path):
    device = _device(path)
    device.speakerd_behavior = 'ok'
    device.speakerd_pending = []
    device.speakerd_pairing = 'just-works'
    device.speakerd_pairing_pending = []
    props = device.props[DEVICE_IFACE]
    props.setdefault('Bonded', dbus.Boolean(False, variant_level=1))
    _install(device, DEVICE_IFACE, 'Connect', '', '', device_connect, async_callbacks=('ok', 'err'))
    _install(device, DEVICE_IFACE, 'ConnectProfile', 's', '', device_connect_profile, async_callbacks=('ok', 'err'))
    _install(device, DEVICE_IFACE, 'Pair', '', '', device_pair, async_callbacks=('ok', 'err'))
    _install(device, DEVICE_IFACE, 'Disconnect', '', '', device_disconnect)
    _install(device, DEVICE_IFACE, 'CancelPairing', '', '', device_cancel_pairing)
    return device


# --- Adapter: rfkill-aware Powered ---------------------------------------------------------

def adapter_set(adapter, interface, name, value):
    adapter.log(f'Set {interface}.{name}')
    props = adapter.props.get(str(interface), {})
    if str(name) not in props:
        raise dbus.exceptions.DBusException('no such property ' + name,
                                            name='org.freedesktop.DBus.Error.UnknownProperty')
    if interface == ADAPTER_IFACE and name == 'Powered':
        if props.get('PowerState') == 'off-blocked' and bool(value):
            raise _error('Failed', 'Blocked through rfkill')
        if getattr(adapter, 'speakerd_power_failure', '') and bool(value):
            raise _error('Failed', adapter.speakerd_power_failure)
        if getattr(adapter, 'speakerd_power_busy', 0) > 0 and bool(value):
            adapter.speakerd_power_busy -= 1
            raise _error('Busy', 'Operation currently not possible')
        changes = {'Powered': dbus.Boolean(bool(value), variant_level=1)}
        if 'PowerState' in props:
            changes['PowerState'] = dbus.String('on' if value else 'off', variant_level=1)
        _set_and_emit(adapter, ADAPTER_IFACE, changes)
        return
    _set_and_emit(adapter, str(interface), {str(name): value})


def _upgrade_adapter(name):
    adapter = mockobject.objects['/org/bluez/' + str(name)]
    if not getattr(adapter, 'speakerd_upgraded', False):
        _install(adapter, dbus.PROPERTIES_IFACE, 'Set', 'ssv', '', adapter_set)
        adapter.speakerd_upgraded = True
    return adapter


# --- AgentManager1 that remembers who registered (so Pair can call the agent) ---------------

def register_agent(manager, agent_path, capability, sender=None):
    bluez5.RegisterAgent(manager, agent_path, capability)
    manager.speakerd_agents[str(agent_path)] = sender
    if manager.default_agent == agent_path:
        manager.speakerd_default_agent = (sender, str(agent_path))


def request_default_agent(manager, agent_path, sender=None):
    bluez5.RequestDefaultAgent(manager, agent_path)
    manager.speakerd_default_agent = (manager.speakerd_agents.get(str(agent_path), sender), str(agent_path))


def unregister_agent(manager, agent_path, sender=None):
    bluez5.UnregisterAgent(manager, agent_path)
    manager.speakerd_agents.pop(str(agent_path), None)
    current = getattr(manager, 'speakerd_default_agent', None)
    if current and current[1] == str(agent_path):
        manager.speakerd_default_agent = None


# --- org.bluez.Mock additions ------------------------------------------------------------

@dbus.service.method(MOCK_IFACE, in_signature='sss', out_signature='s')
def AddSpeaker(self, adapter_name, address, alias):
    '''Adds a device that looks like a real A2DP speaker; returns its object path.'''
    path = bluez5.AddDevice(self, adapter_name, address, alias)
    _upgrade_adapter(adapter_name)
    device = _upgrade_device(path)
    _set_and_emit(device, DEVICE_IFACE, {
        'Class': dbus.UInt32(SPEAKER_CLASS, variant_level=1),
        'Icon': dbus.String('audio-card', variant_level=1),
        'UUIDs': dbus.Array(SPEAKER_UUIDS, signature='s', variant_level=1),
    })
    return path


@dbus.service.method(MOCK_IFACE, in_signature='o', out_signature='')
def UpgradeDevice(_self, path):
    '''Gives a device made by the stock AddDevice this template's Device1 methods.'''
    _upgrade_device(path)


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='')
def UpgradeAdapter(_self, adapter_name):
    '''Gives an adapter made by the stock AddAdapter the rfkill-aware Powered setter.'''
    _upgrade_adapter(adapter_name)


@dbus.service.method(MOCK_IFACE, in_signature='os', out_signature='')
def SetConnectBehavior(_self, path, behavior):
    _device(path).speakerd_behavior = str(behavior)


@dbus.service.method(MOCK_IFACE, in_signature='o', out_signature='')
def ReleaseConnect(_self, path):
    _release_pending(_device(path), 'br-connection-canceled')


@dbus.service.method(MOCK_IFACE, in_signature='os', out_signature='')
def SetPairingMode(_self, path, mode):
    _device(path).speakerd_pairing = str(mode)


@dbus.service.method(MOCK_IFACE, in_signature='oss', out_signature='')
def EmitDisconnected(_self, path, reason, message):
    _emit_disconnected(_device(path), str(reason), str(message))


@dbus.service.method(MOCK_IFACE, in_signature='ss', out_signature='')
def SetPowerState(_self, adapter_name, state):
    adapter = _upgrade_adapter(adapter_name)
    props = adapter.props[ADAPTER_IFACE]
    if 'PowerState' not in props:
        props['PowerState'] = dbus.String(str(state), variant_level=1)
    changes = {'PowerState': dbus.String(str(state), variant_level=1)}
    if state in ('off', 'off-blocked'):
        changes['Powered'] = dbus.Boolean(False, variant_level=1)
    elif state == 'on':
        changes['Powered'] = dbus.Boolean(True, variant_level=1)
    _set_and_emit(adapter, ADAPTER_IFACE, changes)


@dbus.service.method(MOCK_IFACE, in_signature='ss', out_signature='')
def SetPowerFailure(_self, adapter_name, message):
    '''Makes Powered=true fail with org.bluez.Error.Failed(message) ('' to stop): an adapter that
    cannot be powered on a BlueZ too old to have PowerState (before 5.64), e.g. rfkill-blocked.'''
    _upgrade_adapter(adapter_name).speakerd_power_failure = str(message)


@dbus.service.method(MOCK_IFACE, in_signature='su', out_signature='')
def SetPowerBusy(_self, adapter_name, count):
    '''Makes the next `count` Powered=true fail with org.bluez.Error.Busy.'''
    _upgrade_adapter(adapter_name).speakerd_power_busy = int(count)


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='u')
def GetPowerBusy(_self, adapter_name):
    '''How many Busy answers SetPowerBusy still has to give.'''
    return dbus.UInt32(getattr(_upgrade_adapter(adapter_name), 'speakerd_power_busy', 0))


@dbus.service.method(MOCK_IFACE, in_signature='on', out_signature='')
def UpdateRSSI(_self, path, rssi):
    _set_and_emit(_device(path), DEVICE_IFACE, {'RSSI': dbus.Int16(rssi, variant_level=1)})


@dbus.service.method(MOCK_IFACE, in_signature='oqay', out_signature='')
def UpdateManufacturerData(_self, path, company, data):
    value = dbus.Dictionary({dbus.UInt16(company): dbus.Array(data, signature='y', variant_level=1)},
                            signature='qv', variant_level=1)
    _set_and_emit(_device(path), DEVICE_IFACE, {'ManufacturerData': value})


def load(mock, parameters):
    # On top of a running bluez5 mock, /org/bluez exists already: keep it, add only what is ours.
    if '/org/bluez' not in mockobject.objects:
        bluez5.load(mock, parameters)
    manager = mockobject.objects['/org/bluez']
    manager.speakerd_agents = {}
    manager.speakerd_default_agent = None
    for name, signature, function in (('RegisterAgent', 'os', register_agent), ('UnregisterAgent', 'o', unregister_agent),
                                      ('RequestDefaultAgent', 'o', request_default_agent)):
        _install(manager, AGENT_MANAGER_IFACE, name, signature, '', function, sender_keyword='sender')
    # dbusmock registers `/` only after load() returns; bluez5's helpers look it up there.
    mockobject.objects.setdefault(mock.path, mock)
    for adapter_name in (parameters or {}).get('adapters', []):
        bluez5.AddAdapter(mock, adapter_name, 'speakerd-test')
        _upgrade_adapter(adapter_name)
    for speaker in (parameters or {}).get('speakers', []):
        AddSpeaker(mock, speaker['adapter'], speaker['address'], speaker['alias'])
