import AsyncSignals
import Foundation
@testable import SpeakerCore
@testable import SpeakerdAPI
import TestSupport
import Testing

/// A daemon owns what it started, and nothing it started owns the daemon: once shut down and
/// let go, it is freed (LeakSanitizer checks the same over all of DaemonTests; these say it in
/// scenarios and fail at once, not at process exit).
extension DaemonIntegrationTests {
    @Test("a daemon that connected its speaker and served its API is freed once shut down and let go",
          arguments: [false, true])
    func stoppedDaemonIsFreed(withPlayback: Bool) async throws {
        let fake = try await DaemonWorld.start()
        try await fake.addAdapter()
        try await fake.addSpeaker()
        fake.remember([DaemonWorld.flip])
        weak var released: SpeakerdDaemon?
        do {
            let daemon = fake.makeDaemon(playback: withPlayback) { $0.playTimeout = .seconds(10) }
            released = daemon
            await daemon.start()
            try await daemon.gate.wait(for: .speakerConnected, timeout: .seconds(10))
            // The exported object served a call: its handler reached the daemon through the bus.
            let client = SpeakerdDBusClient(connection: try await fake.world.connect(), busDescription: "test")
            #expect(try await client.status().speaker?.connected == true)
            await daemon.shutdown()
        }
        // Bounded: a cancelled follower task may still be returning from its last call.
        for _ in 0..<200 where released != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(released == nil, "the daemon is still referenced after shutdown (a retain cycle)")
        _ = fake
    }
}

extension SpeakerdAPITests {
    @Test("a call that reaches the exported object after its daemon is gone gets NotReady, not a crash")
    func callAfterDaemonIsGone() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let server = try await world.connect()
        defer { server.close() }
        weak var released: RecordingControl?
        do {
            let control = RecordingControl()
            released = control
            // The object alone must not keep its control alive.
            let object = try SpeakerdDBusObject.make(serving: control, initial: control.statusReport)
            try server.export(object, at: SpeakerdBus.path)
        }
        #expect(released == nil, "the exported object keeps its control alive")
        try await server.requestName(SpeakerdBus.name)
        let client = SpeakerdDBusClient(connection: try await world.connect())
        let error = await #expect(throws: SpeakerdError.self) { _ = try await client.status() }
        #expect(error == .rejected(name: SpeakerdBus.ErrorName.notReady, message: "speakerd is shutting down"))
        _ = world
    }
}
