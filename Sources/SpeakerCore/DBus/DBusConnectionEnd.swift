/// How a connection ended: on purpose (we closed it) or because the bus went away.
///
/// The difference decides what a daemon does next: a connection it closed while shutting down
/// is business as usual, but a lost one leaves it with no API and no way back on that
/// connection (libdbus does not reconnect), so it should exit and let its supervisor restart it.
public enum DBusConnectionEnd: Sendable, Hashable, CustomStringConvertible {
    /// `close()` was called, or the last reference to the connection went away.
    case closed
    /// The bus hung up on us: the bus daemon exited or restarted, or it dropped this connection.
    case lost

    public var description: String {
        switch self {
        case .closed: "closed by us"
        case .lost: "lost (the bus went away or dropped the connection)"
        }
    }
}

extension DBusConnection {
    /// How the connection ended, or nil while it is still up.
    public var end: DBusConnectionEnd? {
        if case .success(let end)? = loop.ending.result { return end }
        return nil
    }

    /// Waits until the connection ends and says how; answers at once if it already has.
    ///
    /// By then every pending call has failed with `DBusError.disconnected` and every signal
    /// stream has ended. Returns nil if the waiting task is cancelled first. The waiter holds
    /// the connection, so it ends only through `close()` or the bus: pair a long-lived wait
    /// with an explicit `close()` (or cancel the waiting task) when you are done.
    public func waitUntilEnded() async -> DBusConnectionEnd? {
        guard case .success(let end)? = try? await loop.ending.result() else { return nil }
        return end
    }
}
