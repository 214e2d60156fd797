import AsyncSignals
import Foundation
@testable import Daemon
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
