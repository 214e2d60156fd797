import Glibc

/// A named, detached OS thread for work that blocks (a soundfont parse, a driver's deletion) and
/// so must not hold one of the few threads of Swift's cooperative pool.
///
/// A plain pthread rather than Foundation's `Thread`: `Thread` is the one thing the library used
/// from the full Foundation, and linking it pulls libFoundation, CoreFoundation and ICU into
/// speakerd's static image, megabytes of resident pages at idle (docs/BENCHMARKS.md, "Start-up").
///
/// `package` so the test support library can run its blocking waits (`waitpid`) the same way.
package enum DetachedThread {
    /// The kernel keeps 15 bytes of a thread's name (plus the terminating NUL).
    static let nameLimit = 15

    /// Runs `body` on a new detached thread named `name` (cut to `nameLimit` bytes, as `ps -L` and
    /// `top -H` show it). Should the thread not be created (the process is out of threads or
    /// memory), `body` runs on the caller's thread instead: late but never lost.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        if !startIfPossible(name: name, body) { body() }
    }

    /// Runs `body` on a new detached thread named `name`, as `start` does; returns false, and
    /// `body` has not run, when the thread could not be created. For work that must never run on
    /// the caller's thread (a wait that blocks until another process exits).
    package static func startIfPossible(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let work = Unmanaged.passRetained(Work(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let started = pthread_create(&thread, &attributes, { raw in
            let work = Unmanaged<DetachedThread.Work>.fromOpaque(raw!).takeRetainedValue()
            DetachedThread.nameCurrentThread(work.name)
            work.body()
            return nil
        }, work)
        if started != 0 {
            Unmanaged<Work>.fromOpaque(work).release()
            return false
        }
        return true
    }

    /// Names the calling thread through `/proc/thread-self/comm` (proc(5)), which is what
    /// `pthread_setname_np` does for another thread; Glibc's module map does not export that call.
    /// A failure leaves the thread with the process's name, which only makes `ps -L` less helpful.
    fileprivate static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(threadName(name).utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// `name` cut to what the kernel keeps, at a UTF-8 character boundary.
    static func threadName(_ name: String) -> String {
        var kept = ""
        for character in name {
            guard kept.utf8.count + character.utf8.count <= nameLimit else { break }
            kept.append(character)
        }
        return kept
    }

    fileprivate final class Work {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
