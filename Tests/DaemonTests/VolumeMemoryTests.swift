import DBus
import AsyncSignals
@testable import AudioPath
@testable import BlueZ
@testable import DBus
import Foundation
import Logging
@testable import PlaybackService
@testable import Daemon
@testable import SpeakerdAPI
import Synchronization
import TestSupport
import Testing
@testable import Configuration

/// Each speaker's volume: a safe first volume for one never seen before, the level set with
/// `composer-cli volume` remembered in the state file, and given back when the speaker's audio
/// device appears again (a reconnect, a restart of speakerd).
@Suite("The speaker's volume is remembered and restored")
struct VolumeMemoryTests {
    /// A speaker's audio device whose volume the test reads, and resets as a speaker that woke at
    /// full volume would.
    final class FakeDevice: SpeakerVolume {
        private let level = Mutex(100)
        let deviceDescription = "the test's sink"

        var percentNow: Int { level.withLock { $0 } }
        func reset(to percent: Int) { level.withLock { $0 = percent } }

        func percent() async throws(SpeakerVolumeError) -> Int { percentNow }
        func setPercent(_ percent: Int) async throws(SpeakerVolumeError) -> Int {
            level.withLock { $0 = percent }
            return percent
        }
    }

    /// A playback side whose audio path the test steers, with `device` as the speaker's volume.
    final class VolumePlayback: StandInPlayback, StandInAudio, Sendable {
        let path = ProfileNudgeTests.SteerablePlayback()
        let device = FakeDevice()

        func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> { path.paths(to: speaker, over: bus) }
        func volume(on route: AudioRoute) throws(SpeakerVolumeError) -> any SpeakerVolume { device }
        func deviceAppears() { path.set(.ready(.standIn("the test's sink"))) }
        func deviceGoes() { path.set(.notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet"))) }
    }

    static let flip = try! BluetoothAddress(DaemonWorld.flip.address)

    static func bluez() -> FakeBlueZClient {
        FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: try! BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)],
            devices: [Device(address: flip, name: "JBL Flip 5", deviceClass: 0x240414, paired: true, trusted: true)])
    }

    static func daemon(_ bluez: FakeBlueZClient, _ playback: VolumePlayback, state: TemporaryDirectory,
                       firstVolume: Int? = nil) -> SpeakerdDaemon {
        var configuration = DaemonConfiguration(audioOutput: .null, scanDuration: .milliseconds(50), stateDirectory: state.path)
        if let firstVolume { configuration.firstVolume = firstVolume }
        return SpeakerdDaemon(
            configuration: configuration,
            dependencies: DaemonDependencies(clock: ContinuousClock(), connectBus: nil, makeBlueZ: { _ in bluez }, playback: playback,
                                             audio: playback),
            notifier: nil, logger: Logger(label: "test.speakerd"))
    }

    /// A daemon started with the speaker known (a state file without volumes, as speakerd wrote
    /// before it kept them), once it has the speaker connected; its audio device not there yet.
    static func knownSpeakerConnected() async throws
        -> (TemporaryDirectory, FakeBlueZClient, VolumePlayback, SpeakerdDaemon, Task<Void, Never>) {
        let state = TemporaryDirectory()
        DaemonWorld.remember([DaemonWorld.flip], in: state)
        let (bluez, playback) = (Self.bluez(), VolumePlayback())
        let daemon = Self.daemon(bluez, playback, state: state)
        let startup = Task { await daemon.start() }
        // What the daemon answers from (its observed inputs), not the link object, which learns first.
        try await eventually("the known speaker is connected") { try await daemon.status().speaker?.connected == true }
        return (state, bluez, playback, daemon, startup)
    }

    /// The volume `state.json` keeps for the speaker, if any.
    static func rememberedVolume(in state: TemporaryDirectory) throws -> Int? {
        let text = try #require(state.read("state.json"), "no state file was written")
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        let speakers = object?["speakers"] as? [[String: Any]] ?? []
        return speakers.first { $0["address"] as? String == DaemonWorld.flip.address }?["volume"] as? Int
    }

    @Test("a speaker never seen before is set to first_volume when its audio device appears, not left at the full volume it woke at")
    func newSpeakerGetsTheFirstVolume() async throws {
        let state = TemporaryDirectory()
        let (bluez, playback) = (Self.bluez(), VolumePlayback())
        let daemon = Self.daemon(bluez, playback, state: state, firstVolume: 25)
        let startup = Task { await daemon.start() }
        _ = try await daemon.connect(Self.flip)
        try await eventually("connected") { await daemon.link.snapshot.connected }
        #expect(playback.device.percentNow == 100, "the volume changed before the speaker had an audio device")

        playback.deviceAppears()
        try await eventually("status shows the first volume") { try await daemon.status().volume == 25 }
        #expect(playback.device.percentNow == 25)
        #expect(try Self.rememberedVolume(in: state) == 25)
        #expect(try await daemon.status().humanReadable.contains("Volume:    25 %"))
        await daemon.shutdown()
        startup.cancel()
    }

    @Test("a speaker known from before speakerd kept volumes keeps its level; 'volume 65' is given back after it reconnects at full volume, and after speakerd restarts")
    func setVolumeIsRestoredOnReconnectAndRestart() async throws {
        // A state file from before speakerd kept volumes: no "volume" key, and it still loads.
        let (state, bluez, playback, daemon, startup) = try await Self.knownSpeakerConnected()
        playback.device.reset(to: 70)  // where its owner left it
        playback.deviceAppears()
        try await eventually("status shows the speaker's own level") { try await daemon.status().volume == 70 }
        #expect(playback.device.percentNow == 70, "a known speaker's level was changed to first_volume")
        #expect(try Self.rememberedVolume(in: state) == 70)

        let set = try await daemon.setVolume(.to(65))
        #expect(set == VolumeReport(percent: 65, address: DaemonWorld.flip.address, name: "JBL Flip 5", device: "the test's sink"))
        #expect(playback.device.percentNow == 65)
        #expect(try Self.rememberedVolume(in: state) == 65)

        // The speaker goes off and comes back at its own full volume.
        playback.deviceGoes()
        await bluez.dropConnection(Self.flip, reason: .timeout)
        try await eventually("the loss is seen") { try await daemon.status().speaker?.connected == false }
        #expect(try await daemon.status().volume == nil, "status keeps a volume for a speaker that is gone")
        playback.device.reset(to: 100)
        await bluez.updateDevice(Self.flip) { $0.connected = true }
        try await eventually("connected again") { await daemon.link.snapshot.connected }
        playback.deviceAppears()
        try await eventually("the volume is given back") { playback.device.percentNow == 65 }
        try await eventually("status shows it") { try await daemon.status().volume == 65 }
        await daemon.shutdown()
        startup.cancel()

        // speakerd restarts; the speaker again woke at full volume.
        playback.device.reset(to: 100)
        let restarted = Self.daemon(Self.bluez(), playback, state: state)
        let again = Task { await restarted.start() }
        try await eventually("the restarted daemon gives the volume back") { playback.device.percentNow == 65 }
        #expect(try await restarted.volume().percent == 65)
        await restarted.shutdown()
        again.cancel()
    }

    @Test("volume before the speaker has an audio device says so in one line; steps stop at 0 and 100; a read is remembered")
    func volumeErrorsAndSteps() async throws {
        let (state, bluez, playback, daemon, startup) = try await Self.knownSpeakerConnected()

        let early = await #expect(throws: SpeakerdError.self) { try await daemon.setVolume(.to(50)) }
        #expect(early == .rejected(name: SpeakerdBus.ErrorName.notReady,
                                   message: SpeakerVolumeError.noAudioDevice(speaker: "JBL Flip 5").description))
        #expect(early?.description.hasPrefix("JBL Flip 5 has no audio device yet") == true, "\(String(describing: early))")
        #expect(playback.device.percentNow == 100, "a refused change reached the device")

        playback.deviceAppears()
        try await eventually("status shows the volume") { try await daemon.status().volume == 100 }
        #expect(try await daemon.setVolume(.by(-60)).percent == 40)
        #expect(try await daemon.setVolume(.by(80)).percent == 100)
        #expect(try await daemon.setVolume(.by(-150)).percent == 0)
        #expect(playback.device.percentNow == 0)
        // The speaker's own buttons moved it; reading it remembers what the speaker says.
        playback.device.reset(to: 30)
        #expect(try await daemon.volume().percent == 30)
        #expect(try Self.rememberedVolume(in: state) == 30)
        #expect(try await daemon.setVolume(.by(5)).percent == 35, "a step does not start from the speaker's own level")

        await bluez.dropConnection(Self.flip, reason: .timeout)
        try await eventually("the loss is seen") { try await daemon.status().speaker?.connected == false }
        let gone = await #expect(throws: SpeakerdError.self) { try await daemon.volume() }
        #expect(gone == .rejected(name: SpeakerdBus.ErrorName.noSpeaker, message: SpeakerVolumeError.noSpeaker.description))
        await daemon.shutdown()
        startup.cancel()
    }

    @Test("first_volume is read from the config file, 0 to 100; another value is refused with file:line")
    func firstVolumeSetting() throws {
        let parser = ConfigFileParser(path: "speakerd.conf")
        #expect(try parser.parse("first_volume = 15\n").firstVolume == 15)
        #expect(try parser.parse("").firstVolume == 40)
        for bad in ["101", "-1", "loud", "40.5"] {
            let error = #expect(throws: ConfigurationError.self) { try parser.parse("first_volume = \(bad)\n") }
            #expect(error?.description.hasPrefix("speakerd.conf:1:") == true, "\(String(describing: error))")
            #expect(error?.description.contains("0 to 100") == true, "\(String(describing: error))")
        }
    }
}

/// The daemon's own wiring to BlueALSA: the PCM its audio path found is where the volume goes.
@Suite("The speaker's volume through BlueALSA, end to end", .serialized)
struct BlueALSAVolumeDaemonTests {
    @Test("a new speaker's BlueALSA PCM is set to first_volume when it appears; 'volume 65' reaches the PCM and the Volume property",
          .timeLimit(.minutes(1)))
    func firstVolumeAndSetThroughBlueALSA() async throws {
        let world = try await DaemonWorld.start()
        try await world.addAdapter()
        try await world.addSpeaker()
        let blueALSA = try await MockBlueALSA.start(on: world.world)
        let daemon = world.makeDaemon(playback: true) { $0.audioOutput = .automatic }
        let startup = Task { await daemon.start() }
        let client = try await world.client()
        try await eventually("speakerd answers") { (try? await client.status()) != nil }
        _ = try await client.connect(DaemonWorld.flip.bluetoothAddress)
        #expect(try await client.status().volume == nil, "a volume is shown before the speaker has a PCM")

        let pcm = try await blueALSA.addSpeakerPCM(DaemonWorld.flip.address)
        try await eventually("status shows the first volume") { try await client.status().volume == 40 }
        #expect(try await blueALSA.volume(of: pcm) == .array(element: "y", [.byte(51), .byte(51)]), "40 % is 51 of BlueALSA's 127")

        let set = try await client.setVolume(.to(65))
        #expect(set == VolumeReport(percent: 65, address: DaemonWorld.flip.address, name: DaemonWorld.flip.name,
                                    device: "BlueALSA PCM \(pcm.rawValue)"))
        #expect(try await blueALSA.volume(of: pcm) == .array(element: "y", [.byte(83), .byte(83)]))
        let property = try await world.control.call(destination: SpeakerdBus.name, path: SpeakerdBus.path,
                                                    interface: "org.freedesktop.DBus.Properties", method: "Get",
                                                    arguments: [.string(SpeakerdBus.interface), .string("Volume")])
        #expect(try property.first?.unwrappingVariants.as([String: DBusValue].self, at: "Volume") == ["Percent": .uint32(65)])
        await daemon.shutdown()
        startup.cancel()
        await blueALSA.terminateMock()
    }
}

@Suite("Volumes in the state file")
struct VolumeStateFileTests {
    @Test("a volume is kept per known speaker, survives reconnects and a reload, and is never invented for an unknown one")
    func volumeInTheStateFile() async throws {
        let state = TemporaryDirectory()
        DaemonWorld.remember([DaemonWorld.flip, DaemonWorld.charge], in: state)  // as written before volumes
        let store = StateStore(directory: state.path)
        #expect(await store.load() == .loaded(speakerCount: 2))
        #expect(await store.knownSpeakers.map(\.volume) == [nil, nil])

        let flip = DaemonWorld.flip.bluetoothAddress
        #expect(try await store.rememberVolume(55, of: flip))
        #expect(try await !store.rememberVolume(20, of: DaemonWorld.boom.bluetoothAddress), "an unknown speaker got a volume")
        try await store.recordConnection(to: flip, name: "JBL Flip 5", at: Date())
        #expect(await store.knownSpeakers.first?.volume == 55, "a new connection dropped the remembered volume")

        let reloaded = StateStore(directory: state.path)
        await reloaded.load()
        #expect(await reloaded.knownSpeakers.map(\.volume) == [55, nil])
        #expect(await reloaded.knownSpeakers.map(\.address.description) == [DaemonWorld.flip.address, DaemonWorld.charge.address])
    }
}
