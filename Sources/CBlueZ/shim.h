#ifndef SPEAKERD_CBLUETOOTH_SHIM_H
#define SPEAKERD_CBLUETOOTH_SHIM_H
/* BlueZ's libbluetooth: address parsing and the kernel's HCI device list. Only the BlueZ module imports this. */
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#endif
