import DBus
import Glibc
import Logind
@testable import Readiness
import Synchronization
import Testing

/// A lock provider that answers only when the test says so, and remembers the lock it handed
/// out so the test can see whether the inhibitor released it. (Whether a released lock really
/// closes its descriptor is checked against the logind mock in LogindClientTests.)
private final class GatedLockProvider: SleepLockProviding {
    let gate: AsyncStream<Void>
    let openGate: AsyncStream<Void>.Continuation
    private let handedOut = Mutex<SleepInhibitorLock?>(nil)

    init() {
        (gate, openGate) = AsyncStream.makeStream(of: Void.self)
    }

    func inhibitDelay(why: String) async throws(LogindError) -> SleepInhibitorLock {
        for await _ in gate { break }
        let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unexpectedReply(method: "open", detail: String(cString: strerror(errno))) }
        let lock = SleepInhibitorLock(why: why, descriptor: DBusUnixFD(taking: descriptor))
        handedOut.withLock { $0 = lock }
        return lock
    }

    /// Whether a lock was handed out and is still held.
    var lockHeld: Bool { handedOut.withLock { $0?.isHeld ?? false } }
    /// Whether a lock was handed out and has been released.
    var lockReleased: Bool { handedOut.withLock { $0.map { !$0.isHeld } ?? false } }
}

@Suite("sleep inhibitor races")
struct SleepInhibitorRaceTests {
    @Test("a queue that drains while Inhibit is still in flight gives the lock back as soon as it arrives")
    func drainedDuringAcquire() async throws {
        let provider = GatedLockProvider()
        let inhibitor = SleepInhibitor(provider: provider)
        var states = await inhibitor.states().makeAsyncIterator()
        #expect(await states.next() == .idle)

        let busy = Task { await inhibitor.handle(QueueEvent.busy) }
        #expect(await states.next() == .acquiring)
        await inhibitor.handle(QueueEvent.drained)
        #expect(await inhibitor.state == .acquiring)

        provider.openGate.yield(())
        await busy.value
        #expect(await states.next() == .held)
        #expect(await states.next() == .idle)
        #expect(provider.lockReleased)
    }

    @Test("shutting down while a lock is held releases it")
    func shutdownReleases() async throws {
        let provider = GatedLockProvider()
        let inhibitor = SleepInhibitor(provider: provider)
        provider.openGate.yield(())
        await inhibitor.handle(QueueEvent.busy)
        #expect(await inhibitor.state == .held)
        #expect(provider.lockHeld)

        await inhibitor.shutdown()
        #expect(await inhibitor.state == .idle)
        #expect(provider.lockReleased)
    }
}
