import DBus
import Synchronization

/// A logind inhibitor lock: the file descriptor `Inhibit` returned.
///
/// logind keeps the inhibitor for exactly as long as some process holds that descriptor open,
/// so this object is its single owner: `release()` closes it at once, and dropping the last
/// reference closes it too, so a forgotten lock can never block suspend for ever.
public final class SleepInhibitorLock: Sendable, CustomStringConvertible {
    /// What the lock was taken for, as given to logind (shown by `systemd-inhibit --list`).
    public let why: String
    private let descriptor: Mutex<DBusUnixFD?>

    /// Wraps the descriptor logind returned (or, in tests, any descriptor standing in for it).
    public init(why: String, descriptor: DBusUnixFD) {
        self.why = why
        self.descriptor = Mutex(descriptor)
    }

    /// Whether the descriptor is still open (the inhibitor still in force).
    public var isHeld: Bool { descriptor.withLock { $0 != nil } }

    /// Closes the descriptor, ending the inhibitor. Calling it again does nothing.
    public func release() {
        // Take the descriptor out under the lock; its deinit closes it once we drop it.
        let taken = descriptor.withLock { value -> DBusUnixFD? in
            defer { value = nil }
            return value
        }
        _ = taken
    }

    public var description: String {
        isHeld ? "sleep delay lock (\(why))" : "released sleep delay lock (\(why))"
    }
}

/// Something that can take a sleep delay lock: logind on the bus, or a stand-in in tests.
public protocol SleepLockProviding: Sendable {
    /// Takes a delay inhibitor on sleep; throws ``LogindError/notRunning`` when there is no logind.
    func inhibitDelay(why: String) async throws(LogindError) -> SleepInhibitorLock
}

extension LogindClient: SleepLockProviding {}
