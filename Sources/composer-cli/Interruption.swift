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

    func stop() {
        for source in sources { source.cancel() }
        Glibc.signal(SIGINT, SIG_DFL)
        Glibc.signal(SIGTERM, SIG_DFL)
    }
}
