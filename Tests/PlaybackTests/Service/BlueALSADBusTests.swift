import Foundation
import SpeakerCore
import Testing
import TestSupport

/// BlueALSA on a real private bus: python-dbusmock with our `org.bluealsa` template
/// (Tests/FakeBlueZ/bluealsa_mock.py), read through `BlueALSADBusPCMSource`.
@Suite("BlueALSA over D-Bus", .timeLimit(.minutes(1)))
struct BlueALSADBusTests {
    /// A bus with the BlueALSA mock on it; the mock process is ours and ends with `stop()`.
    struct MockBlueALSA {
        let world: FakeBusWorld
        let bus: DBusConnection
        /// Spawned through SpawnedProcess, not Foundation's `Process` (concurrent `Process` use has
        /// crashed the test runner inside libdispatch).
        let process: SpawnedProcess

        static func start() async throws -> MockBlueALSA {
            let world = try await FakeBusWorld.start(bluez: false)
            let bus = try await world.connect()
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SYSTEM_BUS_ADDRESS"] = world.address
            let owners = try await bus.nameOwnerChanges(for: "org.bluealsa")
            let process = try SpawnedProcess.spawn("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", templatePath],
                                                   environment: environment)
            for await owner in owners where owner != nil { break }
            owners.cancel()
            return MockBlueALSA(world: world, bus: bus, process: process)
        }

        /// Asks the mock to publish the A2DP playback PCM a connected speaker gets.
        func addSpeakerPCM(_ address: String) async throws -> DBusObjectPath {
            let reply = try await bus.call(destination: "org.bluealsa", path: "/org/bluealsa", interface: "org.bluealsa.Mock",
                                           method: "AddA2DPSink", arguments: [.string("hci0"), .string(address)])
            guard case let .objectPath(path)? = reply.first else { throw FakeBusWorldError.commandFailed("AddA2DPSink", "\(reply)") }
            return path
        }

        func addPCM(_ address: String, type: String, mode: String, transport: String) async throws {
            _ = try await bus.call(destination: "org.bluealsa", path: "/org/bluealsa", interface: "org.bluealsa.Mock",
                                   method: "AddPCM", arguments: [.string("hci0"), .string(address), .string(type), .string(mode), .string(transport)])
        }

        func removePCM(_ path: DBusObjectPath) async throws {
            _ = try await bus.call(destination: "org.bluealsa", path: "/org/bluealsa", interface: "org.bluealsa.Mock",
                                   method: "RemovePCM", arguments: [.objectPath(path)])
        }

        /// Ends the mock process (BlueALSA exiting) and waits until it has.
        func terminateMock() async {
            // SIGKILL: gone at once, whatever the mock would do on SIGTERM (it was first chosen
            // because a child of Foundation's `Process` could inherit a mask blocking SIGTERM).
            process.signal(SIGKILL)
            _ = await process.exitStatus()
        }

        func stop() async {
            await terminateMock()
            bus.close()
            await world.stop()
        }

        static var templatePath: String {
            URL(fileURLWithPath: #filePath)
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("FakeBlueZ/bluealsa_mock.py").path
        }
    }

    private let speaker = try! BluetoothAddress("11:22:33:AA:BB:CC")

    @Test("a connected speaker becomes ready when BlueALSA adds its A2DP sink PCM, and unready when it is removed")
    func pcmComesAndGoes() async throws {
        let mock = try await MockBlueALSA.start()
        let path = BlueALSAAudioPath(source: BlueALSADBusPCMSource(connection: mock.bus))
        var availability = path.availability(of: speaker).makeAsyncIterator()
        #expect(await availability.next() == false)

        let speaker = speaker
        let wait = Task { try await path.waitUntilReady(for: speaker) }
        // A headset PCM for the same device is not the audio path for music.
        try await mock.addPCM("11:22:33:AA:BB:CC", type: "sco", mode: "sink", transport: "HFP-AG")
        let pcmPath = try await mock.addSpeakerPCM("11:22:33:aa:bb:cc")
        let pcm = try await wait.value
        #expect(pcm.path == pcmPath.rawValue)
        #expect(pcm.device == "/org/bluez/hci0/dev_11_22_33_AA_BB_CC")
        #expect(pcm.transport == "A2DP-source" && pcm.mode == "sink" && pcm.running == false)
        #expect(await availability.next() == true)

        try await mock.removePCM(pcmPath)
        #expect(await availability.next() == false)
        await mock.stop()
    }

    @Test("a PCM that already exists is found through GetManagedObjects")
    func existingPCMIsFound() async throws {
        let mock = try await MockBlueALSA.start()
        _ = try await mock.addSpeakerPCM("11:22:33:AA:BB:CC")
        let pcm = try await BlueALSAAudioPath(source: BlueALSADBusPCMSource(connection: mock.bus))
            .waitUntilReady(for: speaker, timeout: .seconds(10))
        #expect(pcm.address == speaker)
        await mock.stop()
    }

    @Test("BlueALSA going away reads as no PCM")
    func serviceGoneMeansUnready() async throws {
        let mock = try await MockBlueALSA.start()
        _ = try await mock.addSpeakerPCM("11:22:33:AA:BB:CC")
        var availability = BlueALSAAudioPath(source: BlueALSADBusPCMSource(connection: mock.bus))
            .availability(of: speaker).makeAsyncIterator()
        #expect(await availability.next() == true)
        await mock.terminateMock()
        #expect(await availability.next() == false)
        await mock.stop()
    }
}
