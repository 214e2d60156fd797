import Dispatch
import Glibc
import Synchronization

/// The pipe's end the signal handlers write to: a handler can capture nothing.
private let interruptPipe = Atomic<Int32>(-1)

/// SIGINT and SIGTERM handed to the command instead of killing the process, so it can finish
/// what the person expects of an interrupt: a render removes its partial file, `play --wait`
/// stops its song (or, with `--detach`, says that it plays on).
///
/// The handlers are installed with `sigaction` before `init` returns, and each only writes the
/// signal's number to a pipe that a dispatch source reads. A dispatch signal source registers
/// itself later, on libdispatch's own thread, while the signal is ignored: a signal in between
/// was lost, and a render stuck reading a pipe ran on until its writer closed. A byte in the
/// pipe waits for its reader.
final class Interruption: @unchecked Sendable {
    private let signal = Mutex<Int32?>(nil)
    private let source: (any DispatchSourceRead)?

    init(onSignal: @escaping @Sendable (Int32) -> Void) {
        var ends: [Int32] = [-1, -1]
        // No pipe (no descriptor left): the signals keep their default action and end the
        // command at once, without its line.
        guard pipe(&ends) == 0 else {
            source = nil
            return
        }
        let (reader, writer) = (ends[0], ends[1])
        for end in [reader, writer] {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        interruptPipe.store(writer, ordering: .releasing)
        let source = DispatchSource.makeReadSource(fileDescriptor: reader, queue: .global())
        self.source = source
        source.setEventHandler { [weak self] in
            var byte: UInt8 = 0
            while read(reader, &byte, 1) == 1 {
                let number = Int32(byte)
                self?.signal.withLock { if $0 == nil { $0 = number } }
                onSignal(number)
            }
        }
        source.setCancelHandler {
            close(reader)
            close(writer)
        }
        source.activate()
        for number in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(interruptPipe.load(ordering: .acquiring), &byte, 1)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
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

    /// The signals' default actions come back; the pipe is closed once its reader has stopped.
    func stop() {
        Glibc.signal(SIGINT, SIG_DFL)
        Glibc.signal(SIGTERM, SIG_DFL)
        source?.cancel()
    }
}
