import Clocks
import Logging
import Synchronization
import Testing

/// Collects log records so tests can assert what was (and was not) logged, per test.
final class LogCapture: Sendable {
    struct Record: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: [String: String]
    }

    private let records = Mutex<[Record]>([])

    var all: [Record] { records.withLock { $0 } }
    var warnings: [Record] { all.filter { $0.level == .warning } }

    func append(_ record: Record) { records.withLock { $0.append(record) } }

    /// A logger that writes into this capture only (no global `LoggingSystem` state).
    func logger(label: String = "test") -> Logger {
        Logger(label: label) { _ in CapturingHandler(capture: self) }
    }
}

private struct CapturingHandler: LogHandler {
    let capture: LogCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var flat: [String: String] = [:]
        for (key, value) in event.metadata ?? [:] { flat[key] = "\(value)" }
        capture.append(.init(level: event.level, message: "\(event.message)", metadata: flat))
    }
}

/// A clock whose time only moves when a test moves it, synchronously.
///
/// TestClock's `advance` is async, so it cannot move time *during* a synchronous block; this one
/// can, which is what measuring a "slow" block without sleeping needs. Sleeping on it returns at
/// once without moving time (so polite spacing passes instantly).
final class SteppingClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Self { .init(offset: offset + duration) }
        func duration(to other: Self) -> Duration { other.offset - offset }
        static func < (lhs: Self, rhs: Self) -> Bool { lhs.offset < rhs.offset }
    }

    private let current = Mutex(Instant(offset: .zero))
    var now: Instant { current.withLock { $0 } }
    var minimumResolution: Duration { .zero }

    func step(by duration: Duration) { current.withLock { $0.offset += duration } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
    }
}

/// The next element of an iterator, failing the test if the stream ended.
func next<Element>(
    _ iterator: inout AsyncStream<Element>.Iterator,
    sourceLocation: SourceLocation = #_sourceLocation
) async -> Element? {
    let element = await iterator.next()
    if element == nil { Issue.record("the stream ended early", sourceLocation: sourceLocation) }
    return element
}
