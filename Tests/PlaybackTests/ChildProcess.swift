import Foundation

/// A helper program a test starts (pulseaudio, parec), spawned with posix_spawn.
///
/// Not Foundation's `Process`: concurrent `Process` use has crashed the test runner inside
/// libdispatch, and a child spawned from a pool thread inherits that thread's blocked signals
/// (it would never see SIGINT). Here the child gets an empty signal mask and default handlers,
/// its standard output and error go to files (a pipe's write end could leak into a process
/// another test spawns, and then never close), and its exit is awaited on a dispatch thread.
struct ChildProcess: Sendable {
    let pid: pid_t

    static func spawn(_ executable: String, _ arguments: [String], environment: [String: String],
                      standardError: String = "/dev/null") throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, standardError, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        return ChildProcess(pid: pid)
    }

    func signal(_ signal: Int32) {
        _ = kill(pid, signal)
    }

    /// Waits for the child to exit; returns its exit status (128 + signal when killed).
    func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var raw: Int32 = 0
                while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
                // WIFEXITED / WEXITSTATUS, spelled out: Glibc's macros are not imported.
                continuation.resume(returning: raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f))
            }
        }
    }
}
