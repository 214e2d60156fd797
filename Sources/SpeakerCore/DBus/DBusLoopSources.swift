internal import CDBus
import Glibc
import Synchronization

/// libdbus's watches (descriptors it wants polled) and timeouts (deadlines it wants kept),
/// as registered through its callback tables.
///
/// libdbus may toggle a watch from whichever thread releases a message, so the tables sit
/// behind a mutex and a change made off the I/O thread wakes it to rebuild its poll set.
/// Entries carry a generation id so a pointer freed and reused by libdbus is never mistaken
/// for the watch or timeout we snapshotted.
final class DBusLoopSources: @unchecked Sendable {
    struct Watch { var id: UInt64; var fd: Int32; var flags: UInt32; var enabled: Bool }
    struct Timeout { var id: UInt64; var intervalNanos: UInt64; var deadline: UInt64; var enabled: Bool }
    struct State {
        /// Keyed by the libdbus pointer's address (a plain integer keeps the state Sendable).
        var watches: [UInt: Watch] = [:]
        var timeouts: [UInt: Timeout] = [:]
        var nextID: UInt64 = 0
    }

    let state = Mutex(State())
    /// Set at install time; wakes the I/O thread when a change comes from another thread.
    private var wake: (@Sendable () -> Void)?
    private var isLoopThread: (@Sendable () -> Bool)?

    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    func install(on connection: OpaquePointer, loop: DBusEventLoop) {
        wake = { [unowned loop] in loop.wakeUp() }
        isLoopThread = { [unowned loop] in loop.isOnLoopThread }
        let context = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(connection, { watch, context in
            DBusLoopSources.from(context).changed { state in
                state.nextID += 1
                state.watches[DBusLoopSources.key(watch)] = Watch(
                    id: state.nextID, fd: dbus_watch_get_unix_fd(watch), flags: dbus_watch_get_flags(watch),
                    enabled: dbus_watch_get_enabled(watch) != 0)
            }
            return 1
        }, { watch, context in
            DBusLoopSources.from(context).changed { $0.watches[DBusLoopSources.key(watch)] = nil }
        }, { watch, context in
            DBusLoopSources.from(context).changed { $0.watches[DBusLoopSources.key(watch)]?.enabled = dbus_watch_get_enabled(watch) != 0 }
        }, context, nil)
        dbus_connection_set_timeout_functions(connection, { timeout, context in
            DBusLoopSources.from(context).changed { state in
                state.nextID += 1
                let interval = UInt64(max(0, dbus_timeout_get_interval(timeout))) * 1_000_000
                state.timeouts[DBusLoopSources.key(timeout)] = Timeout(
                    id: state.nextID, intervalNanos: interval, deadline: DBusLoopSources.now() + interval,
                    enabled: dbus_timeout_get_enabled(timeout) != 0)
            }
            return 1
        }, { timeout, context in
            DBusLoopSources.from(context).changed { $0.timeouts[DBusLoopSources.key(timeout)] = nil }
        }, { timeout, context in
            DBusLoopSources.from(context).changed { state in
                guard var entry = state.timeouts[DBusLoopSources.key(timeout)] else { return }
                entry.enabled = dbus_timeout_get_enabled(timeout) != 0
                entry.intervalNanos = UInt64(max(0, dbus_timeout_get_interval(timeout))) * 1_000_000
                entry.deadline = DBusLoopSources.now() + entry.intervalNanos
                state.timeouts[DBusLoopSources.key(timeout)] = entry
            }
        }, context, nil)
        dbus_connection_set_wakeup_main_function(connection, { context in
            DBusLoopSources.from(context).wakeIfForeign()
        }, context, nil)
        dbus_connection_set_dispatch_status_function(connection, { _, status, context in
            if status == DBUS_DISPATCH_DATA_REMAINS { DBusLoopSources.from(context).wakeIfForeign() }
        }, context, nil)
    }

    /// Detaches every callback so libdbus holds no pointer to us once the connection is gone.
    func uninstall(from connection: OpaquePointer) {
        dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
        dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
        dbus_connection_set_wakeup_main_function(connection, nil, nil, nil)
        dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
    }

    /// The table key of a libdbus watch or timeout pointer.
    static func key(_ pointer: OpaquePointer?) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(pointer))) }

    private static func from(_ context: UnsafeMutableRawPointer?) -> DBusLoopSources {
        Unmanaged<DBusLoopSources>.fromOpaque(context!).takeUnretainedValue()
    }

    private func changed(_ body: (inout State) -> Void) {
        state.withLock { body(&$0) }
        wakeIfForeign()
    }

    private func wakeIfForeign() {
        if isLoopThread?() == false { wake?() }
    }

    /// Enabled watches, and how long poll may sleep before the earliest enabled timeout (-1: forever).
    func snapshot() -> (watches: [(UInt, Watch)], timeoutMillis: Int32) {
        state.withLock { state in
            let watches = state.watches.filter { $0.value.enabled }.map { ($0.key, $0.value) }
            guard let earliest = state.timeouts.values.filter(\.enabled).map(\.deadline).min() else {
                return (watches, -1)
            }
            let now = DBusLoopSources.now()
            let millis = earliest <= now ? 0 : (earliest - now + 999_999) / 1_000_000
            return (watches, Int32(clamping: millis))
        }
    }

    func isCurrent(_ watch: UInt, id: UInt64) -> Bool {
        state.withLock { $0.watches[watch]?.id == id }
    }

    /// Runs every enabled timeout whose deadline has passed, re-arming it for its next interval.
    func runDueTimeouts() {
        let now = DBusLoopSources.now()
        let due = state.withLock { state in
            state.timeouts.filter { $0.value.enabled && $0.value.deadline <= now }.map { ($0.key, $0.value.id) }
        }
        for (timeout, id) in due {
            let stillCurrent = state.withLock { state -> Bool in
                guard var entry = state.timeouts[timeout], entry.id == id else { return false }
                entry.deadline = DBusLoopSources.now() + entry.intervalNanos
                state.timeouts[timeout] = entry
                return true
            }
            if stillCurrent { dbus_timeout_handle(OpaquePointer(bitPattern: timeout)) }
        }
    }
}

/// The `pollfd` array of one loop iteration: the eventfd first, then libdbus's enabled watches.
struct DBusPollSet {
    private var descriptors: [pollfd] = []
    private var watches: [(UInt, DBusLoopSources.Watch)] = []

    /// Blocks until a descriptor is ready, the eventfd is written, or the next timeout is due.
    ///
    /// Right after a busy iteration it first re-polls without blocking for up to `spinNanos`:
    /// in request/reply traffic the next call or reply usually lands within microseconds, and
    /// catching it here saves a sleep/wake-up of this thread. An idle loop never spins.
    mutating func wait(wakeFD: Int32, sources: DBusLoopSources, spinNanos: UInt64 = 0) {
        let (snapshot, timeout) = sources.snapshot()
        watches = snapshot
        descriptors.removeAll(keepingCapacity: true)
        descriptors.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
        for (_, watch) in snapshot {
            var events: Int16 = 0
            if watch.flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= Int16(POLLIN) }
            if watch.flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
            descriptors.append(pollfd(fd: watch.fd, events: events, revents: 0))
        }
        var ready: Int32 = 0
        if spinNanos > 0, timeout != 0 {
            let deadline = DBusLoopSources.now() + spinNanos
            repeat {
                ready = poll(&descriptors, nfds_t(descriptors.count), 0)
            } while ready == 0 && DBusLoopSources.now() < deadline
        }
        if ready == 0 { ready = poll(&descriptors, nfds_t(descriptors.count), timeout) }
        if ready <= 0 {
            for index in descriptors.indices { descriptors[index].revents = 0 }
            return
        }
        if descriptors[0].revents & Int16(POLLIN) != 0 {
            var counter: UInt64 = 0
            _ = read(wakeFD, &counter, 8)
        }
    }

    /// Hands each ready descriptor to libdbus, which reads, writes or notices a hang-up.
    /// Returns whether any was ready.
    @discardableResult
    func handleReadyWatches(sources: DBusLoopSources) -> Bool {
        var any = false
        for (offset, (watch, entry)) in watches.enumerated() {
            let revents = descriptors[offset + 1].revents
            guard revents != 0 else { continue }
            any = true
            var flags: UInt32 = 0
            if revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
            if revents & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
            if revents & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
            if revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
            if sources.isCurrent(watch, id: entry.id) { dbus_watch_handle(OpaquePointer(bitPattern: watch), flags) }
        }
        return any
    }
}
