import AsyncSignals
import Clocks
import Foundation
import Testing
import TestSupport
@testable import Daemon

/// The speaker dropping and coming back, on the real coordinator against our fake BlueZ: the
/// reconnect policy's schedules as a user would see them (status lines, `Connect` calls on the
/// mock). Every timer runs on a TestClock; only D-Bus round trips take real time.
@Suite("speakerd when the speaker drops and comes back", .serialized)
struct LinkLossTests {
    typealias Speaker = DaemonWorld.Speaker
    static let flip = DaemonWorld.flip

    func reconnect(_ daemon: SpeakerdDaemon, is expected: (ReconnectPolicy<ErasedClock>.State?) -> Bool) async -> Bool {
        expected(await daemon.link.reconnectState)
    }

    static func waiting(_ mode: ReconnectPolicy<ErasedClock>.Mode, attempt: Int) -> (ReconnectPolicy<ErasedClock>.State?) -> Bool {
        { if case .waiting(mode, attempt, _)? = $0 { true } else { false } }
    }

    /// The seconds in "JBL Flip 5 is out of reach; retrying in N s".
    static func retrySeconds(_ message: String) -> Int? {
        let prefix = "JBL Flip 5 is out of reach; retrying in "
        guard message.hasPrefix(prefix), message.hasSuffix(" s") else { return nil }
        return Int(message.dropFirst(prefix.count).dropLast(2))
    }

    @Test("a link lost to a timeout is retried after about 1 s, then 2 s, and at once when the speaker is seen again")
    func timeoutBacksOffAndRearmsOnSight() async throws {
        let (fake, daemon, clock) = try await DaemonWorld.connectedDaemon()
        // The speaker walks out of range: the link times out and pages go unanswered.
        try await fake.setConnectBehavior(Self.flip, "br-connection-page-timeout")
        try await fake.dropLink(reason: "Timeout")
        try await eventually("the loss is noticed") { await reconnect(daemon, is: Self.waiting(.eager, attempt: 0)) }
        // The status line follows the policy through the controller's change stream, a hop later.
        try await eventually("the status says when it retries") {
            try await daemon.status().message == "JBL Flip 5 is out of reach; retrying in 1 s"
        }
        let lost = try await daemon.status()
        #expect(lost.speaker?.connected == false)
        #expect(lost.readiness == "adapter")
        #expect(try await fake.calls("Connect") == 1, "no attempt before the backoff delay")

        let first = try await clock.advance(atMost: .seconds(3), until: "the first retry") { try await fake.calls("Connect") == 2 }
        try await eventually("the first retry failed") { await reconnect(daemon, is: Self.waiting(.eager, attempt: 1)) }
        let second = try await clock.advance(atMost: .seconds(5), until: "the second retry") { try await fake.calls("Connect") == 3 }
        #expect(first >= .milliseconds(700) && first <= .milliseconds(1500), "first retry after \(first)")
        #expect(second >= .milliseconds(1500) && second <= .milliseconds(2900), "second retry after \(second)")
        try await eventually("the second retry failed") { await reconnect(daemon, is: Self.waiting(.eager, attempt: 2)) }
        try await eventually("the status shows the longer delay") {
            Self.retrySeconds(try await daemon.status().message).map { $0 >= 3 } == true
        }

        // Back in range: its advertisement re-arms the reconnect at once, not after the ~4 s delay.
        await clock.advance(by: .seconds(1))
        try await fake.setConnectBehavior(Self.flip, "ok")
        try await fake.advertise(rssi: -48)
        try await eventually("the speaker is reconnected without waiting for the timer") { daemon.gate.isReached(.speakerConnected) }
        #expect(try await fake.calls("Connect") == 4)
        try await statusSays(daemon, "Ready: JBL Flip 5")
        #expect(try await daemon.status().speaker?.connected == true)
        await daemon.shutdown()
    }

    @Test("a speaker that left BlueZ's list while out of reach is reconnected the moment it appears again")
    func reappearingSpeakerIsReconnectedAtOnce() async throws {
        let (fake, daemon, clock) = try await DaemonWorld.connectedDaemon()
        try await fake.setConnectBehavior(Self.flip, "br-connection-page-timeout")
        try await fake.dropLink(reason: "Timeout")
        _ = try await clock.advance(atMost: .seconds(3), until: "the first retry") { try await fake.calls("Connect") == 2 }
        try await eventually("the first retry failed") { await reconnect(daemon, is: Self.waiting(.eager, attempt: 1)) }
        // BlueZ forgets the unreachable device (InterfacesRemoved); no attempt comes of that.
        try await fake.mock("RemoveDevice", .objectPath(Self.flip.path), path: "/org/bluez/hci0", interface: "org.bluez.Adapter1")
        await clock.advance(by: .seconds(1))

        // It comes back in range and BlueZ lists it again (InterfacesAdded): connected at once,
        // with no more time passing for the ~2 s retry timer.
        try await fake.addSpeaker()
        try await eventually("the speaker is reconnected as it appears") { daemon.gate.isReached(.speakerConnected) }
        #expect(try await fake.calls("Connect") == 1, "one Connect on the re-added device")
        try await statusSays(daemon, "Ready: JBL Flip 5")
        await daemon.shutdown()
    }

    @Test("a speaker that ends the link itself is retried gently: no tight loop while it advertises, then it comes back")
    func remoteEndIsRetriedGently() async throws {
        let (fake, daemon, clock) = try await DaemonWorld.connectedDaemon()
        // A phone took the speaker: it refuses us, and keeps advertising.
        try await fake.setConnectBehavior(Self.flip, "br-connection-refused")
        try await fake.dropLink(reason: "Remote")
        try await eventually("the loss is noticed") { await reconnect(daemon, is: Self.waiting(.gentle, attempt: 0)) }
        try await eventually("the status says it retries in about 5 s") {
            Self.retrySeconds(try await daemon.status().message).map { (4...6).contains($0) } == true
        }

        // 40 s of advertising, an RSSI every half second: attempts stay seconds apart.
        var attemptsAt: [Duration] = []
        var elapsed = Duration.zero
        var seen = 1, step = 0
        while elapsed < .seconds(40) {
            step += 1
            try await fake.advertise(rssi: Int16(-50 - step % 7))
            await clock.advance(by: .milliseconds(500))
            elapsed += .milliseconds(500)
            try await Task.sleep(for: .milliseconds(10))
            let count = try await fake.calls("Connect")
            attemptsAt += Array(repeating: elapsed, count: max(0, count - seen))
            seen = max(seen, count)
        }
        #expect((2...5).contains(attemptsAt.count), "attempts at \(attemptsAt)")
        let gaps = zip(attemptsAt.dropFirst(), attemptsAt).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= .seconds(4) }, "attempts at \(attemptsAt)")
        #expect(attemptsAt.first.map { $0 >= .seconds(3) } == true, "the first retry waits the gentle delay: \(attemptsAt)")

        // The phone lets go: the next gentle attempt connects.
        try await fake.setConnectBehavior(Self.flip, "ok")
        _ = try await clock.advance(by: .milliseconds(250), atMost: .seconds(60), until: "the speaker is back") {
            daemon.gate.isReached(.speakerConnected)
        }
        try await statusSays(daemon, "Ready: JBL Flip 5")
        await daemon.shutdown()
    }
}
