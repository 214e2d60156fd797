import Clocks
import Foundation
import Logging
import Synchronization
import Systemd
import Testing
import TestSupport
@testable import Daemon

/// First run (no state file) and known speakers that do not answer: scan-and-pick on the real
/// coordinator against our fake BlueZ. Scans last `scan_seconds` on the test clock.
@Suite("speakerd's first run and fallback to other speakers", .serialized)
struct FirstRunTests {
    static let (flip, charge, boom) = (DaemonWorld.flip, DaemonWorld.charge, DaemonWorld.boom)
    static let phone = DaemonWorld.Speaker(address: "44:55:66:DD:EE:FF", name: "Pixel 7")

    /// Adapter hci0 (added unless the world already has it) with three devices: a loud untrusted
    /// speaker, a quieter trusted one, and a phone louder than both (not an audio sink).
    func nearbyDevices(_ fake: DaemonWorld, addingAdapter: Bool = true) async throws {
        if addingAdapter { try await fake.addAdapter() }
        try await fake.addSpeaker(Self.charge, rssi: -40)
        try await fake.addSpeaker(Self.boom, rssi: -70)
        _ = try await fake.control.call(destination: "org.bluez", path: Self.boom.path, interface: "org.freedesktop.DBus.Properties",
                                        method: "Set", arguments: [.string("org.bluez.Device1"), .string("Trusted"), .variant(.bool(true))])
        try await fake.mock("AddDevice", .string("hci0"), .string(Self.phone.address), .string(Self.phone.name), path: "/org/bluez")
        try await fake.advertise(Self.phone, rssi: -30)
    }

    @Test("first run with auto_pick connects the best audio sink: trusted beats a stronger signal, a phone is never picked")
    func autoPickConnectsTheBestCandidate() async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        try await nearbyDevices(fake)
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock) { $0.autoPick = true }
        let started = daemon.startInBackground()
        _ = try await clock.advance(atMost: .seconds(2), until: "the scan ends and the pick connects") {
            daemon.gate.isReached(.speakerConnected)
        }
        try await eventually("start-up has finished") { started.isSet }

        let status = try await daemon.status()
        #expect(status.speaker == .init(address: Self.boom.address, name: "UE Boom 3", connected: true))
        #expect(status.message == "Ready: UE Boom 3")
        #expect(try await fake.calls("Connect", on: Self.boom) == 1)
        #expect(try await fake.calls("Connect", on: Self.charge) == 0)
        #expect(try await fake.calls("Connect", on: Self.phone) == 0)
        #expect(try fake.rememberedAddresses() == [Self.boom.address])
        let timeline = try #require(await daemon.startupTimeline)
        #expect(timeline.scenario == "first run")
        #expect(timeline.entry(StartupScenarios.Step.scanAndPick)?.outcome == .ok)
        await daemon.shutdown()
    }

    @Test("""
        a first run's auto_pick overtaken by the user's own connect is no error: the user's speaker is connected, \
        start-up's scan-and-pick step ends without failing, and nothing is logged as an error or a warning
        """)
    func userConnectOvertakesAutoPick() async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        try await nearbyDevices(fake)
        // The best candidate is paged and does not answer (switched off since it advertised).
        try await fake.setConnectBehavior(Self.boom, "hang")
        let clock = TestClock<Duration>()
        let lines = Mutex<[String]>([])
        let logger = Logger(label: "speakerd") { JournalLogHandler(label: $0) { line in lines.withLock { $0.append(line) } } }
        let daemon = fake.makeDaemon(clock: clock, logger: logger) { $0.autoPick = true }
        let started = daemon.startInBackground()
        _ = try await clock.advance(atMost: .seconds(2), until: "auto_pick's Connect to the best candidate is out") {
            try await fake.calls("Connect", on: Self.boom) == 1
        }

        // Meanwhile the user picks the other speaker themselves.
        let picked = try await ExecutableRun.run("composer-cli", ["connect", Self.charge.address, "--bus", fake.world.address])
        #expect(picked.status == 0, "composer-cli connect failed: \(picked.standardError)")
        _ = try await clock.advance(atMost: .seconds(30), until: "start-up has ended") { started.isSet }

        let status = try await daemon.status()
        #expect(status.speaker == .init(address: Self.charge.address, name: "JBL Charge 4", connected: true))
        let step = await daemon.startupTimeline?.entry(StartupScenarios.Step.scanAndPick)
        #expect(step?.outcome == .ok, "start-up's scan-and-pick: \(String(describing: step?.outcome))")
        // As the user reads it: `composer-cli startup` shows the step ok, with no failure in the run.
        let chart = try await ExecutableRun.run("composer-cli", ["startup", "--json", "--bus", fake.world.address])
        #expect(chart.status == 0, "\(chart.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(chart.standardOutput.utf8)) as? [String: Any], "\(chart.standardOutput)")
        let steps = try #require(report["operations"] as? [[String: Any]], "no operations in \(chart.standardOutput)")
        let pick = steps.first { ($0["name"] as? String) == "scanAndPick" }
        #expect(pick?["outcome"] as? String == "ok", "scanAndPick in composer-cli startup --json: \(chart.standardOutput)")
        let complaints = lines.withLock { $0 }.filter { $0.hasPrefix("<3>") || $0.hasPrefix("<4>") }
        #expect(complaints.isEmpty, "logged as errors or warnings: \(complaints)")
        #expect(try fake.rememberedAddresses() == [Self.charge.address], "only the user's speaker is remembered")
        await daemon.shutdown()
    }

    @Test("first run without auto_pick waits for the user, keeps answering, and composer-cli connect picks the speaker")
    func userPicksWithComposerCLI() async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        try await nearbyDevices(fake)
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock)
        let started = daemon.startInBackground()
        _ = try await clock.advance(atMost: .seconds(2), until: "the first scan ends") { started.isSet }

        let client = try await fake.client()
        let waiting = try await client.status()
        #expect(waiting.message == "Waiting for a speaker: run 'composer-cli scan', then 'composer-cli connect ADDRESS'")
        #expect(waiting.readiness == "adapter")
        #expect(waiting.speaker == nil)
        #expect(fake.state.read("state.json") == nil, "nothing is remembered before the user picks")
        // The start-up did not pick, and nothing failed: its scan-and-pick says it left the pick
        // to the person, and no playbackReady step waits on (and is charged for) their time.
        let timeline = try #require(await daemon.startupTimeline)
        #expect(timeline.entry(StartupScenarios.Step.scanAndPick)?.outcome
                == .skipped("auto_pick is off: 2 speakers found; waiting for you to pick ('composer-cli scan', or 'composer-cli connect ADDRESS')"))
        #expect(timeline.entry(StartupScenarios.Step.playbackReady) == nil)

        // `composer-cli scan` while waiting: the daemon scans again and answers, best first.
        let answered = DoneFlag()
        let scan = Task {
            defer { answered.set() }
            return try await client.scan()
        }
        _ = try await clock.advance(atMost: .seconds(2), until: "the scan answers") { answered.isSet }
        let candidates = try await scan.value.candidates
        #expect(candidates.filter(\.audioSink).map(\.address) == [Self.boom.address, Self.charge.address],
                "the audio sinks, the trusted one first: \(candidates)")
        #expect(candidates.map(\.address) == [Self.boom.address, Self.charge.address, Self.phone.address],
                "the phone last, reported for scan --all only: \(candidates)")
        #expect(candidates.last?.audioSink == false)

        let picked = try await ExecutableRun.run("composer-cli", ["connect", Self.charge.address, "--bus", fake.world.address])
        #expect(picked.status == 0, "composer-cli connect failed: \(picked.standardError)")
        try await statusSays(daemon, "Ready: JBL Charge 4")
        let status = try await client.status()
        #expect(status.speaker == .init(address: Self.charge.address, name: "JBL Charge 4", connected: true))
        #expect(try fake.rememberedAddresses() == [Self.charge.address])
        await daemon.shutdown()
    }

    @Test("the last speaker unreachable: the other known speakers are tried most recent first, and the one that answers is kept")
    func otherKnownSpeakersMostRecentFirst() async throws {
        // The state lists Flip (last used), then Charge, then Boom; the Flip is switched off.
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip, Self.charge, Self.boom])
        fake.remember([Self.flip, Self.charge, Self.boom])
        try await fake.setConnectBehavior(Self.flip, "br-connection-page-timeout")
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock)
        await daemon.start()

        #expect(daemon.gate.isReached(.speakerConnected))
        #expect(try await fake.calls("Connect", on: Self.flip) == 1)
        #expect(try await fake.calls("Connect", on: Self.charge) == 1, "the next most recent is tried second")
        #expect(try await fake.calls("Connect", on: Self.boom) == 0, "the oldest is not needed")
        let status = try await daemon.status()
        #expect(status.speaker == .init(address: Self.charge.address, name: "JBL Charge 4", connected: true))
        #expect(try fake.rememberedAddresses() == [Self.charge.address, Self.flip.address, Self.boom.address])
        await daemon.shutdown()
    }

    @Test("composer-cli scan ranks a known speaker first, then a trusted one, then by signal; the louder phone comes last, as no audio sink")
    func scanRanksKnownThenTrustedThenSignal() async throws {
        let fake = try await DaemonWorld.start(.speakerd, remembers: [Self.flip])
        fake.remember([Self.flip])
        try await nearbyDevices(fake, addingAdapter: false)
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock)
        await daemon.start()
        #expect(daemon.gate.isReached(.speakerConnected))

        let answered = DoneFlag()
        let client = try await fake.client()
        let scan = Task {
            defer { answered.set() }
            return try await client.scan()
        }
        _ = try await clock.advance(atMost: .seconds(2), until: "the scan answers") { answered.isSet }
        let candidates = try await scan.value.candidates
        #expect(candidates.map(\.address) == [Self.flip.address, Self.boom.address, Self.charge.address, Self.phone.address],
                "\(candidates)")
        #expect(candidates.map(\.known) == [true, false, false, false])
        #expect(candidates.map(\.audioSink) == [true, true, true, false], "only the speakers are offered")
        await daemon.shutdown()
    }

    @Test("while a scan runs, speakerd announces the speakers found so far, as they appear")
    func scanAnnouncesCandidatesAsTheyAppear() async throws {
        let fake = try await DaemonWorld.start(.speakerd)
        try await fake.addAdapter()
        let clock = TestClock<Duration>()
        let daemon = fake.makeDaemon(clock: clock)
        let started = daemon.startInBackground()
        _ = try await clock.advance(atMost: .seconds(2), until: "the first run's own scan ends") { started.isSet }

        let client = try await fake.client()
        let discoveriesBefore = try await Self.discoveries(on: fake)
        let announcements = try await client.scanCandidates()
        let answered = DoneFlag()
        let scan = Task {
            defer { answered.set() }
            return try await client.scan()
        }
        try await eventually("the scan is under way") { try await Self.discoveries(on: fake) > discoveriesBefore }
        try await fake.addSpeaker(Self.charge, rssi: -45)
        var iterator = announcements.makeAsyncIterator()
        let first = await iterator.next()  // the speaker's properties may arrive in steps: the first news is it
        #expect(first?.candidates.map(\.address) == [Self.charge.address], "announced before the scan answered")
        #expect(!answered.isSet)
        _ = try await clock.advance(atMost: .seconds(2), until: "the scan answers") { answered.isSet }
        #expect(try await scan.value.candidates.map(\.address) == [Self.charge.address])
        await daemon.shutdown()
    }

    /// How many discoveries the adapter was asked for, by dbusmock's call log.
    static func discoveries(on fake: DaemonWorld) async throws -> Int {
        let calls = try await fake.mock("GetMethodCalls", .string("StartDiscovery"), path: "/org/bluez/hci0",
                                        interface: "org.freedesktop.DBus.Mock")
        guard case .array(_, let started)? = calls.first?.unwrappingVariants else { return 0 }
        return started.count
    }
}
