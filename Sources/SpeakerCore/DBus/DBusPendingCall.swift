internal import CDBus
import Synchronization

/// One method call waiting for its reply: the bridge between libdbus's pending-call
/// notification (on the I/O thread) and the awaiting task.
///
/// Exactly one of reply, timeout, disconnection or cancellation resumes the task; the
/// `DBusPendingCall*` is owned here, only touched on the I/O thread, and unref'd once.
final class DBusPendingReply: @unchecked Sendable {
    private enum State {
        case created
        case waiting(UnsafeContinuation<DBusMessage, Error>)
        /// Finished (cancelled) before the continuation was installed.
        case finishedEarly(Result<DBusMessage, Error>)
        case done
    }

    private let state = Mutex(State.created)
    /// I/O thread only.
    private var pending: OpaquePointer?
    /// I/O thread only; set while the call is in the loop's outstanding table.
    private var loop: DBusEventLoop?

    /// Sends `message` through `loop` and waits for its reply message (which may be an error).
    static func send(_ message: DBusMessage, timeoutMillis: Int32, on loop: DBusEventLoop) async throws -> DBusMessage {
        let call = DBusPendingReply()
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                guard call.install(continuation) else { return }
                loop.perform { connection in call.start(message, timeoutMillis: timeoutMillis, connection: connection, loop: loop) }
            }
        } onCancel: {
            call.finish(.failure(DBusError.cancelled))
            loop.perform { _ in call.cancelPending() }
        }
    }

    /// Installs the waiting task; false if the call already finished (cancelled early).
    private func install(_ continuation: UnsafeContinuation<DBusMessage, Error>) -> Bool {
        let early = state.withLock { state -> Result<DBusMessage, Error>? in
            switch state {
            case .created:
                state = .waiting(continuation)
                return nil
            case .finishedEarly(let result):
                state = .done
                return result
            case .waiting, .done:
                return .failure(DBusError.cancelled)
            }
        }
        guard let early else { return true }
        continuation.resume(with: early)
        return false
    }

    private func finish(_ result: Result<DBusMessage, Error>) {
        let waiting = state.withLock { state -> UnsafeContinuation<DBusMessage, Error>? in
            switch state {
            case .created:
                state = .finishedEarly(result)
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .finishedEarly, .done:
                return nil
            }
        }
        waiting?.resume(with: result)
    }

    private var isFinished: Bool {
        state.withLock { if case .waiting = $0 { false } else { true } }
    }

    /// I/O thread: hands the message to libdbus and arms the notification.
    private func start(_ message: DBusMessage, timeoutMillis: Int32, connection: OpaquePointer?, loop: DBusEventLoop) {
        guard let connection else { return finish(.failure(DBusError.disconnected)) }
        guard !isFinished else { return }
        if message.containsUnixFDs, dbus_connection_can_send_type(connection, DBusTypeCode.unixFD) == 0 {
            return finish(.failure(DBusError.invalidArgument("this D-Bus connection cannot pass file descriptors")))
        }
        var raw: OpaquePointer?
        guard dbus_connection_send_with_reply(connection, message.pointer, &raw, timeoutMillis) != 0, let raw else {
            return finish(.failure(DBusError.disconnected))
        }
        pending = raw
        self.loop = loop
        loop.outstanding[ObjectIdentifier(self)] = self
        let context = Unmanaged.passRetained(self).toOpaque()
        dbus_pending_call_set_notify(raw, { pending, context in
            Unmanaged<DBusPendingReply>.fromOpaque(context!).takeUnretainedValue().completed()
        }, context, { context in
            Unmanaged<DBusPendingReply>.fromOpaque(context!).release()
        })
        if dbus_pending_call_get_completed(raw) != 0 { completed() }
    }

    /// I/O thread: the reply (or libdbus's own timeout / disconnection error) is in.
    private func completed() {
        guard let raw = pending else { return }
        pending = nil
        loop?.outstanding[ObjectIdentifier(self)] = nil
        loop = nil
        let reply = dbus_pending_call_steal_reply(raw).map { DBusMessage(taking: $0) }
        dbus_pending_call_unref(raw)
        guard let reply else { return finish(.failure(DBusError.disconnected)) }
        finish(.success(reply))
    }

    /// I/O thread: the task was cancelled, so stop waiting for the reply.
    private func cancelPending() {
        guard let raw = pending else { return }
        pending = nil
        loop?.outstanding[ObjectIdentifier(self)] = nil
        loop = nil
        dbus_pending_call_cancel(raw)
        dbus_pending_call_unref(raw)
    }

    /// I/O thread, at shutdown: the connection is gone and no reply will come.
    func abandon() {
        guard let raw = pending else { return }
        pending = nil
        loop = nil
        dbus_pending_call_cancel(raw)
        dbus_pending_call_unref(raw)
        finish(.failure(DBusError.disconnected))
    }
}
