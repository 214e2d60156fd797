#ifndef SPEAKERD_CDBUS_SHIM_H
#define SPEAKERD_CDBUS_SHIM_H
/* libdbus-1, for every D-Bus conversation; only the DBus module imports this. */
#include <dbus/dbus.h>
#include <sys/eventfd.h>   /* the D-Bus I/O thread's wake-up descriptor */
#include <sys/socket.h>
#endif
