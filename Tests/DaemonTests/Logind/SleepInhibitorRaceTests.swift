import Glibc
import Testing
import SpeakerCore

/// A lock provider that answers only when the test says so, handing out one end of a socket pair as
/// the "inhibitor": the test sees the lock released when the other end reports a hang-up.
private final class GatedLockProvider: SleepLockProviding {
    let gate: AsyncStream<Void>
    let openGate: AsyncStream<Void>.Continuation
    let readEnd: Int32
    private let writeEnd: Int32

    init() throws {
        (gate, openGate) = AsyncStream.makeStream(of: Void.self)
        var fds: [Int32] = [-1, -1]
        // Created close-on-exec atomically: processes that parallel tests spawn must not
        // inherit the "lock" end and keep it open.
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else {
            throw LogindError.unexpectedReply(method: "socketpair", detail: String(cString: strerror(errno)))
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    deinit { close(readEnd) }

    func inhibitDelay(why: String) async throws(LogindError) -> SleepInhibitorLock {
        for await _ in gate { break }
        return SleepInhibitorLock(why: why, descriptor: DBusUnixFD(taking: writeEnd))
    }

    /// Whether every write end is closed, i.e. the lock was released (no waiting: timeout 0).
    var lockReleased: Bool {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLHUP) != 0
    }
}

@Suite("sleep inhibitor races")
struct SleepInhibitorRaceTests {
    @Test("a queue that drains while Inhibit is still in flight gives the lock back as soon as it arrives")
    func drainedDuringAcquire() async throws {
        let provider = try GatedLockProvider()
        let inhibitor = SleepInhibitor(provider: provider)
        var states = await inhibitor.states().makeAsyncIterator()
        #expect(await states.next() == .idle)

        let busy = Task { await inhibitor.handle(QueueEvent.busy) }
        #expect(await states.next() == .acquiring)
        await inhibitor.handle(QueueEvent.drained)
        #expect(await inhibitor.state == .acquiring)
        #expect(!provider.lockReleased)

        provider.openGate.yield(())
        await busy.value
        #expect(await states.next() == .held)
        #expect(await states.next() == .idle)
        #expect(provider.lockReleased)
    }

    @Test("shutting down while a lock is held releases it")
    func shutdownReleases() async throws {
        let provider = try GatedLockProvider()
        let inhibitor = SleepInhibitor(provider: provider)
        provider.openGate.yield(())
        await inhibitor.handle(QueueEvent.busy)
        #expect(await inhibitor.state == .held)
        #expect(!provider.lockReleased)

        await inhibitor.shutdown()
        #expect(await inhibitor.state == .idle)
        #expect(provider.lockReleased)
    }
}
