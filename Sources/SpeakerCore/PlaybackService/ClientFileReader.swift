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
/// directly, after their size (`fstat`) is judged against the limit: a file over it is refused
/// before a byte is read. Anything else that can never deliver a song (a directory, `/dev/null`,
/// an eventfd: `SongFileKind`) fails at once, naming its kind. The descriptor is closed whatever
/// happens. (O_NONBLOCK is set on the open file description the client shares; the client has
/// handed it over and reads it no more.)
///
/// Every byte the read keeps is reserved first in the request's `SongReadBudget.Account`: a
/// regular file's whole size up front, a pipe's buffer as it grows. A reservation the budget
/// refuses ends the read at once with `busy`.
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
        /// A regular file of `size` bytes (by `fstat`), over `limit`: refused before reading.
        case fileTooLarge(size: Int, limit: Int)
        /// Keeping more bytes would pass the budget for songs being read.
        case busy(SongReadBudget.Refusal)
    }

    static func readAll(_ descriptor: FileDescriptor, limit: Int, timeout: Duration, clock: any Clock<Duration>,
                        account: SongReadBudget.Account) async throws(Failure) -> [UInt8] {
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
            var info = stat()
            let size = fstat(descriptor.rawValue, &info) == 0 ? Int(info.st_size) : 0
            guard size <= limit else { throw .fileTooLarge(size: size, limit: limit) }
            let reader = AccumulatingRead(limit: limit, account: account)
            if let refusal = reader.prepare(expecting: size) { throw refusal }
            return try reader.drain(descriptor.rawValue).get()
        }
        let flags = fcntl(descriptor.rawValue, F_GETFL)
        guard flags >= 0, fcntl(descriptor.rawValue, F_SETFL, flags | O_NONBLOCK) == 0 else {
            let reason = String(cString: strerror(errno))
            try? descriptor.close()
            throw .unreadable(reason)
        }
        let reader = AccumulatingRead(limit: limit, account: account)
        if let refusal = reader.prepare(expecting: 0) {
            try? descriptor.close()
            throw refusal
        }
        // What the pipe holds already is read now: the whole song when the client wrote it before
        // calling, and otherwise counted from the start (a time-out then says what had arrived).
        if let outcome = reader.drainAvailable(descriptor.rawValue) {
            try? descriptor.close()
            return try outcome.get()
        }
        let watch = PipeWatch(descriptor: descriptor, reader: reader)
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

/// Bytes read so far, within the limit and within the request's share of the read budget.
///
/// Its buffer grows by half again (not doubling) and every growth is reserved in the budget
/// before it is made, so what the budget counts is what the buffer holds, give or take malloc's
/// rounding; while a growth copies, the old buffer is held a moment longer.
private final class AccumulatingRead: @unchecked Sendable {
    private(set) var bytes: [UInt8] = []
    private let limit: Int
    private let account: SongReadBudget.Account
    /// The buffer's capacity as reserved in the budget.
    private var reservedCapacity = 0
    /// The read(2) buffer, allocated (and reserved) by `prepare`.
    private var chunk: [UInt8] = []
    static let chunkSize = 64 * 1024

    init(limit: Int, account: SongReadBudget.Account) {
        self.limit = limit
        self.account = account
    }

    /// Reserves the read buffer and room for `expected` bytes (a regular file's size), or says
    /// why the budget refuses them.
    func prepare(expecting expected: Int) -> ClientFileReader.Failure? {
        if let refusal = account.reserve(Self.chunkSize) { return .busy(refusal) }
        chunk = [UInt8](repeating: 0, count: Self.chunkSize)
        return expected > 0 ? ensureRoom(for: expected) : nil
    }

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
            if let refusal = ensureRoom(for: count) { return .failure(refusal) }
            bytes += chunk[..<count]
            if bytes.count > limit { return .failure(.tooLarge(received: bytes.count, limit: limit)) }
        }
    }

    /// Grows the buffer (reserved first) so that `count` more bytes fit.
    private func ensureRoom(for count: Int) -> ClientFileReader.Failure? {
        let needed = bytes.count + count
        guard needed > reservedCapacity else { return nil }
        let ceiling = max(needed, limit + Self.chunkSize)
        let grown = min(max(needed, reservedCapacity + reservedCapacity / 2, Self.chunkSize), ceiling)
        if let refusal = account.reserve(grown - reservedCapacity) { return .busy(refusal) }
        bytes.reserveCapacity(grown)
        reservedCapacity = grown
        return nil
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

    init(descriptor: FileDescriptor, reader: AccumulatingRead) {
        let fd = descriptor.rawValue
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: Self.queue)
        self.source = source
        state.withLock { $0.received = reader.bytes.count }
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
