import Glibc
import Synchronization

/// The `scripts/fake-bluez` process: its stdin (commands; closing it tears the world down)
/// and its stdout (the address, then one answer per command).
///
/// Spawned with posix_spawn rather than Foundation's `Process`: every pipe is close-on-exec
/// (so no other test's child inherits our stdin and keeps the world alive), the child starts
/// with an empty signal mask, and one plain thread per harness reads its output and reaps it.
/// Foundation's process monitor reaps children one at a time and can stall every waiter
/// behind one live child when many tests run in parallel.
final class FakeBusHarness: Sendable {
    private struct Lines {
        var buffered: [String] = []
        var partial: [UInt8] = []
        var waiting: [(id: UInt64, continuation: CheckedContinuation<Line, Never>)] = []
        var nextWaiter: UInt64 = 0
        var ended = false
    }

    private let pid: pid_t
    private let input: Mutex<Int32>
    private let lines = Mutex(Lines())
    private let errorText = Mutex<[UInt8]>([])
    /// Serialises commands so each answer is read by the command that asked.
    private let commandLock = AsyncSerialLock()

    init(script: String, arguments: [String]) throws {
        var stdinPipe: [Int32] = [-1, -1], stdoutPipe: [Int32] = [-1, -1], stderrPipe: [Int32] = [-1, -1]
        // pipe2(O_CLOEXEC) is not visible from Swift; a descriptor leaked in the short window
        // before fcntl is closed again by the script's own start-up.
        guard pipe(&stdinPipe) == 0, pipe(&stdoutPipe) == 0, pipe(&stderrPipe) == 0 else {
            throw FakeBusWorldError.startFailed("cannot create pipes: \(String(cString: strerror(errno)))")
        }
        for fd in stdinPipe + stdoutPipe + stderrPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([script] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, script, &actions, &attributes, argv, environ)
        for fd in [stdinPipe[0], stdoutPipe[1], stderrPipe[1]] { close(fd) }
        guard status == 0 else {
            for fd in [stdinPipe[1], stdoutPipe[0], stderrPipe[0]] { close(fd) }
            throw FakeBusWorldError.startFailed("cannot run \(script): \(String(cString: strerror(status)))")
        }
        pid = child
        input = Mutex(stdinPipe[1])
        startReader(stdout: stdoutPipe[0], stderr: stderrPipe[0])
    }

    deinit { terminate() }

    /// One thread reads stdout and stderr until both close, then reaps the script.
    private func startReader(stdout: Int32, stderr: Int32) {
        let context = Unmanaged.passRetained(ReaderContext(harness: self, stdout: stdout, stderr: stderr)).toOpaque()
        var thread = pthread_t()
        if pthread_create(&thread, nil, { raw in
            let context = Unmanaged<ReaderContext>.fromOpaque(raw!).takeRetainedValue()
            context.run()
            return nil
        }, context) == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<ReaderContext>.fromOpaque(context).release()
            receive(stdout: [], ended: true)
        }
    }

    private final class ReaderContext: @unchecked Sendable {
        weak var harness: FakeBusHarness?
        let stdout: Int32
        let stderr: Int32
        let pid: pid_t
        init(harness: FakeBusHarness, stdout: Int32, stderr: Int32) {
            self.harness = harness
            self.stdout = stdout
            self.stderr = stderr
            self.pid = harness.pid
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
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
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
