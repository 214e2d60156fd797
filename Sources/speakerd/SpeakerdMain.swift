import Dispatch
import Glibc

/// The process's entry point: runs `SpeakerdCommand` as a task and parks the main thread until
/// it is done.
///
/// Not an `async` main, because an async main ends in `dispatch_main()`, which calls
/// `pthread_exit` on the main thread, and glibc unwinds that thread's stack to do it: it loads
/// libgcc_s and walks the image's unwind tables, about 0.9 MiB of pages that then stay resident
/// in an idle daemon for nothing (docs/BENCHMARKS.md, "Start-up"). Nothing in speakerd runs on the
/// main actor or the main dispatch queue, so a parked main thread loses nothing.
///
/// The main thread blocks the asynchronous signals before any other thread exists, so every
/// thread inherits that mask and SIGTERM/SIGINT stay pending for the signal sources that
/// swift-service-lifecycle reads them from (libdispatch's signalfd), instead of being delivered
/// to a thread that would take the default action and kill the daemon without a clean shutdown.
@main
enum SpeakerdMain {
    static func main() {
        blockAsynchronousSignals()
        let finished = DispatchSemaphore(value: 0)
        Task.detached {
            await SpeakerdCommand.main()
            finished.signal()
        }
        finished.wait()
    }

    /// Signals that report a fault of the thread itself (and so cannot wait) stay unblocked.
    private static func blockAsynchronousSignals() {
        var signals = sigset_t()
        sigfillset(&signals)
        for fault in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, SIGSYS] {
            sigdelset(&signals, fault)
        }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }
}
