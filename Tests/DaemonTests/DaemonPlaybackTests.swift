import Foundation
import Logging
import SystemPackage
import Testing
import TestSupport
@testable import SpeakerCore

/// Playback through the real API, served by the coordinator-backed playback the live daemon uses.
extension DaemonIntegrationTests {
    func makePlayingDaemon(_ world: FakeBusWorld, state: TemporaryDirectory, playTimeout: Duration) -> SpeakerdDaemon {
        let configuration = DaemonConfiguration(playTimeout: playTimeout, audioOutput: .null, scanDuration: .seconds(1),
                                                stateDirectory: state.path, bus: .address(world.address))
        let logger = Logger(label: "test.speakerd")
        let dependencies = DaemonDependencies(
            connectBus: { _ in try await DBusConnection.connect(world.bus) },
            makeBlueZ: { connection in try await DBusBlueZClient.start(connection: connection!, logger: logger) },
            makePlayback: { wiring in DaemonDependencies.coordinatorPlayback(configuration: configuration, wiring: wiring) })
        return SpeakerdDaemon(configuration: configuration, dependencies: dependencies, notifier: nil, logger: logger)
    }

    @Test("a malformed MIDI file sent while the speaker is not ready is refused at once, not after the play timeout")
    func malformedSongWhileNotReady() async throws {
        let world = try await FakeBusWorld.start(bluez: false)
        let state = TemporaryDirectory()
        state.write("MThd this is not a MIDI file", to: "broken.mid")
        // A play timeout far longer than the test's bound: an answer before it proves the song
        // was checked before waiting for the speaker.
        let daemon = makePlayingDaemon(world, state: state, playTimeout: .seconds(3600))
        await daemon.start()
        #expect(try await daemon.status().readiness == "bus")

        let client = SpeakerdDBusClient(connection: try await world.connect(), busDescription: "test")
        let file = try FileDescriptor.open(state.path + "/broken.mid", .readOnly)
        defer { try? file.close() }
        let error = await #expect(throws: SpeakerdError.self) {
            _ = try await client.play(PlayRequest(file: file, displayName: "broken.mid", queue: false))
        }
        guard case let .rejected(name, message)? = error else {
            Issue.record("expected the daemon to reject the song, got \(String(describing: error))")
            return
        }
        #expect(name == SpeakerdBus.ErrorName.invalidFile)
        #expect(message.hasPrefix("cannot play broken.mid: "))
        #expect(try await client.status().playback.state == "idle")
        await daemon.shutdown()
        _ = world
    }
}
