'''python-dbusmock template for BlueALSA's D-Bus service (org.bluealsa, bluez-alsa 4+).

BlueALSA publishes one org.bluealsa.PCM1 object per Bluetooth audio stream under its
ObjectManager at /org/bluealsa, e.g. /org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink for
music sent to a speaker (Transport "A2DP-source", Mode "sink"). speakerd waits for that object
before it calls the speaker ready. Property names and values follow bluez-alsa's
doc/org.bluealsa.PCM1.7.rst.

Control interface org.bluealsa.Mock on /org/bluealsa:
  AddA2DPSink(adapter 's', address 's') -> 'o'   the PCM a connected speaker gets
  AddPCM(adapter, address, type, mode, transport) -> 'o'   any other PCM (sco, a2dpsnk, ...)
  RemovePCM(path 'o')                            the speaker's transport went away
'''

import dbus

from dbusmock import OBJECT_MANAGER_IFACE

BUS_NAME = 'org.bluealsa'
MAIN_OBJ = '/org/bluealsa'
MAIN_IFACE = 'org.bluealsa.Mock'
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True

PCM_IFACE = 'org.bluealsa.PCM1'
MOCK_IFACE = 'org.bluealsa.Mock'


def load(mock, parameters):
    mock.sequence = 0


def _device_component(address):
    return 'dev_' + address.upper().replace(':', '_')


@dbus.service.method(MOCK_IFACE, in_signature='sssss', out_signature='o')
def AddPCM(self, adapter, address, pcm_type, mode, transport):
    device = _device_component(address)
    path = f'/org/bluealsa/{adapter}/{device}/{pcm_type}/{mode}'
    self.sequence = getattr(self, 'sequence', 0) + 1
    properties = {
        'Device': dbus.ObjectPath(f'/org/bluez/{adapter}/{device}'),
        'Sequence': dbus.UInt32(self.sequence),
        'Transport': dbus.String(transport),
        'Mode': dbus.String(mode),
        'Running': dbus.Boolean(False),
        'Format': dbus.UInt16(0x8210),
        'Channels': dbus.Byte(2),
        # What real BlueALSA 4.0 (Debian 12) said for an SBC speaker in the real-Bluetooth guest:
        # songs for this PCM render at 48 kHz, as they do at a real speaker.
        'Sampling': dbus.UInt32(48000),
        'Codec': dbus.String('SBC'),
        'Delay': dbus.UInt16(150),
        # Debian's bluealsa.service runs without --a2dp-volume: BlueALSA scales the samples itself.
        'SoftVolume': dbus.Boolean(True),
        'Volume': dbus.Array([dbus.Byte(127), dbus.Byte(127)], signature='y'),
    }
    self.AddObject(path, PCM_IFACE, properties, [])
    self.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}',
                    [dbus.ObjectPath(path), {PCM_IFACE: properties}])
    return dbus.ObjectPath(path)


@dbus.service.method(MOCK_IFACE, in_signature='ss', out_signature='o')
def AddA2DPSink(self, adapter, address):
    return AddPCM(self, adapter, address, 'a2dpsrc', 'sink', 'A2DP-source')


@dbus.service.method(MOCK_IFACE, in_signature='o', out_signature='')
def RemovePCM(self, path):
    self.RemoveObject(path)
    self.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesRemoved', 'oas',
                    [dbus.ObjectPath(path), dbus.Array([PCM_IFACE], signature='s')])
