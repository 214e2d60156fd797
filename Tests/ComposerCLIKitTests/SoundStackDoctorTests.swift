@testable import AudioPath
@testable import ComposerCLIKit
import Foundation
import TestSupport
import Testing
import Configuration

/// `composer-cli doctor` on the sound stack: whether a song could reach a speaker on this box,
/// and which part is missing when it could not.
@Suite("doctor checks the sound stack")
struct SoundStackDoctorTests {
    static let a2dpSource = SoundStackDoctor.a2dpSourceUUID
    static let serverAt = SoundServerLocation.Found.reachable(.init(server: "unix:/run/pulse/native", origin: "the system-wide socket"))
    static let noServer = SoundServerLocation.Found.unreachable("no sound server at /run/pulse/native (no such file or directory)")

    /// A box described by its facts: the bus, the sound server, and the files WirePlumber reads.
    static func doctor(bus: SoundStackDoctor.BusFacts?, server: SoundServerLocation.Found = noServer,
                       files: [String: String] = [:]) -> SoundStackDoctor {
        SoundStackDoctor(facts: .init(
            bus: { _ in bus },
            findSoundServer: { _, _ in server },
            readFile: { files[$0] },
            listDirectory: { directory in
                files.keys.filter { $0.hasPrefix(directory + "/") }.map { String($0.dropFirst(directory.count + 1)) }.sorted()
            }))
    }

    static func checks(_ doctor: SoundStackDoctor, output: AudioOutputSetting) async -> [String: DoctorReport.Check] {
        let checks = await doctor.checks(configuration: DaemonConfiguration(audioOutput: output), environment: [:],
                                         busAddress: "unix:path=/bus")
        return Dictionary(uniqueKeysWithValues: checks.map { ($0.name, $0) })
    }

    @Test("a BlueALSA box: auto uses BlueALSA, and the adapter offers A2DP (an endpoint is registered with BlueZ)")
    func blueALSABox() async {
        let found = await Self.checks(Self.doctor(bus: .init(blueALSARunning: true, adapterUUIDs: ["hci0": [Self.a2dpSource]])),
                                      output: .automatic)
        #expect(found["sound server"]?.outcome == .ok)
        #expect(found["sound server"]?.detail == "not needed: BlueALSA is running, and auto uses it")
        #expect(found["bluealsa"]?.outcome == .ok)
        #expect(found["audio endpoint"]?.outcome == .ok)
        #expect(found["audio endpoint"]?.detail.hasPrefix("hci0 can send A2DP audio") == true)
    }

    @Test("no BlueALSA and no sound server: auto has no Bluetooth audio path, a problem with the fix; pulseaudio is a problem that names the drop-in")
    func nothingToPlayThrough() async {
        let bus = SoundStackDoctor.BusFacts(blueALSARunning: false, adapterUUIDs: ["hci0": []])
        let auto = await Self.checks(Self.doctor(bus: bus), output: .automatic)
        #expect(auto["sound server"]?.outcome == .problem)
        #expect(auto["sound server"]?.detail.hasPrefix(
            "no Bluetooth audio path: install BlueALSA or PipeWire; composer-cli doctor (BlueALSA is not running and no sound server at /run/pulse/native") == true,
            "\(auto["sound server"]?.detail ?? "")")
        #expect(auto["bluealsa"]?.outcome == .warning)
        let pulse = await Self.checks(Self.doctor(bus: bus), output: .pulseAudio)
        #expect(pulse["sound server"]?.outcome == .problem)
        #expect(pulse["sound server"]?.detail.contains("docs: SOUND-SERVERS.md, a drop-in") == true)
        #expect(pulse["bluealsa"] == nil, "BlueALSA is not checked where it is not chosen")
    }

    @Test("a sound server that answers is named with where speakerd found it; BlueALSA is then not needed under auto")
    func soundServerFound() async {
        let found = await Self.checks(Self.doctor(bus: .init(blueALSARunning: false, adapterUUIDs: ["hci0": [Self.a2dpSource]]),
                                                  server: Self.serverAt), output: .automatic)
        #expect(found["sound server"]?.detail == "PulseAudio/PipeWire answers at unix:/run/pulse/native (the system-wide socket)")
        #expect(found["bluealsa"] == nil)
    }

    @Test("connected but silent: no audio endpoint registered with BlueZ is a problem; BlueZ missing is said so")
    func noEndpoint() async {
        let none = await Self.checks(Self.doctor(bus: .init(blueALSARunning: false, adapterUUIDs: ["hci0": ["0000110e-0000-1000-8000-00805f9b34fb"]]),
                                                 server: Self.serverAt), output: .pulseAudio)
        #expect(none["audio endpoint"]?.outcome == .problem)
        #expect(none["audio endpoint"]?.detail.contains("no Bluetooth audio endpoint is registered with BlueZ (org.bluez.Media1)") == true)
        let noBlueZ = await Self.checks(Self.doctor(bus: .init(blueALSARunning: false, adapterUUIDs: nil), server: Self.serverAt),
                                        output: .pulseAudio)
        #expect(noBlueZ["audio endpoint"]?.detail == "BlueZ (org.bluez) is not on the bus: start bluetooth.service")
    }

    @Test("BlueALSA's own ALSA device without BlueALSA running is a problem")
    func blueALSADeviceWithoutBlueALSA() async {
        let found = await Self.checks(Self.doctor(bus: .init(blueALSARunning: false, adapterUUIDs: ["hci0": []])),
                                      output: .alsa(device: "bluealsa:DEV=11:22:33:AA:BB:CC,PROFILE=a2dp"))
        #expect(found["bluealsa"]?.outcome == .problem)
        #expect(found["wireplumber"] == nil)
    }

    @Test("the headless WirePlumber trap: seat monitoring on and nobody at seat0 warns with the fix; an override or an active seat is fine")
    func wirePlumberSeatTrap() async {
        let stock = [SoundStackDoctor.wirePlumberBlueZConfig: #"bluez_monitor.properties = {\#n  ["with-logind"] = true,\#n}"#]
        let bus = SoundStackDoctor.BusFacts(blueALSARunning: false, adapterUUIDs: ["hci0": [Self.a2dpSource]])

        let headless = await Self.checks(Self.doctor(bus: bus, server: Self.serverAt, files: stock), output: .automatic)
        #expect(headless["wireplumber"]?.outcome == .warning)
        #expect(headless["wireplumber"]?.detail.contains(#"bluez_monitor.properties["with-logind"] = false"#) == true)

        var seated = stock
        seated["/run/systemd/seats/seat0"] = "IS_SEAT0=1\nACTIVE=c1\nACTIVE_UID=1000\n"
        #expect(await Self.checks(Self.doctor(bus: bus, server: Self.serverAt, files: seated), output: .automatic)["wireplumber"]?.outcome == .ok)

        var overridden = stock
        overridden["/etc/wireplumber/bluetooth.lua.d/51-speakerd.lua"] = #"bluez_monitor.properties["with-logind"] = false"#
        let fixed = await Self.checks(Self.doctor(bus: bus, server: Self.serverAt, files: overridden), output: .pulseAudio)
        #expect(fixed["wireplumber"]?.detail == "its BlueZ monitor does not depend on a seat (with-logind is off)")

        var commentedOut = stock
        commentedOut["/etc/wireplumber/bluetooth.lua.d/51-x.lua"] = #"-- bluez_monitor.properties["with-logind"] = false"#
        #expect(await Self.checks(Self.doctor(bus: bus, server: Self.serverAt, files: commentedOut), output: .automatic)["wireplumber"]?.outcome == .warning)

        #expect(await Self.checks(Self.doctor(bus: bus, server: Self.serverAt), output: .automatic)["wireplumber"] == nil,
                "no WirePlumber installed: nothing to say")
    }

    @Test("file and null outputs need no sound stack")
    func noStackNeeded() async {
        let found = await Self.checks(Self.doctor(bus: nil), output: .null)
        #expect(found.keys.sorted() == ["sound server"])
        #expect(found["sound server"]?.detail == "not used (audio_output = null)")
    }

    @Test("against the fake BlueZ and the BlueALSA mock on a real bus: the endpoint appears when BlueZ lists the A2DP source UUID, BlueALSA when it owns its name",
          .timeLimit(.minutes(1)))
    func realBus() async throws {
        let world = try await FakeBusWorld.start()
        let control = try await world.connect()
        _ = try await world.mock("AddAdapter", path: "/org/bluez", arguments: [.string("hci0"), .string("box")], using: control)
        let address = world.address
        let before = try #require(await SoundStackDoctor.askBus(address))
        #expect(before.blueALSARunning == false)
        #expect(before.adapterUUIDs?["hci0"]?.contains(Self.a2dpSource) == false)

        // What BlueZ does when BlueALSA or PipeWire registers an A2DP source endpoint.
        let uuids = (before.adapterUUIDs?["hci0"] ?? []) + [Self.a2dpSource]
        _ = try await world.mock("UpdateProperties", interface: "org.freedesktop.DBus.Mock", path: "/org/bluez/hci0",
                                 arguments: [.string("org.bluez.Adapter1"), .properties(["UUIDs": .strings(uuids)])], using: control)
        let blueALSA = try await MockBlueALSA.start(on: world)
        defer { Task { await blueALSA.stop() } }
        let after = try #require(await SoundStackDoctor.askBus(address))
        #expect(after.blueALSARunning)
        #expect(after.adapterUUIDs?["hci0"]?.contains(Self.a2dpSource) == true)

        let report = await LocalDoctor(options: DaemonOptions(bus: address), environment: [:])
            .run(soundStack: SoundStackDoctor())
        let endpoint = try #require(report.checks.first { $0.name == "audio endpoint" })
        #expect(endpoint.outcome == .ok, "\(endpoint.detail)")
        #expect(report.checks.first { $0.name == "bluealsa" }?.outcome == .ok)
    }

    @Test("an unreachable bus is not asked: the bus check says why, and the sound checks do not hang on it")
    func noBus() async {
        let directory = TemporaryDirectory()
        let report = await LocalDoctor(options: DaemonOptions(stateDirectory: directory.path, bus: "unix:path=\(directory.path)/no-bus"),
                                       environment: [:]).run(soundStack: SoundStackDoctor())
        #expect(report.checks.first { $0.name == "bus" }?.outcome == .problem)
        #expect(report.checks.contains { $0.name == "sound server" })
        #expect(!report.checks.contains { $0.name == "audio endpoint" })
    }
}
