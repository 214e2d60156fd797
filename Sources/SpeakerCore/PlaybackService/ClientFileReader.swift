import Dispatch
import Glibc
import Playback
import Synchronization
import SystemPackage

/// Reads everything a client sent through a descriptor without holding a thread while it waits.
///
/// A client may send a pipe (`cat song.mid | composer-cli play -`) whose writer is slow or never
/// closes. A blocking read would park one thread per such request until the size limit or the
/// end; instead the descriptor is made non-blocking and watched by a Dispatch read source (epoll
/// underneath), which reads only what is there when it is there. A deadline on the injected clock
/// bounds the whole read. Regular files cannot block (and epoll refuses them), so they are read
/// directly. Anything else that can never deliver a song (a directory, `/dev/null`, an eventfd:
/// `SongFileKind`) fails at once, naming its kind. The descriptor is closed whatever happens. (O_NONBLOCK is set on the open file
/// description the client shares; the client has handed it over and reads it no more.)
enum ClientFileReader {
    /// Why the bytes could not all be read.
    enum Failure: Error, Equatable {
        /// More than `limit` bytes arrived (`received` when the read stopped).
        case tooLarge(received: Int, limit: Int)
        /// The writer had not closed its end by the deadline; `received` bytes had arrived.
        case timedOut(received: Int)
        /// read(2) failed.
        case unreadable(String)
        /// The caller's task was cancelled.
        case cancelled
        /// The descriptor is not a file or stream a song can come from.
        case notASong(SongFileKind)
    }

    static func readAll(_ descriptor: FileDescriptor, limit: Int, timeout: Duration,
                        clock: any Clock<Duration>) async throws(Failure) -> [UInt8] {
        guard let kind = SongFileKind(descriptor: descriptor.rawValue) else {
            let reason = String(cString: strerror(errno))
            try? descriptor.close()
            throw .unreadable(reason)
        }
        guard kind.canHoldSong else {
            try? descriptor.close()
            throw .notASong(kind)
        }
        if kind == .regularFile {
            defer { try? descriptor.close() }
            let reader = AccumulatingRead(limit: limit)
            return try reader.drain(descriptor.rawValue).get()
        }
        let flags = fcntl(descriptor.rawValue, F_GETFL)
        guard flags >= 0, fcntl(descriptor.rawValue, F_SETFL, flags | O_NONBLOCK) == 0 else {
            let reason = String(cString: strerror(errno))
            try? descriptor.close()
            throw .unreadable(reason)
        }
        let watch = PipeWatch(descriptor: descriptor, limit: limit)
        let deadline = Task {
            try? await clock.sleep(for: timeout)
            if !Task.isCancelled { watch.finish(.failure(.timedOut(received: watch.received))) }
        }
        defer { deadline.cancel() }
        let result = await withTaskCancellationHandler {
            await watch.result()
        } onCancel: {
            watch.finish(.failure(.cancelled))
        }
        return try result.get()
    }
}

/// Bytes read so far, within the limit.
private final class AccumulatingRead: @unchecked Sendable {
    private(set) var bytes: [UInt8] = []
    private let limit: Int
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)

    init(limit: Int) { self.limit = limit }

    /// Reads until the end (`.success`), until nothing is available yet (nil), or a failure.
    func drain(_ fd: Int32) -> Result<[UInt8], ClientFileReader.Failure> {
        drainAvailable(fd) ?? .success(bytes)
    }

    /// Like `drain`, but returns nil when the descriptor has nothing more for now.
    func drainAvailable(_ fd: Int32) -> Result<[UInt8], ClientFileReader.Failure>? {
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return .success(bytes) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
                return .failure(.unreadable(String(cString: strerror(errno))))
            }
            bytes += chunk[..<count]
            if bytes.count > limit { return .failure(.tooLarge(received: bytes.count, limit: limit)) }
        }
    }
}

/// One non-blocking descriptor under a Dispatch read source, until end, failure or `finish`.
/// Its mutable state is behind the Mutex; the source is only activated and cancelled.
private final class PipeWatch: @unchecked Sendable {
    private struct State {
        var outcome: Result<[UInt8], ClientFileReader.Failure>?
        var waiter: CheckedContinuation<Result<[UInt8], ClientFileReader.Failure>, Never>?
        var received = 0
        var closed = false
        var closeWaiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    private let source: any DispatchSourceRead
    private static let queue = DispatchQueue(label: "speakerd.client-file-read")

    init(descriptor: FileDescriptor, limit: Int) {
        let fd = descriptor.rawValue
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: Self.queue)
        self.source = source
        let reader = AccumulatingRead(limit: limit)
        // Dispatch owns the descriptor until its source is cancelled: close it only then.
        // Held strongly until then: Dispatch drops its handlers once the source is cancelled.
        source.setCancelHandler {
            try? descriptor.close()
            self.state.withLock { state in
                state.closed = true
                defer { state.closeWaiter = nil }
                return state.closeWaiter
            }?.resume()
        }
        source.setEventHandler { [weak self] in
            let outcome = reader.drainAvailable(fd)
            self?.state.withLock { $0.received = reader.bytes.count }
            if let outcome { self?.finish(outcome) }
        }
        source.activate()
    }

    var received: Int { state.withLock { $0.received } }

    /// Records the outcome (the first one wins), stops watching, and wakes the reader.
    func finish(_ outcome: Result<[UInt8], ClientFileReader.Failure>) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<[UInt8], ClientFileReader.Failure>, Never>?? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiter = nil }
            return .some(state.waiter)
        }
        guard let waiter else { return }
        source.cancel()
        waiter?.resume(returning: outcome)
    }

    /// The outcome, once the descriptor is closed too (the caller may then tell the client so).
    func result() async -> Result<[UInt8], ClientFileReader.Failure> {
        let outcome = await outcome()
        await withCheckedContinuation { continuation in
            let closed = state.withLock { state -> Bool in
                if !state.closed { state.closeWaiter = continuation }
                return state.closed
            }
            if closed { continuation.resume() }
        }
        return outcome
    }

    private func outcome() async -> Result<[UInt8], ClientFileReader.Failure> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<[UInt8], ClientFileReader.Failure>? in
                if let outcome = state.outcome { return outcome }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
