import AsyncSignals
@testable import BlueZ
import Clocks
@testable import DBus
import Foundation
import Logging
@testable import PlaybackService
@testable import Daemon
@testable import SpeakerdAPI
import Synchronization
@testable import Systemd
import TestSupport
import Testing
@testable import Configuration

/// The fake world every daemon integration test starts from: a private bus with the fake BlueZ
/// (python-dbusmock's stock `bluez5`, or our template Tests/FakeBlueZ/speakerd_bluez.py), a
/// state directory of its own, and a connection the test plays bluetoothd's hand with.
///
/// The world is torn down when the last reference goes (its deinit closes the harness's stdin):
/// concurrent `FakeBusWorld.stop()` calls have crashed the runner, so tests never call it.
struct DaemonWorld: Sendable {
    enum Template { case stock, speakerd }

    static let flip = Speaker(address: "11:22:33:AA:BB:CC", name: "JBL Flip 5")
    static let charge = Speaker(address: "22:33:44:BB:CC:DD", name: "JBL Charge 4")
    static let boom = Speaker(address: "33:44:55:CC:DD:EE", name: "UE Boom 3")

    struct Speaker: Sendable {
        let address: String
        let name: String
        var bluetoothAddress: BluetoothAddress { try! BluetoothAddress(address) }
        var path: DBusObjectPath { try! DBusObjectPath("/org/bluez/hci0/\(bluetoothAddress.devicePathElement)") }
    }

    let world: FakeBusWorld
    let template: Template
    let state: TemporaryDirectory
    /// The test's own connection: mock controls and method-call logs go through it.
    let control: DBusConnection

    /// Path of our dbusmock template.
    static let templatePath: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../FakeBlueZ/speakerd_bluez.py").standardized.path

    /// Starts the bus (and unless `bluez` is false the mock). With our template, `remembers` is
    /// what bluetoothd knows each time it (re)starts: adapter hci0 and these speakers.
    static func start(_ template: Template = .stock, bluez: Bool = true,
                      remembers speakers: [Speaker]? = nil) async throws -> DaemonWorld {
        var parameters: String?
        if let speakers {
            precondition(template == .speakerd, "only our template takes start-up parameters")
            let list = speakers.map { #"{"adapter":"hci0","address":"\#($0.address)","alias":"\#($0.name)"}"# }
            parameters = #"{"adapters":["hci0"],"speakers":[\#(list.joined(separator: ","))]}"#
        }
        let world = try await FakeBusWorld.start(bluez: bluez, template: template == .speakerd ? templatePath : nil,
                                                 parameters: parameters)
        return DaemonWorld(world: world, template: template, state: TemporaryDirectory(), control: try await world.connect())
    }

    // MARK: - bluetoothd's hand

    /// Calls the mock's control API (`org.bluez.Mock` on `/` unless told otherwise).
    @discardableResult
    func mock(_ method: String, _ arguments: DBusValue..., path: DBusObjectPath = "/",
              interface: String = "org.bluez.Mock") async throws -> [DBusValue] {
        try await world.mock(method, interface: interface, path: path, arguments: arguments, using: control)
    }

    func addAdapter(_ name: String = "hci0") async throws {
        try await mock("AddAdapter", .string(name), .string("box"), path: "/org/bluez")
    }

    /// A speaker on hci0: the stock template's plain device, or our A2DP speaker.
    func addSpeaker(_ speaker: Speaker = flip, rssi: Int16? = nil) async throws {
        switch template {
        case .stock:
            try await mock("AddDevice", .string("hci0"), .string(speaker.address), .string(speaker.name), path: "/org/bluez")
        case .speakerd:
            try await mock("AddSpeaker", .string("hci0"), .string(speaker.address), .string(speaker.name))
        }
        if let rssi { try await mock("UpdateRSSI", .objectPath(speaker.path), .int16(rssi)) }
    }

    /// How the speaker answers `Connect` (our template): "ok", "hang", or a BlueZ failure.
    func setConnectBehavior(_ speaker: Speaker = flip, _ behavior: String) async throws {
        try await mock("SetConnectBehavior", .objectPath(speaker.path), .string(behavior))
    }

    /// The link goes down with BlueZ's reason (`org.bluez.Reason.Timeout`, `...Remote`).
    func dropLink(_ speaker: Speaker = flip, reason: String) async throws {
        try await mock("EmitDisconnected", .objectPath(speaker.path), .string("org.bluez.Reason." + reason),
                       .string("the test dropped the link"))
    }

    /// The speaker advertises: a new RSSI seen (our template).
    func advertise(_ speaker: Speaker = flip, rssi: Int16) async throws {
        try await mock("UpdateRSSI", .objectPath(speaker.path), .int16(rssi))
    }

    /// How many times `method` was called on the speaker (dbusmock's call log).
    func calls(_ method: String, on speaker: Speaker = flip) async throws -> Int {
        let reply = try await mock("GetMethodCalls", .string(method), path: speaker.path, interface: "org.freedesktop.DBus.Mock")
        guard case .array(_, let calls)? = reply.first?.unwrappingVariants else { return 0 }
        return calls.count
    }

    // MARK: - speakerd's side

    /// `state.json` listing `speakers`, most recently connected first.
    func remember(_ speakers: [Speaker]) { Self.remember(speakers, in: state) }

    /// `state.json` in `directory` (for tests that run speakerd on a world of their own).
    static func remember(_ speakers: [Speaker], in state: TemporaryDirectory) {
        let entries = speakers.enumerated().map { index, speaker in
            let stamp = "2027-01-15T08:\(String(format: "%02d", 59 - index)):00Z"
            return #"{"address":"\#(speaker.address)","name":"\#(speaker.name)","firstConnected":"2027-01-01T08:00:00Z","lastConnected":"\#(stamp)"}"#
        }
        state.write(#"{"version":1,"speakers":[\#(entries.joined(separator: ","))]}"#, to: "state.json")
    }

    /// The addresses `state.json` lists, in its order (most recent first).
    func rememberedAddresses() throws -> [String] {
        let text = try #require(state.read("state.json"), "no state file was written")
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        let speakers = object?["speakers"] as? [[String: Any]] ?? []
        return speakers.compactMap { $0["address"] as? String }
    }

    /// The real coordinator serving its API on this world's bus. `clock` drives every timer
    /// (start-up deadlines, reconnect backoff, scans, playback pacing); the BlueZ client keeps
    /// real time for its own call timeouts. With `playback`, songs go to a null output.
    func makeDaemon(clock: any Clock<Duration> = ContinuousClock(), notifier: SystemdNotifier? = nil,
                    playback: Bool = false, logger: Logger = Logger(label: "test.speakerd"),
                    _ configure: (inout DaemonConfiguration) -> Void = { _ in }) -> SpeakerdDaemon {
        var configuration = DaemonConfiguration(audioOutput: .null, soundfont: "/usr/share/sounds/sf2/TimGM6mb.sf2",
                                                scanDuration: .seconds(1), stateDirectory: state.path,
                                                bus: .address(world.address))
        configure(&configuration)
        let bus = world.bus
        let settings = configuration
        var dependencies = DaemonDependencies(
            clock: clock,
            connectBus: { _ in try await DBusConnection.connect(bus) },
            makeBlueZ: { connection in try await DBusBlueZClient.start(connection: connection!, logger: logger) })
        if playback {
            dependencies.audio = configuration.audioOutput.backend(soundServers: configuration.soundServers, clock: clock)
            dependencies.makePlayback = { Player.live(configuration: settings, gate: $0.gate, audio: $0.audio, clock: $0.clock) }
        }
        return SpeakerdDaemon(configuration: configuration, dependencies: dependencies, notifier: notifier, logger: logger)
    }

    /// A client of the daemon's API, as composer-cli uses it.
    func client() async throws -> SpeakerdDBusClient {
        SpeakerdDBusClient(connection: try await world.connect(), busDescription: "the test bus")
    }
}

extension TestClock<Duration> {
    /// Moves time on in small steps until `condition` holds, never further than `limit` of
    /// test-clock time. Small steps matter: a timer armed just after a step sleeps from that
    /// moment, so one big jump could leave it behind; and every other timer (call timeouts)
    /// stays far away. Between steps the real work (D-Bus round trips) gets a moment to run.
    /// Once `limit` is used up the clock stays put, and the real work still gets up to 30 s of
    /// real time: on a loaded machine (or under AddressSanitizer) it can lag far behind the
    /// test clock, which is not what a test-clock limit is there to catch.
    func advance(by step: Duration = .milliseconds(100), atMost limit: Duration, until what: String,
                 _ condition: () async throws -> Bool) async throws -> Duration {
        var moved = Duration.zero
        let realDeadline = ContinuousClock.now + .seconds(30)
        while try await !condition() {
            guard ContinuousClock.now < realDeadline else {
                Issue.record("\(what) did not happen within \(moved) of test-clock time and 30 s of real time")
                throw TimedOut(what: what)
            }
            if moved < limit {
                await advance(by: step)
                moved += step
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        return moved
    }
}

extension SpeakerdDaemon {
    /// Runs start-up in the background (it may wait on the test clock, e.g. for a scan);
    /// the flag is set when it returns.
    nonisolated func startInBackground() -> DoneFlag {
        let flag = DoneFlag()
        Task { await self.start(); flag.set() }
        return flag
    }
}

/// Waits until the daemon's status line reads `message`. The line follows events a hop behind
/// the readiness level (through the reconnect controller's and playback's change streams).
func statusSays(_ daemon: SpeakerdDaemon, _ message: String) async throws {
    try await eventually("the status says '\(message)'") { try await daemon.status().message == message }
}
