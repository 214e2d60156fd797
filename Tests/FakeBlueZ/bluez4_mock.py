'''python-dbusmock template for a BlueZ 4 bluetoothd: too old for speakerd.

BlueZ 4 owns org.bluez but predates the ObjectManager: its root object has org.bluez.Manager
(DefaultAdapter, FindAdapter, ListAdapters, GetProperties) and adapters live at
/org/bluez/PID/hciN with org.bluez.Adapter. GetManagedObjects at / is therefore unknown, which is
how speakerd tells it from BlueZ 5 (see BlueZ 4's doc/manager-api.txt and adapter-api.txt).
'''

import dbus

BUS_NAME = 'org.bluez'
MAIN_OBJ = '/'
MAIN_IFACE = 'org.bluez.Manager'
SYSTEM_BUS = True
IS_OBJECT_MANAGER = False

ADAPTER_PATH = '/org/bluez/1234/hci0'
ADAPTER_IFACE = 'org.bluez.Adapter'


def load(mock, parameters):
    mock.AddMethods(MAIN_IFACE, [
        ('DefaultAdapter', '', 'o', f'ret = dbus.ObjectPath("{ADAPTER_PATH}")'),
        ('FindAdapter', 's', 'o', f'ret = dbus.ObjectPath("{ADAPTER_PATH}")'),
        ('ListAdapters', '', 'ao', f'ret = [dbus.ObjectPath("{ADAPTER_PATH}")]'),
        ('GetProperties', '', 'a{sv}', f'ret = {{"Adapters": [dbus.ObjectPath("{ADAPTER_PATH}")]}}'),
    ])
    mock.AddObject(ADAPTER_PATH, ADAPTER_IFACE, {}, [
        ('GetProperties', '', 'a{sv}',
         'ret = {"Address": "00:01:02:03:04:05", "Name": "box", "Powered": True, "Discovering": False}'),
        ('StartDiscovery', '', '', ''),
        ('StopDiscovery', '', '', ''),
    ])
