'''python-dbusmock template for a BlueZ 5 older than 5.30: too old for speakerd.

Everything of the stock bluez5 template, except that adapters added with AddAdapter have no
org.bluez.Adapter1.SetDiscoveryFilter (documented in BlueZ's doc/adapter-api.txt in March 2015
and first released in 5.30; before that, and on an old bluetoothd run without -E while it was
experimental, the adapter simply does not export it). speakerd tells the age from that.
'''

from dbusmock import mockobject
from dbusmock.templates import bluez5
# Re-export the stock D-Bus methods so the template behaves as bluez5 does.
from dbusmock.templates.bluez5 import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import

import dbus

BUS_NAME, MAIN_OBJ, SYSTEM_BUS, IS_OBJECT_MANAGER = (bluez5.BUS_NAME, bluez5.MAIN_OBJ, bluez5.SYSTEM_BUS,
                                                     bluez5.IS_OBJECT_MANAGER)


@dbus.service.method(bluez5.BLUEZ_MOCK_IFACE, in_signature='ss', out_signature='s')
def AddAdapter(self, device_name, system_name):
    '''The stock AddAdapter, minus SetDiscoveryFilter on the new adapter.'''
    path = bluez5.AddAdapter(self, device_name, system_name)
    del mockobject.objects[path].methods[bluez5.ADAPTER_IFACE]['SetDiscoveryFilter']
    return path


def load(mock, parameters):
    bluez5.load(mock, parameters)
