import Dispatch
import Glibc
import Daemon

/// The process's entry point: runs `SpeakerdCommand` as a task and parks the main thread until
/// it is done.
///
/// Not an `async` main, because an async main ends in `dispatch_main()`, which calls
/// `pthread_exit` on the main thread, and glibc unwinds that thread's stack to do it: it loads
/// libgcc_s and walks the image's unwind tables, about 0.9 MiB of pages that then stay resident
/// in an idle daemon for nothing (docs/BENCHMARKS.md, "Start-up"). Nothing in speakerd runs on the
/// main actor or the main dispatch queue, so a parked main thread loses nothing.
///
/// The main thread blocks the shutdown signals (SIGTERM, SIGINT) before any other thread exists,
/// so every thread inherits that mask and they stay pending for the signal sources that
/// swift-service-lifecycle reads them from (libdispatch's signalfd), instead of being delivered
/// to a thread that would take the default action and kill the daemon without a clean shutdown.
/// Other signals keep their usual effect (SIGQUIT still dumps core, SIGHUP still ends it).
@main
enum SpeakerdMain {
    static func main() {
        blockShutdownSignals()
        let finished = DispatchSemaphore(value: 0)
        Task.detached {
            await SpeakerdCommand.main()
            finished.signal()
        }
        finished.wait()
    }

    private static func blockShutdownSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in DaemonLauncher.shutdownSignals { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }
}
