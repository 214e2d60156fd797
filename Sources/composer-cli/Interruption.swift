import Dispatch
import Glibc
import Synchronization

/// SIGINT and SIGTERM handed to the command instead of killing the process, so it can finish
/// what the person expects of an interrupt: a render removes its partial file, `play --wait`
/// stops its song (or, with `--detach`, says that it plays on).
final class Interruption: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let signal = Mutex<Int32?>(nil)

    init(onSignal: @escaping @Sendable (Int32) -> Void) {
        var made: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            made.append(source)
        }
        sources = made
        for (source, number) in zip(sources, [SIGINT, SIGTERM]) {
            source.setEventHandler { [weak self] in
                self?.signal.withLock { if $0 == nil { $0 = number } }
                onSignal(number)
            }
            source.activate()
        }
    }

    /// The first signal received, if any.
    var received: Int32? { signal.withLock { $0 } }

    /// Ends the command as the signal would have (128 + its number: 130 for Ctrl-C, 143 for
    /// SIGTERM), with `line` as its one line on stderr (after a newline on a terminal's progress
    /// line when `belowProgress`). Safe from any thread: the process ends here.
    static func exit(after signal: Int32, saying line: String, belowProgress: Bool = false) -> Never {
        let text = Array("\(belowProgress && isatty(STDOUT_FILENO) == 1 ? "\n" : "")composer-cli: \(line)\n".utf8)
        _ = text.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        Glibc._exit(128 + signal)
    }

    /// `exit(after:saying:)` in `delay`, for a command that may not see its own end come in time
    /// (a read that cancellation cannot reach, a daemon that does not answer).
    static func exit(after signal: Int32, in delay: Duration, saying line: String, belowProgress: Bool = false) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(delay / .nanoseconds(1)))) {
            exit(after: signal, saying: line, belowProgress: belowProgress)
        }
    }

    func stop() {
        for source in sources { source.cancel() }
        Glibc.signal(SIGINT, SIG_DFL)
        Glibc.signal(SIGTERM, SIG_DFL)
    }
}
