import AsyncSignals
internal import CDBus
import Glibc
import Synchronization

/// The one I/O thread of a connection: it owns the libdbus `DBusConnection*`, blocks in
/// `poll()` on libdbus's watch descriptors plus an eventfd, runs libdbus timeouts and dispatches.
///
/// Every libdbus call on the connection happens under one I/O lock: on this thread, or inline
/// in a caller's `perform` when this thread is asleep (a non-blocking send), so libdbus never
/// removes a watch while we are about to handle it, and Swift concurrency threads never block
/// on I/O. The eventfd is written when a closure is queued
/// onto an empty queue and by libdbus's wake-up hook, so a call issued while the connection is
/// idle is sent at once; with nothing to do the thread sleeps in `poll()` with no timeout.
final class DBusEventLoop: @unchecked Sendable {
    /// A unit of work for the I/O thread; it receives nil when the connection is gone.
    typealias Operation = @Sendable (OpaquePointer?) -> Void
    /// Called on the I/O thread for every incoming message; true means "handled".
    typealias MessageHandler = @Sendable (DBusMessage, DBusEventLoop) -> Bool

    private struct Queue {
        var operations: [Operation] = []
        var closed = false
        var closeRequested = false
    }

    private let queue = Mutex(Queue())
    /// Held by whoever is talking to libdbus about this connection: the I/O thread for each
    /// iteration (released only while it sleeps in poll), or a caller running its operation
    /// inline. libdbus only creates or frees watches inside such a section, so the I/O thread
    /// never handles a watch that another thread is freeing.
    private let ioLock = Mutex(())
    let sources = DBusLoopSources()
    private let wakeFD: Int32
    private let handler: MessageHandler
    private let onClosed: @Sendable () -> Void
    /// Only touched on the I/O thread.
    private var connection: OpaquePointer?
    private var loopThread = pthread_t()
    private let disconnectedFlag = Atomic<Bool>(false)
    /// How the connection ended, once it has: resolved on the I/O thread as it shuts down.
    let ending = OneShotSignal<DBusConnectionEnd, Never>()
    /// Calls awaiting replies; I/O thread only. Whatever is left at shutdown fails with
    /// `disconnected`, since libdbus does not reliably complete them when we close.
    var outstanding: [ObjectIdentifier: DBusPendingReply] = [:]

    private init(handler: @escaping MessageHandler, onClosed: @escaping @Sendable () -> Void) {
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        self.handler = handler
        self.onClosed = onClosed
    }

    deinit { if wakeFD >= 0 { Glibc.close(wakeFD) } }

    /// Whether the connection has been closed or lost; safe from any thread.
    var isDisconnected: Bool { disconnectedFlag.load(ordering: .acquiring) }

    /// Opens a private connection to `address`, registers with the bus (Hello) on a new I/O
    /// thread, and returns the running loop with our unique name.
    static func open(
        address: String, handler: @escaping MessageHandler, onClosed: @escaping @Sendable () -> Void
    ) async throws(DBusError) -> (DBusEventLoop, String) {
        DBusThreads.initialize()
        let loop = DBusEventLoop(handler: handler, onClosed: onClosed)
        guard loop.wakeFD >= 0 else {
            throw .connectionFailed(address: address, reason: "cannot create an eventfd: \(String(cString: strerror(errno)))")
        }
        do {
            let name: String = try await withCheckedThrowingContinuation { continuation in
                let start = StartContext(loop: loop, address: address, continuation: continuation)
                var thread = pthread_t()
                let context = Unmanaged.passRetained(start).toOpaque()
                let status = pthread_create(&thread, nil, { raw in
                    let start = Unmanaged<StartContext>.fromOpaque(raw!).takeRetainedValue()
                    start.loop.threadMain(start)
                    return nil
                }, context)
                if status != 0 {
                    Unmanaged<StartContext>.fromOpaque(context).release()
                    continuation.resume(throwing: DBusError.connectionFailed(address: address, reason: "cannot start the I/O thread"))
                } else {
                    pthread_detach(thread)
                }
            }
            return (loop, name)
        } catch let error as DBusError {
            throw error
        } catch {
            throw .connectionFailed(address: address, reason: "\(error)")
        }
    }

    private final class StartContext: @unchecked Sendable {
        let loop: DBusEventLoop
        let address: String
        let continuation: CheckedContinuation<String, Error>
        init(loop: DBusEventLoop, address: String, continuation: CheckedContinuation<String, Error>) {
            self.loop = loop
            self.address = address
            self.continuation = continuation
        }
    }

    /// Queues `operation` for the I/O thread, waking it if it is idle. After the connection is
    /// gone the operation runs at once, on the caller's thread, with nil.
    func perform(_ operation: @escaping Operation) {
        // Fast path: while the I/O thread sleeps in poll and nothing is queued, run the
        // operation here (a send is a non-blocking write); this saves waking the I/O thread
        // before the message can leave.
        let ranInline = ioLock.withLockIfAvailable { _ -> Bool in
            guard let connection, queue.withLock({ $0.operations.isEmpty && !$0.closeRequested && !$0.closed }) else {
                return false
            }
            operation(connection)
            return true
        }
        if ranInline == true { return }
        let (wake, runNow) = queue.withLock { queue -> (Bool, Bool) in
            if queue.closed { return (false, true) }
            let wasEmpty = queue.operations.isEmpty
            queue.operations.append(operation)
            return (wasEmpty, false)
        }
        if runNow { operation(nil) } else if wake { wakeUp() }
    }

    /// Asks the I/O thread to close the connection; pending work then fails with `disconnected`.
    func close() {
        let wake = queue.withLock { queue -> Bool in
            guard !queue.closed, !queue.closeRequested else { return false }
            queue.closeRequested = true
            return true
        }
        if wake { wakeUp() }
    }

    func wakeUp() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// How long the I/O thread re-polls without sleeping after doing work (see `DBusPollSet.wait`).
    static let spinNanos: UInt64 = 30_000

    var isOnLoopThread: Bool { pthread_equal(pthread_self(), loopThread) != 0 }

    // MARK: - The I/O thread

    private func threadMain(_ start: StartContext) {
        loopThread = pthread_self()
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_connection_open_private(start.address, &error) else {
            finishStartup(start, failure: Self.message(of: error, or: "cannot open the connection"))
            return
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        guard dbus_bus_register(connection, &error) != 0, let unique = dbus_bus_get_unique_name(connection) else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            finishStartup(start, failure: Self.message(of: error, or: "the bus did not accept us (Hello failed)"))
            return
        }
        self.connection = connection
        sources.install(on: connection, loop: self)
        let context = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_add_filter(connection, { _, message, context in
            let loop = Unmanaged<DBusEventLoop>.fromOpaque(context!).takeUnretainedValue()
            guard let message else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            dbus_message_ref(message)
            return loop.handler(DBusMessage(taking: message), loop) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }, context, nil)
        start.continuation.resume(returning: String(cString: unique))
        run(connection)
    }

    private func finishStartup(_ start: StartContext, failure reason: String) {
        disconnectedFlag.store(true, ordering: .releasing)
        queue.withLock { $0.closed = true }
        ending.succeed(.closed)
        start.continuation.resume(throwing: DBusError.connectionFailed(address: start.address, reason: reason))
    }

    private static func message(of error: CDBus.DBusError, or fallback: String) -> String {
        guard dbus_error_is_set([error]) != 0, let text = error.message else { return fallback }
        return String(cString: text)
    }

    private func run(_ connection: OpaquePointer) {
        var pollSet = DBusPollSet()
        var busy = false
        while true {
            let (stop, ranOperations) = ioLock.withLock { _ -> (DBusConnectionEnd?, Bool) in
                let (operations, closeRequested) = queue.withLock { queue -> ([Operation], Bool) in
                    let taken = queue.operations
                    queue.operations.removeAll(keepingCapacity: true)
                    return (taken, queue.closeRequested)
                }
                for operation in operations { operation(connection) }
                while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
                // Asked to close wins over a drop noticed at the same time: we meant to end it.
                let end: DBusConnectionEnd? = closeRequested ? .closed
                    : dbus_connection_get_is_connected(connection) == 0 ? .lost : nil
                return (end, !operations.isEmpty)
            }
            if let stop {
                ioLock.withLock { _ in shutDown(connection) }
                ending.succeed(stop)
                return
            }

            pollSet.wait(wakeFD: wakeFD, sources: sources, spinNanos: busy || ranOperations ? Self.spinNanos : 0)
            busy = ioLock.withLock { _ -> Bool in
                let handled = pollSet.handleReadyWatches(sources: sources)
                sources.runDueTimeouts()
                return handled
            }
        }
    }

    /// Closes the connection, lets libdbus complete every pending call and deliver its local
    /// `Disconnected` signal, then fails whatever is still queued.
    private func shutDown(_ connection: OpaquePointer) {
        disconnectedFlag.store(true, ordering: .releasing)
        dbus_connection_close(connection)
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
        for call in outstanding.values { call.abandon() }
        outstanding = [:]
        let leftovers = queue.withLock { queue -> [Operation] in
            queue.closed = true
            defer { queue.operations = [] }
            return queue.operations
        }
        for operation in leftovers { operation(nil) }
        sources.uninstall(from: connection)
        self.connection = nil
        dbus_connection_unref(connection)
        onClosed()
    }
}

/// `dbus_threads_init_default` must run once, before any other libdbus use.
enum DBusThreads {
    private static let initialized: Bool = { dbus_threads_init_default() != 0 }()
    static func initialize() { _ = initialized }
}
