internal import CDBus

extension DBusEventLoop {
    /// Sends a message that expects no reply (a signal, a reply, a RemoveMatch). If the
    /// connection is gone, or cannot carry the message's file descriptors, it is dropped.
    func send(_ message: DBusMessage) {
        perform { connection in
            guard let connection else { return }
            if message.containsUnixFDs, dbus_connection_can_send_type(connection, DBusTypeCode.unixFD) == 0 { return }
            dbus_connection_send(connection, message.pointer, nil)
        }
    }
}
