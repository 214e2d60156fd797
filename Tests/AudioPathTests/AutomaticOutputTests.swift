@testable import AudioPath
@testable import BlueZ
import Foundation
import Synchronization
import TestSupport
import Testing

/// BlueALSA's presence on the bus as the test sets it: nil is "org.bluealsa is not on the bus".
final class ScriptedBlueALSAService: BlueALSAPCMSource {
    private let state = Mutex<(current: [BlueALSAPCM]?, subscribers: [AsyncThrowingStream<[BlueALSAPCM]?, any Error>.Continuation])>((nil, []))

    func pcmSets() -> AsyncThrowingStream<[BlueALSAPCM], any Error> {
        AsyncThrowingStream { $0.finish() }
    }

    func serviceStates() -> AsyncThrowingStream<[BlueALSAPCM]?, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [BlueALSAPCM]?.self)
        state.withLock { state in
            continuation.yield(state.current)
            state.subscribers.append(continuation)
        }
        return stream
    }

    func set(_ pcms: [BlueALSAPCM]?) {
        state.withLock { state in
            state.current = pcms
            for continuation in state.subscribers { continuation.yield(pcms) }
        }
    }
}

/// `audio_output = auto` on the stacks people run: BlueALSA when it is on the system bus, else a
/// PulseAudio or PipeWire server that answers where speakerd looks, else no path at all (ALSA's
/// default is the box's own output, not the speaker); each choice said with its reason.
@Suite("audio_output = auto chooses the sound stack and says why")
struct AutomaticOutputTests {
    static let speaker = try! BluetoothAddress("11:22:33:AA:BB:CC")
    static let flip = TargetSpeaker(address: speaker, name: "JBL Flip 5")
    static let speakerPCM = BlueALSAPCM(path: "/org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink",
                                        device: "/org/bluez/hci0/dev_11_22_33_AA_BB_CC",
                                        transport: "A2DP-source", mode: "sink")

    @Test("with BlueALSA on the bus, auto plays through BlueALSA and is ready once the speaker's PCM exists")
    func blueALSAWins() async {
        let blueALSA = ScriptedBlueALSAService()
        blueALSA.set([])
        let backend = AutomaticBackend(blueALSA: BlueALSABackend(source: blueALSA))
        var path = backend.paths(to: Self.flip, over: nil, environment: [:]).makeAsyncIterator()
        let waiting = await path.next()
        #expect(waiting?.state == .notReady(.noAudioDevice("JBL Flip 5", "BlueALSA has no A2DP playback PCM for it yet")))
        #expect(waiting?.automaticChoice == AutomaticOutput(backend: .blueALSA, why: "org.bluealsa is on the system bus"))
        blueALSA.set([Self.speakerPCM])
        let ready = await path.next()
        #expect(ready?.state.route?.description == "BlueALSA PCM \(Self.speakerPCM.path)")
        #expect(ready?.automaticChoice?.description == "BlueALSA (org.bluealsa is on the system bus)")
    }

    @Test("without BlueALSA, auto uses a sound server that answers and the speaker's sink there; BlueALSA starting later takes over",
          .timeLimit(.minutes(1)), arguments: SoundServerKind.allCases)
    func soundServerWhenNoBlueALSA(kind: SoundServerKind) async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await PulseAudioServer.start(in: directory, kind: kind)
        let blueALSA = ScriptedBlueALSAService()
        let backend = AutomaticBackend(blueALSA: BlueALSABackend(source: blueALSA))
        var path = backend.paths(to: Self.flip, over: nil, environment: ["PULSE_SERVER": server.address]).makeAsyncIterator()

        let waiting = await path.next()
        #expect(waiting?.state == .notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet")))
        let choice = try #require(waiting?.automaticChoice)
        #expect(choice.backend == .soundServer(server.address))
        #expect(choice.why == "BlueALSA is not on the system bus; a sound server answers at \(server.address) (PULSE_SERVER)")

        let sink = try await server.addBluetoothSink(address: Self.speaker.description)
        let onSink = try #require(await path.next()?.state.route)
        #expect(onSink.description == "PulseAudio sink \(sink.name)")
        #expect(onSink.isFound(by: SoundServerBackend.self), "auto does not play through the sound server")
        #expect(onSink.device == sink.name)
        #expect(onSink.server == server.address)

        blueALSA.set([Self.speakerPCM])
        let back = await path.next()
        let onPCM = try #require(back?.state.route)
        #expect(onPCM.description == "BlueALSA PCM \(Self.speakerPCM.path)")
        #expect(back?.automaticChoice?.backend == .blueALSA)
        #expect(!onPCM.isFound(by: SoundServerBackend.self), "auto still plays through the sound server")
    }

    @Test("with neither BlueALSA nor a sound server, auto has no path to the speaker (never ALSA's default) and says where it looked")
    func noPathToTheSpeaker() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = AutomaticBackend(blueALSA: nil, soundServer: SoundServerBackend(
            location: SoundServerLocation(configuredServer: "unix:\(directory.path)/configured")))
        var path = backend.paths(to: Self.flip, over: nil, environment: ["XDG_RUNTIME_DIR": directory.path]).makeAsyncIterator()
        let report = await path.next()
        let state = report?.state
        guard case .notReady(.noBluetoothAudioPath(let looked))? = state else {
            Issue.record("auto must have no path, not \(String(describing: state))")
            return
        }
        #expect(looked.hasPrefix("BlueALSA is not on the system bus and no sound server at \(directory.path)/configured ("), "\(looked)")
        #expect(looked.contains("\(directory.path)/pulse/native ("), "\(looked)")
        #expect(report?.automaticChoice == nil, "nothing was chosen")
    }

    @Test("speakerd looks for a sound server in the order a person expects, each place once")
    func lookupOrder() {
        let location = SoundServerLocation(configuredServer: "/srv/pulse/native", user: "pi")
        let candidates = location.candidates(
            environment: ["PULSE_SERVER": "unix:/tmp/a tcp:box:4713", "XDG_RUNTIME_DIR": "/run/user/1000"],
            runtimeDirectory: { $0 == "pi" ? "/run/user/1000" : nil })
        #expect(candidates.map(\.server) == ["unix:/tmp/a", "tcp:box:4713", "unix:/srv/pulse/native",
                                             "unix:/run/pulse/native", "unix:/run/user/1000/pulse/native"])
        #expect(candidates.map(\.origin) == ["PULSE_SERVER", "PULSE_SERVER", "pulse_server in the configuration",
                                             "the system-wide socket", "user pi's session"])
        #expect(SoundServerLocation.runtimeDirectory(of: "root") == "/run/user/0")
        #expect(SoundServerLocation.runtimeDirectory(of: "1000") == "/run/user/1000")
        #expect(SoundServerLocation.runtimeDirectory(of: "no-such-user-here") == nil)
    }

    @Test("a TCP server cannot be probed from here and is taken as found; the song's stream says otherwise if not")
    func tcpServerIsTaken() {
        let found = SoundServerLocation().find(environment: ["PULSE_SERVER": "tcp:192.0.2.1:4713"])
        #expect(found == .reachable(.init(server: "tcp:192.0.2.1:4713", origin: "PULSE_SERVER")))
    }
}
