import AsyncSignals
import Glibc
import Playback

import Synchronization

/// The `scripts/fake-bluez` process: its stdin (commands; closing it tears the world down)
/// and its stdout (the address, then one answer per command).
///
/// Spawned through `SpawnedProcess` rather than Foundation's `Process`: every pipe is
/// close-on-exec (so no other test's child inherits our stdin and keeps the world alive), the
/// child starts with an empty signal mask, one plain thread per harness reads its output, and
/// SpawnedProcess's own thread reaps it. Foundation's process monitor reaps children one at a
/// time and can stall every waiter behind one live child when many tests run in parallel.
final class FakeBusHarness: Sendable {
    private struct Lines {
        var buffered: [String] = []
        var partial: [UInt8] = []
        var waiting: [(id: UInt64, continuation: CheckedContinuation<Line, Never>)] = []
        var nextWaiter: UInt64 = 0
        var ended = false
    }

    private let input: Mutex<Int32>
    private let lines = Mutex(Lines())
    private let errorText = Mutex<[UInt8]>([])
    /// Serialises commands so each answer is read by the command that asked.
    private let commandLock = AsyncSerialLock()

    init(script: String, arguments: [String]) throws {
        // Pipes, though files are safer (see SpawnedProcess): an end leaked into another test's
        // fake-bus script in the short window before close-on-exec is set is closed again by that
        // script's own start-up (`os.closerange`).
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess.spawn(script, arguments, standardInput: .pipe,
                                               standardOutput: .pipe, standardError: .pipe)
        } catch {
            throw FakeBusWorldError.startFailed(error.description)
        }
        input = Mutex(process.standardInputPipe!)
        startReader(stdout: process.standardOutputPipe!, stderr: process.standardErrorPipe!)
    }

    deinit { terminate() }

    /// One thread reads stdout and stderr until both close.
    private func startReader(stdout: Int32, stderr: Int32) {
        let context = ReaderContext(harness: self, stdout: stdout, stderr: stderr)
        if !DetachedThread.startIfPossible(name: "fake-bus-reader", { context.run() }) {
            for fd in [stdout, stderr] { close(fd) }
            receive(stdout: [], ended: true)
        }
    }

    private final class ReaderContext: @unchecked Sendable {
        weak var harness: FakeBusHarness?
        let stdout: Int32
        let stderr: Int32
        init(harness: FakeBusHarness, stdout: Int32, stderr: Int32) {
            self.harness = harness
            self.stdout = stdout
            self.stderr = stderr
        }

        func run() {
            var open = [stdout, stderr]
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !open.isEmpty {
                var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                guard poll(&fds, nfds_t(fds.count), -1) >= 0 || errno == EINTR else { break }
                for entry in fds where entry.revents != 0 {
                    let count = read(entry.fd, &buffer, buffer.count)
                    if count <= 0 {
                        if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                        close(entry.fd)
                        open.removeAll { $0 == entry.fd }
                        if entry.fd == stdout { harness?.receive(stdout: [], ended: true) }
                    } else if entry.fd == stdout {
                        harness?.receive(stdout: Array(buffer[0..<count]), ended: false)
                    } else {
                        harness?.appendError(Array(buffer[0..<count]))
                    }
                }
            }
        }
    }

    private func appendError(_ bytes: [UInt8]) {
        errorText.withLock { text in
            text += bytes
            if text.count > 8192 { text.removeFirst(text.count - 8192) }
        }
    }

    /// What a wait for the script's next line of stdout ended with.
    enum Line: Sendable, Equatable {
        case text(String)
        /// The script exited (its stdout closed).
        case ended
        /// Nothing came within the wait's bound: the script is stuck.
        case timedOut(Duration)

        var text: String? { if case .text(let text) = self { text } else { nil } }
    }

    private func receive(stdout bytes: [UInt8], ended: Bool) {
        let resumptions = lines.withLock { state -> [(CheckedContinuation<Line, Never>, Line)] in
            if ended { state.ended = true }
            state.partial += bytes
            while let newline = state.partial.firstIndex(of: UInt8(ascii: "\n")) {
                state.buffered.append(String(decoding: state.partial[..<newline], as: UTF8.self))
                state.partial.removeSubrange(...newline)
            }
            var result: [(CheckedContinuation<Line, Never>, Line)] = []
            while !state.waiting.isEmpty, !state.buffered.isEmpty {
                result.append((state.waiting.removeFirst().continuation, .text(state.buffered.removeFirst())))
            }
            if state.ended {
                result += state.waiting.map { ($0.continuation, .ended) }
                state.waiting = []
            }
            return result
        }
        for (continuation, line) in resumptions { continuation.resume(returning: line) }
    }

    /// The next line of stdout, `.ended` once the script has exited, or `.timedOut` when
    /// nothing came within `limit` of real time. The script bounds its own waits (10 s for the
    /// mock), so the bound only turns a stuck script into a clear failure instead of a hang.
    func nextLine(within limit: Duration = .seconds(30)) async -> Line {
        let id = lines.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled, let self else { return }
            let stuck = self.lines.withLock { state -> CheckedContinuation<Line, Never>? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index).continuation
            }
            stuck?.resume(returning: .timedOut(limit))
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ready = lines.withLock { state -> Line? in
                if !state.buffered.isEmpty { return .text(state.buffered.removeFirst()) }
                if state.ended { return .ended }
                state.waiting.append((id, continuation))
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Sends one command line and returns the script's one-line answer (`.ended` if it could
    /// not be sent).
    func send(_ command: String) async -> Line {
        await commandLock.run {
            let written = input.withLock { fd -> Bool in
                guard fd >= 0 else { return false }
                let bytes = Array((command + "\n").utf8)
                return write(fd, bytes, bytes.count) == bytes.count
            }
            guard written else { return .ended }
            return await nextLine()
        }
    }

    func standardErrorTail() -> String {
        String(decoding: errorText.withLock { $0 }, as: UTF8.self)
    }

    /// Closes stdin (the script then tears down everything) without waiting.
    func terminate() {
        input.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    /// Closes stdin and waits until the script's stdout closes: by then the script, the mock
    /// and the bus (which shares that stdout) have all exited. Returns false if it did not
    /// within the bound.
    @discardableResult
    func stop() async -> Bool {
        terminate()
        while true {
            switch await nextLine() {
            case .text: continue
            case .ended: return true
            case .timedOut: return false
            }
        }
    }
}

/// A FIFO async lock: one command at a time talks to the script.
actor AsyncSerialLock {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func run<T: Sendable>(_ body: @Sendable () async -> T) async -> T {
        if busy {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            busy = true
        }
        let result = await body()
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
        return result
    }
}
