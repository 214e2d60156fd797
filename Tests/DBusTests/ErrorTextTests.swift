import DBus
import Testing

/// A peer's error message as a one-line error or log says it: a Python service's traceback comes
/// down to the exception it ends with, anything else to its first line, and never without bound.
@Suite("A peer's error message in one line")
struct ErrorTextTests {
    static let traceback = """
        Traceback (most recent call last):
          File "/usr/lib/python3/dist-packages/dbus/service.py", line 712, in _message_cb
            retval = candidate_method(self, *args, **keywords)
          File "<string>", line 3, in RegisterAgent
        dbus.exceptions.DBusException: org.bluez.Error.AlreadyExists: Agent already registered

        """

    @Test("a Python traceback becomes its last line, the exception, without dbus-python's prefix")
    func tracebackBecomesItsException() {
        #expect(DBusError.gist(of: Self.traceback) == "org.bluez.Error.AlreadyExists: Agent already registered")
        let error = DBusError.remote(name: "org.freedesktop.DBus.Python.dbus.exceptions.DBusException", message: Self.traceback)
        #expect(!"\(error)".contains("\n") && !"\(error)".contains("Traceback"), "\(error)")
    }

    @Test("any other message is its first line, bounded")
    func firstLineBounded() {
        #expect(DBusError.gist(of: "Operation already in progress\nmore detail") == "Operation already in progress")
        #expect(DBusError.gist(of: "") == "")
        let long = DBusError.gist(of: String(repeating: "x", count: 5000))
        #expect(long.count <= 241 && long.hasSuffix("…"))
    }
}
