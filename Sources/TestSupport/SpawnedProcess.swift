import AsyncSignals
import Glibc
import Playback

import Synchronization

/// A helper program a test starts (pulseaudio, parec, speakerd, composer-cli, the fake bus script,
/// a dbusmock template), spawned with posix_spawn; every test spawns through here.
///
/// Not Foundation's `Process`: several tests (and the fake bus harness) start processes at once,
/// and concurrent `Process` use has crashed the test runner inside libdispatch. Here:
/// - the child starts with an empty signal mask and default SIGINT, SIGTERM, SIGPIPE and SIGHUP:
///   a child spawned from a pool thread would otherwise inherit that thread's blocked signals
///   (it would never see SIGINT);
/// - its standard streams are explicit: `/dev/null`, a file, or a pipe whose ends are all
///   close-on-exec, so no other test's child inherits our end (a pipe's write end leaked into a
///   process another test spawns meanwhile keeps it open, and then EOF never comes). Captured
///   output is best sent to a file for that reason;
/// - its exit is awaited by `waitpid` on a thread of its own, started at spawn: never on Swift's
///   small cooperative pool, nor on `DispatchQueue.global()` (a CI run once hung with every task
///   suspended and no dispatch worker alive). Every child is reaped, even one nobody awaits.
public final class SpawnedProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable, Equatable {
        /// `/dev/null`.
        case null
        /// A file: read for standard input; for output created or truncated (mode 0600).
        case file(String)
        /// A new pipe; our end is `standardInputPipe`, `standardOutputPipe` or `standardErrorPipe`.
        case pipe
    }

    private enum State {
        case running(waiters: [CheckedContinuation<Int32, Never>])
        case exited(status: Int32)
    }

    public let pid: pid_t
    /// Our ends of the pipes asked for (the write end for standard input, the read ends for
    /// output); close-on-exec, owned and closed by the caller.
    public let standardInputPipe: Int32?
    public let standardOutputPipe: Int32?
    public let standardErrorPipe: Int32?
    private let state = Mutex(State.running(waiters: []))

    private init(pid: pid_t, pipes: [Int32?]) {
        self.pid = pid
        standardInputPipe = pipes[0]
        standardOutputPipe = pipes[1]
        standardErrorPipe = pipes[2]
    }

    /// Starts `executable` (a path; no `PATH` search) with `arguments` after its own name.
    /// - Parameter environment: the child's whole environment; nil passes on this process's. Either
    ///   way the child keeps this process's sanitizer settings (`ASAN_OPTIONS`, `LSAN_OPTIONS`,
    ///   `UBSAN_OPTIONS`) unless `environment` sets them: under `scripts/leak-check` a child must
    ///   write its report where the run collects them and must not die at exit on a leak it finds
    ///   (LeakSanitizer's default exit code 23 ends the process before its buffered output is
    ///   written, so a test reading the child's output would see it empty).
    /// - Throws: `SpawnError` when the program cannot be started (missing, not executable) or a
    ///   pipe or the waiting thread cannot be created.
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                             standardInput: Stream = .null, standardOutput: Stream = .null,
                             standardError: Stream = .null) throws(SpawnError) -> SpawnedProcess {
        let streams = [standardInput, standardOutput, standardError]
        // Per stream, the pipe as (ours, the child's), or nil.
        var pipes: [(ours: Int32, theirs: Int32)?] = []
        for (fd, stream) in streams.enumerated() {
            guard stream == .pipe else { pipes.append(nil); continue }
            do throws(SpawnError) {
                let ends = try makePipe(for: executable)
                pipes.append(fd == 0 ? (ours: ends.write, theirs: ends.read) : (ours: ends.read, theirs: ends.write))
            } catch {
                for pipe in pipes.compactMap({ $0 }) { close(pipe.ours); close(pipe.theirs) }
                throw error
            }
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in streams.enumerated() {
            let target = Int32(fd)
            switch stream {
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path,
                                                 fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            case .pipe:
                // dup2 gives the child's copy no close-on-exec flag; the originals close at exec.
                posix_spawn_file_actions_adddup2(&actions, pipes[fd]!.theirs, target)
            }
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var pid: pid_t = 0
        let spawned = withCStrings([executable] + arguments) { argv in
            if let environment {
                var whole = environment
                for name in ["ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"] where whole[name] == nil {
                    if let value = getenv(name) { whole[name] = String(cString: value) }
                }
                return withCStrings(whole.map { "\($0.key)=\($0.value)" }) { envp in
                    posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
                }
            } else {
                return posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
            }
        }
        for pipe in pipes.compactMap({ $0 }) { close(pipe.theirs) }
        guard spawned == 0 else {
            for pipe in pipes.compactMap({ $0 }) { close(pipe.ours) }
            throw SpawnError(executable: executable, reason: .cannotRun(errno: spawned))
        }

        let process = SpawnedProcess(pid: pid, pipes: pipes.map { $0?.ours })
        guard DetachedThread.startIfPossible(name: "reap \(pid)", { process.reapWhenExited() }) else {
            kill(pid, SIGKILL)
            for pipe in pipes.compactMap({ $0 }) { close(pipe.ours) }
            throw SpawnError(executable: executable, reason: .noThreadToWait)
        }
        return process
    }

    /// Sends `signal` to the child, unless it has already been reaped (its pid may be another
    /// process's by then).
    public func signal(_ signal: Int32) {
        state.withLock { state in
            if case .running = state { _ = kill(pid, signal) }
        }
    }

    /// Waits for the child to exit; returns its exit status (128 + signal when killed). Any number
    /// of callers may wait, before or after the exit.
    public func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            let status = state.withLock { state -> Int32? in
                switch state {
                case .exited(let status):
                    return status
                case .running(let waiters):
                    state = .running(waiters: waiters + [continuation])
                    return nil
                }
            }
            if let status { continuation.resume(returning: status) }
        }
    }

    /// The waiting thread's body: waits for the exit without reaping (`WNOWAIT`), then reaps under
    /// the lock `signal` takes, so a signal never reaches a recycled pid.
    private func reapWhenExited() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        let (status, waiters) = state.withLock { state -> (Int32, [CheckedContinuation<Int32, Never>]) in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS, spelled out: Glibc's macros are not imported.
            let status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
            guard case .running(let waiters) = state else { return (status, []) }
            state = .exited(status: status)
            return (status, waiters)
        }
        for waiter in waiters { waiter.resume(returning: status) }
    }

    /// A pipe with both ends close-on-exec. pipe2(O_CLOEXEC) is not visible from Swift, so a child
    /// another test spawns in the short window before fcntl can still inherit an end: one more
    /// reason captured output goes to files where it can.
    private static func makePipe(for executable: String) throws(SpawnError) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SpawnError(executable: executable, reason: .cannotCreatePipe(errno: errno)) }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// Calls `body` with `strings` as a NULL-terminated C array, freed afterwards.
    private static func withCStrings<T>(_ strings: [String],
                                        _ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}

/// Why a test's helper program did not start.
public struct SpawnError: Error, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// posix_spawn failed: the program is missing or not executable, or the system is out of
        /// processes or memory.
        case cannotRun(errno: Int32)
        case cannotCreatePipe(errno: Int32)
        /// No thread could be started to wait for the child, which was killed at once.
        case noThreadToWait
    }

    public let executable: String
    public let reason: Reason

    public var description: String {
        switch reason {
        case .cannotRun(let code):
            "cannot run \(executable): \(String(cString: strerror(code))) (is it installed at that path, and executable?)"
        case .cannotCreatePipe(let code):
            "cannot create a pipe for \(executable): \(String(cString: strerror(code))) (out of file descriptors?)"
        case .noThreadToWait:
            "cannot start a thread to wait for \(executable), so it was killed: the test process is out of threads"
        }
    }
}
