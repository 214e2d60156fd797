@testable import AudioPath
import BlueZ
import Foundation
import PulseAudio
import TestSupport
import Testing

/// The audio path's states that follow from what libpulse reports of the speaker's sink on a sound
/// server. Which sinks count, and the watcher against a real server, are PulseAudio's own
/// (PulseAudioTests' PulseSinkWatcherTests).
@Suite("The audio path follows the speaker's sink on a PulseAudio server")
struct SoundServerPathTests {
    static let speaker = try! BluetoothAddress("11:22:33:AA:BB:CC")

    @Test("the audio path follows the server: unreachable, then no sink for the speaker, then its sink, then gone again")
    func pathFollowsTheServer() async {
        let (states, feed) = AsyncStream.makeStream(of: SoundServerState.self)
        var path = SoundServerBackend.follow(states, TargetSpeaker(address: Self.speaker, name: "JBL Flip 5")).makeAsyncIterator()
        let speakerSink = SoundServerSink(index: 7, name: "bluez_sink_x", properties: [
            "device.bus": "bluetooth", "api.bluez5.address": "11:22:33:AA:BB:CC", "api.bluez5.profile": "a2dp-sink"])
        let builtIn = SoundServerSink(index: 0, name: "out", properties: ["device.bus": "pci"])

        feed.yield(.unreachable("Connection refused"))
        guard case .notReady(.soundServerUnreachable)? = await path.next()?.state else { Issue.record("not unreachable"); return }

        feed.yield(.sinks([builtIn]))
        let none = await path.next()?.state
        #expect(none == .notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet")))
        #expect(none?.route == nil)

        feed.yield(.sinks([builtIn, speakerSink]))
        let ready = await path.next()?.state.route
        #expect(ready?.description == "PulseAudio sink bluez_sink_x")
        #expect(ready?.device == "bluez_sink_x", "a song's stream would not go to the speaker's sink")

        feed.yield(.sinks([builtIn]))
        let gone = await path.next()?.state
        #expect(gone == .notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet")))
        #expect(gone?.route == nil)
        feed.finish()
        #expect(await path.next() == nil)
    }

    @Test("libpulse without a server says so, and the path names where it looked", .timeLimit(.minutes(1)))
    func watcherWithoutServer() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let socket = "\(directory.path)/no-server/native"
        var states = PulseSinkWatcher.states(server: "unix:" + socket, retryEvery: .milliseconds(100)).makeAsyncIterator()
        guard case .unreachable(let problem)? = await states.next() else {
            Issue.record("a missing server was not reported as unreachable")
            return
        }
        #expect(!problem.isEmpty)
        guard case .notReady(.soundServerUnreachable(let sentence)) = SoundServerBackend.unreachable(problem, environment: ["PULSE_SERVER": "unix:" + socket]) else {
            Issue.record("unreachable server not read as unreachable")
            return
        }
        #expect(sentence.contains(socket), "\(sentence)")
        // It tries again: a server started later is found.
        guard case .unreachable? = await states.next() else {
            Issue.record("the watcher did not try again")
            return
        }
    }
}
