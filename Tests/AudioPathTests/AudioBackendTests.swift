@testable import AudioPath
import BlueZ
import DBus
import Foundation
import Playback
import PulseAudio
import TestSupport
import Testing

/// The seam every `audio_output` plugs into: a setting names one backend, whose path is ready on
/// a route that says what it is, and that route is what a song's output opens and where the
/// speaker's volume is, on the backend that found it and no other.
@Suite("Audio backends: the path's route is what a song opens")
struct AudioBackendTests {
    static let flip = TargetSpeaker(address: try! BluetoothAddress("11:22:33:AA:BB:CC"), name: "JBL Flip 5")

    /// The first report of `backend`'s path to the Flip.
    static func firstReport(of backend: any AudioBackend) async -> AudioPathReport? {
        var reports = backend.paths(to: flip, over: nil).makeAsyncIterator()
        return await reports.next()
    }

    @Test("each setting names its backend: the null output, an ALSA device and a WAV file are ready at once, on the device a song then opens")
    func settingsNameTheirBackends() async throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let wav = directory.appendingPathComponent("song.wav").path

        let null = AudioOutputSetting.null.backend(soundServers: SoundServerLocation())
        let nullRoute = try #require(await Self.firstReport(of: null)?.state.route)
        #expect(nullRoute.description == "the null output (audio is discarded)")
        #expect(try null.output(on: nullRoute) is NullOutput)

        let alsa = AudioOutputSetting.alsa(device: "bluealsa").backend(soundServers: SoundServerLocation())
        let alsaRoute = try #require(await Self.firstReport(of: alsa)?.state.route)
        #expect(alsaRoute.description == "ALSA device bluealsa")
        #expect((try alsa.output(on: alsaRoute) as? DeviceOutput)?.backend == .alsa(device: "bluealsa"))

        let file = AudioOutputSetting.file(path: wav).backend(soundServers: SoundServerLocation())
        let fileRoute = try #require(await Self.firstReport(of: file)?.state.route)
        #expect(fileRoute.description == "WAV file \(wav)")
        #expect((try file.output(on: fileRoute) as? WAVFileOutput)?.path == wav)

        // None of them has a hardware volume, and each says which output it is.
        for (backend, route, output) in [(null, nullRoute, "the null output"), (alsa, alsaRoute, "ALSA device bluealsa"),
                                         (file, fileRoute, "the WAV file output")] {
            #expect(throws: SpeakerVolumeError.notAvailable(output: output)) { try backend.volume(on: route) }
        }
    }

    @Test("a WAV file in a directory that cannot be written is no path, and says why in one line")
    func unwritableFile() async {
        let report = await Self.firstReport(of: FileBackend(path: "/proc/speakerd-test/song.wav"))
        guard case .notReady(.outputUnusable(let why))? = report?.state else {
            Issue.record("an unwritable file was taken as a path: \(String(describing: report))")
            return
        }
        #expect(why.hasPrefix("cannot write /proc/speakerd-test/song.wav: "), "\(why)")
        #expect(!why.contains("\n"))
    }

    @Test("a route goes back only to the backend that found it: another refuses it in one line, and opens nothing")
    func routesStayWithTheirBackend() async throws {
        let alsaRoute = try #require(await Self.firstReport(of: ALSABackend(device: "hw:0"))?.state.route)
        #expect(throws: AudioRouteError(reason: "ALSA device hw:0 is not an output of the null output")) {
            try NullBackend().output(on: alsaRoute)
        }
        #expect(throws: AudioRouteError(reason: "ALSA device hw:0 is not an output of the sound server")) {
            try SoundServerBackend().output(on: alsaRoute)
        }
        #expect(throws: AudioRouteError(reason: "ALSA device hw:0 is not an output of BlueALSA")) {
            try BlueALSABackend(source: ScriptedBlueALSAService()).output(on: alsaRoute)
        }
    }

    @Test("auto opens a BlueALSA route through BlueALSA for that speaker, and a sink route as a stream to that sink on that server")
    func automaticHandsRoutesBack() async throws {
        let blueALSA = ScriptedBlueALSAService()
        blueALSA.set([AutomaticOutputTests.speakerPCM])
        let auto = AutomaticBackend(blueALSA: BlueALSABackend(source: blueALSA))

        let pcmRoute = try #require(await Self.firstReport(of: auto)?.state.route)
        #expect(pcmRoute.device == AutomaticOutputTests.speakerPCM.path)
        #expect(pcmRoute.speaker == Self.flip.address)
        let onPCM = try #require(try auto.output(on: pcmRoute) as? BlueALSAOutput)
        #expect(onPCM.address == Self.flip.address)
        #expect(onPCM.description == "alsa:bluealsa:DEV=11:22:33:AA:BB:CC,PROFILE=a2dp")

        let (states, feed) = AsyncStream.makeStream(of: SoundServerState.self)
        var sinkPath = SoundServerBackend.follow(states, Self.flip, server: "unix:/run/user/1000/pulse/native").makeAsyncIterator()
        feed.yield(.sinks([SoundServerSink(index: 7, name: "bluez_sink.11_22_33_AA_BB_CC.a2dp_sink", properties: [
            "device.bus": "bluetooth", "api.bluez5.address": "11:22:33:AA:BB:CC", "api.bluez5.profile": "a2dp-sink"])]))
        let sinkRoute = try #require(await sinkPath.next()?.state.route)
        feed.finish()
        let onSink = try #require(try auto.output(on: sinkRoute) as? DeviceOutput)
        #expect(onSink.backend == .pulseAudio(server: "unix:/run/user/1000/pulse/native",
                                              sink: .speaker("bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")))
        let volume = try auto.volume(on: sinkRoute)
        #expect(volume.deviceDescription == "PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")
    }

    @Test("the route carries its device's own rate (a sink's sample spec, a BlueALSA PCM's Sampling or Rate), and the output it opens renders songs at it")
    func routesCarryTheDevicesRate() async throws {
        var pcm = AutomaticOutputTests.speakerPCM
        pcm.sampleRate = 48_000
        let blueALSA = ScriptedBlueALSAService()
        blueALSA.set([pcm])
        let auto = AutomaticBackend(blueALSA: BlueALSABackend(source: blueALSA))
        let pcmRoute = try #require(await Self.firstReport(of: auto)?.state.route)
        #expect(pcmRoute.sampleRate == 48_000)
        #expect(try auto.output(on: pcmRoute).deviceSampleRate == 48_000)

        let (states, feed) = AsyncStream.makeStream(of: SoundServerState.self)
        var sinkPath = SoundServerBackend.follow(states, Self.flip).makeAsyncIterator()
        feed.yield(.sinks([SoundServerSink(index: 7, name: "bluez_sink.11_22_33_AA_BB_CC.a2dp_sink", properties: [
            "device.bus": "bluetooth", "api.bluez5.address": "11:22:33:AA:BB:CC", "api.bluez5.profile": "a2dp-sink"], sampleRate: 44_100)]))
        let sinkRoute = try #require(await sinkPath.next()?.state.route)
        feed.finish()
        #expect(sinkRoute.sampleRate == 44_100)
        #expect(try auto.output(on: sinkRoute).deviceSampleRate == 44_100)

        // A file and the null output have no rate of their own: songs keep the font's.
        let null = AudioOutputSetting.null.backend(soundServers: SoundServerLocation())
        let nullRoute = try #require(await Self.firstReport(of: null)?.state.route)
        #expect(try null.output(on: nullRoute).deviceSampleRate == nil)
    }

    @Test("a BlueALSA PCM's rate is read from Sampling (BlueALSA 4.0, Debian 12) or Rate (4.1 on); a PCM with neither, or a zero, has none")
    func pcmRate() throws {
        let path = DBusObjectPath("/org/bluealsa/hci0/dev_11_22_33_AA_BB_CC/a2dpsrc/sink")
        func pcm(_ extra: [String: DBusValue]) -> BlueALSAPCM? {
            var properties: [String: DBusValue] = [
                "Device": .objectPath(DBusObjectPath("/org/bluez/hci0/dev_11_22_33_AA_BB_CC")),
                "Transport": .string("A2DP-source"), "Mode": .string("sink"),
            ]
            properties.merge(extra) { $1 }
            return BlueALSADBusPCMSource.pcm(at: path, interfaces: [BlueALSAPCM.interface: properties])
        }
        #expect(pcm(["Sampling": .uint32(48_000)])?.sampleRate == 48_000)
        #expect(pcm(["Rate": .uint32(44_100)])?.sampleRate == 44_100)
        #expect(pcm([:])?.sampleRate == nil)
        #expect(pcm(["Sampling": .uint32(0)])?.sampleRate == nil)
        #expect(pcm(["Sampling": .string("48000")])?.sampleRate == nil)
    }

    @Test("BlueALSA leaving the bus (or its bus failing) is 'not running', which auto falls back from; a PCM for another speaker is not this one's")
    func blueALSANotRunning() async {
        let blueALSA = ScriptedBlueALSAService()
        var path = BlueALSABackend(source: blueALSA).paths(to: Self.flip, over: nil).makeAsyncIterator()
        #expect(await path.next()?.state == BlueALSABackend.notRunning)
        let other = BlueALSAPCM(path: "/org/bluealsa/hci0/dev_44_55_66_77_88_99/a2dpsrc/sink",
                                device: "/org/bluez/hci0/dev_44_55_66_77_88_99", transport: "A2DP-source", mode: "sink")
        blueALSA.set([other])
        #expect(await path.next()?.state == .notReady(.noAudioDevice("JBL Flip 5", "BlueALSA has no A2DP playback PCM for it yet")))
        blueALSA.set(nil)
        #expect(await path.next()?.state == BlueALSABackend.notRunning)
    }
}
