#ifndef SPEAKERD_CBLUEZ_SHIM_H
#define SPEAKERD_CBLUEZ_SHIM_H
/* libdbus-1 for every D-Bus conversation; libbluetooth for address parsing and kernel HCI listing. */
#include <dbus/dbus.h>
#include <sys/eventfd.h>   /* the D-Bus I/O thread's wake-up descriptor */
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#endif
