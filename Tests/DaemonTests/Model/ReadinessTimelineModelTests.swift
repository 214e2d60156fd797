import AudioPath
import DBus
import AsyncSignals
@testable import BlueZ
import Clocks
import Foundation
import Logging
@testable import Playback
@testable import PlaybackService
@testable import Readiness
@testable import Daemon
@testable import SpeakerdAPI
import Synchronization
import SystemPackage
import TestSupport
import Testing
@testable import Configuration

/// Model-based check of derived readiness: hundreds of random timelines, each a seeded mix of
/// what happens to a speaker box (the speaker switched off and on, a `Connect` that fails with
/// page-timeout or hangs, the speaker connecting inbound, bluetoothd restarting, the adapter
/// coming back under another index, the user's connect/disconnect/forget/scan, the soundfont
/// and the output breaking and mending, play requests and clients leaving), run against the
/// real daemon on the in-process fake BlueZ with the test clock.
///
/// After every step the world settles (no clock time passes) and the invariants are checked:
/// - (a) every input ready ⇒ `playbackReady` at once: no step's timeout or retry timer is needed;
/// - (b) any input not ready ⇒ not `playbackReady`, and `waitingFor` names that input;
/// - (c) every play request ends: served, failed with a reason, or cancelled with its client;
/// - (d) no `Connect` after the user's disconnect until the user asks again;
/// - (e) never two connect operations in flight at once (the daemon's operation queue);
/// - (f) a speaker the user forgot is the target again only by the user's connect or a scan's
///   auto-pick, never as a known speaker (start-up's list, or BlueZ's report of it connecting).
///
/// The same timelines' decisions are checked on the cores, thousands of them with every order of
/// BlueZ's signals and replies, in milliseconds (`ReadinessCoreModelTests`). These run the whole
/// daemon, its tasks and its actors, and prove that the shells carry out what the cores decide:
/// fewer are needed for that, and each costs real time (the world settles by watching it).
///
/// A failure names its seed: `SPEAKERD_MODEL_SEED=N swift test --filter ReadinessTimelineModel`
/// replays that timeline alone.
@Suite("Readiness derived from the world: random timelines", .serialized)
struct ReadinessTimelineModelTests {
    static let timelines = 100
    static let stepsPerTimeline = 24

    /// Every timeline ends with `shutdown()`, after which nothing the daemon started may still
    /// sleep on its clock (a retry armed by an attempt that unwound after shutdown once did).
    @Test("every random timeline keeps readiness equal to what the world shows, with the right reason")
    func randomTimelines() async throws {
        let seeds: [UInt64] = if let text = ProcessInfo.processInfo.environment["SPEAKERD_MODEL_SEED"], let seed = UInt64(text) {
            [seed]
        } else {
            (0..<UInt64(Self.timelines)).map { $0 &* 7919 &+ 17 }
        }
        var checkedSteps = 0
        for (index, seed) in seeds.enumerated() {
            let world = try await ModelWorld(seed: seed)
            checkedSteps += try await world.run(steps: Self.stepsPerTimeline)
            // A line now and then: the test runner's stall watch (scripts/run-watched) reads
            // minutes of silence as a hang, and this test runs for minutes.
            if index % 25 == 24 { print("readiness model: \(index + 1) of \(seeds.count) timelines checked") }
        }
        #expect(checkedSteps >= seeds.count * Self.stepsPerTimeline, "every step of every timeline was checked")
    }
}

/// One timeline's world: the fake BlueZ (wrapped to count connects in flight), the model's
/// playback side, the daemon, and what the model knows to be true.
final class ModelWorld: @unchecked Sendable {
    static let adapterAddress = try! BluetoothAddress("00:01:02:03:04:05")
    static let flip = try! BluetoothAddress("11:22:33:AA:BB:CC")
    static let charge = try! BluetoothAddress("22:33:44:BB:CC:DD")

    let seed: UInt64
    var random: SplitMix64
    let fake: FakeBlueZClient
    let bluez: CountingBlueZ
    let playback: ModelPlayback
    let clock = TestClock<Duration>()
    let daemon: SpeakerdDaemon
    let state = TemporaryDirectory()
    var log: [String] = []
    /// Connect operations the daemon's queue runs at once, and the most seen.
    let connectOperations = OperationCount()
    var queueWatch: Task<Void, Never>?

    // What the model knows of the world.
    var bluetoothdUp = true
    var adapterName = "hci0"
    var speakerOn: [BluetoothAddress: Bool] = [flip: true, charge: true]
    /// The user disconnected and has not asked to connect since.
    var userHolds = false
    var connectCallsAtHold = 0
    /// Speakers the user forgot and has not connected since (see invariant (f)).
    var forgottenByUser: Set<BluetoothAddress> = []
    var plays = 0
    let outcomes = Outcomes()

    /// How each play request ended, by its index (written by the request's own task).
    final class Outcomes: Sendable {
        private let ended = Mutex<[Int: PlayOutcome]>([:])
        func record(_ outcome: PlayOutcome, at index: Int) { ended.withLock { $0[index] = outcome } }
        var all: [Int: PlayOutcome] { ended.withLock { $0 } }
    }
    var userTasks: [Task<Void, Never>] = []

    enum PlayOutcome: Equatable, Sendable { case served, failed(String), cancelled }

    init(seed: UInt64) async throws {
        self.seed = seed
        random = SplitMix64(seed: seed)
        fake = FakeBlueZClient(adapters: [Self.adapter("hci0")], devices: [Self.device(Self.flip, "JBL Flip 5", on: "hci0"),
                                                                           Self.device(Self.charge, "JBL Charge 4", on: "hci0")])
        bluez = CountingBlueZ(fake)
        playback = ModelPlayback()
        let knowsFlip = random.next() % 4 != 0
        if knowsFlip {
            state.write("""
                {"version":1,"speakers":[{"address":"\(Self.flip)","name":"JBL Flip 5",\
                "firstConnected":"2027-01-15T08:00:00Z","lastConnected":"2027-01-15T08:00:00Z"}]}
                """, to: "state.json")
        }
        let configuration = DaemonConfiguration(autoPick: random.next() % 2 == 0, audioOutput: .null, soundfont: "/model/font.sf2",
                                                scanDuration: .seconds(1), stateDirectory: state.path)
        let bluez = bluez
        var logger = Logger(label: "model.speakerd")
        logger.logLevel = .critical
        daemon = SpeakerdDaemon(configuration: configuration,
                                dependencies: DaemonDependencies(clock: clock, connectBus: nil, makeBlueZ: { _ in bluez },
                                                                 playback: playback, audio: playback),
                                notifier: nil, logger: logger)
        playback.gate = daemon.gate
        playback.clock = clock
        log.append("known: \(knowsFlip), autoPick: \(configuration.autoPick)")
    }

    static func adapter(_ name: String) -> Adapter {
        Adapter(name: name, address: adapterAddress, powered: true, powerState: .on)
    }

    static func device(_ address: BluetoothAddress, _ name: String, on adapter: String) -> Device {
        Device(address: address, adapterName: adapter, name: name, deviceClass: 0x240414, paired: true, trusted: true,
               uuids: [BlueZUUID.a2dpSink])
    }

    func pick(_ count: UInt64) -> Int { Int(random.next() % count) }

    /// Runs the timeline; returns how many steps were checked.
    func run(steps: Int) async throws -> Int {
        let events = daemon.operations.events(), count = connectOperations
        queueWatch = Task {
            for await event in events {
                switch event {
                case .started(let name, _) where name.hasPrefix("connect "): count.started()
                case .finished(let name, _, _) where name.hasPrefix("connect "): count.finished()
                default: break
                }
            }
        }
        defer { queueWatch?.cancel() }
        let started = Task { await daemon.start() }
        // Start-up runs on the test clock: let it scan or connect.
        for _ in 0..<30 { await clock.advance(by: .milliseconds(100)); await settle() }
        try await check(step: "start-up")
        var checked = 0
        for step in 0..<steps {
            let action = try await act()
            log.append("\(step): \(action)")
            await settle()
            try await check(step: action)
            checked += 1
        }
        // The end: every request ends, whatever state the world is in (the play timeout is 30 s).
        for task in userTasks { task.cancel() }
        for _ in 0..<70 { await clock.advance(by: .milliseconds(500)); await settle() }
        let ended = outcomes.all
        for index in 0..<plays {
            switch ended[index] {
            case nil: fail("(c) play request \(index) never ended")
            case .failed(let message)?:
                expect(!message.isEmpty, "(c) play request \(index) failed without a reason", "the end")
            case .served?, .cancelled?: break
            }
        }
        await daemon.shutdown()
        started.cancel()
        // Nothing the daemon started may still wait on its clock: a retry armed by an attempt
        // that unwound after shutdown once slept there for ever.
        await settle()
        do { try await clock.checkSuspension() } catch { fail("after shutdown() something the daemon started still sleeps on its clock") }
        return checked
    }

    /// One random step.
    func act() async throws -> String {
        let target = await daemon.link.snapshot.target?.address ?? Self.flip
        switch pick(16) {
        case 0:
            speakerOn[target] = false
            await fake.setBehaviour(.fail(FakeBlueZClient.pageTimeout), for: target)
            await fake.dropConnection(target, reason: .timeout)
            return "speaker \(target) switched off"
        case 1:
            speakerOn[target] = true
            await fake.setBehaviour(.succeed, for: target)
            return "speaker \(target) switched on"
        case 2:
            await fake.setBehaviour(.hang, for: target)
            return "Connect to \(target) hangs from now on"
        case 3:
            guard bluetoothdUp, speakerOn[target] == true else { return "nothing (inbound needs the speaker on)" }
            await fake.updateDevice(target) { $0.connected = true }
            return "speaker \(target) connects inbound"
        case 4:
            bluetoothdUp = false
            await fake.stopBluetoothd()
            return "bluetoothd stops"
        case 5:
            guard !bluetoothdUp else { return "nothing (bluetoothd is already running)" }
            bluetoothdUp = true
            await fake.startBluetoothd(adapters: [Self.adapter(adapterName)],
                                       devices: [Self.device(Self.flip, "JBL Flip 5", on: adapterName),
                                                 Self.device(Self.charge, "JBL Charge 4", on: adapterName)])
            return "bluetoothd starts"
        case 6:
            guard bluetoothdUp else { return "nothing (adapter re-index needs bluetoothd)" }
            let old = adapterName
            adapterName = old == "hci0" ? "hci1" : "hci0"
            await fake.removeAdapter(named: old)
            await fake.addAdapter(Self.adapter(adapterName))
            await fake.addDevice(Self.device(Self.flip, "JBL Flip 5", on: adapterName))
            await fake.addDevice(Self.device(Self.charge, "JBL Charge 4", on: adapterName))
            return "adapter re-indexed \(old) → \(adapterName)"
        case 7:
            let address = pick(3) == 0 ? Self.charge : Self.flip
            userHolds = false
            forgottenByUser.remove(address)
            userTasks.append(Task { _ = try? await daemon.connect(address) })
            return "user connects \(address)"
        case 8:
            let connected = await daemon.link.snapshot.connected
            do {
                _ = try await daemon.disconnect()
                userHolds = true
                connectCallsAtHold = bluez.connectCalls
                return "user disconnects (was connected: \(connected))"
            } catch {
                return "user disconnect refused: \(error)"
            }
        case 9:
            _ = try? await daemon.forget(target)
            forgottenByUser.insert(target)
            if await daemon.link.snapshot.target == nil { userHolds = false }
            return "user forgets \(target)"
        case 10:
            userTasks.append(Task { _ = try? await daemon.scan() })
            return "user scans"
        case 11:
            playback.setSoundfont(installed: !playback.soundfontInstalled)
            return "soundfont \(playback.soundfontInstalled ? "installed" : "removed")"
        case 12:
            playback.setOutput(usable: !playback.outputUsable)
            return "output \(playback.outputUsable ? "usable" : "unusable")"
        case 13, 14:
            let index = plays, daemon = daemon, outcomes = outcomes
            plays += 1
            let play = Task {
                let outcome: PlayOutcome
                do {
                    _ = try await daemon.play(PlayRequest(file: try FileDescriptor.open("/dev/null", .readOnly),
                                                          displayName: "song.mid", queue: false))
                    outcome = .served
                } catch let error as SpeakerdError {
                    outcome = Task.isCancelled ? .cancelled : .failed(error.description)
                } catch {
                    outcome = .cancelled
                }
                outcomes.record(outcome, at: index)
            }
            if pick(3) == 0 {
                play.cancel()
                return "play request, client leaves at once"
            }
            return "play request"
        default:
            let seconds = [0.5, 1, 2, 5, 9, 12][pick(6)]
            for _ in 0..<Int(seconds * 4) {
                await clock.advance(by: .milliseconds(250))
                await settle()
            }
            return "\(seconds) s pass"
        }
    }

    /// Lets every task react to what just happened, with no clock time passing: runs until what
    /// the daemon and the fake show stops changing.
    func settle() async {
        var previous = ""
        var stable = 0
        // Stable over four looks a moment apart: events still queued show up as a change within
        // that. The moment is longer under the sanitizer build, several times slower.
        for _ in 0..<600 {
            for _ in 0..<10 { await Task.yield() }
            try? await Task.sleep(for: Self.look)
            let now = await fingerprint()
            if now == previous { stable += 1 } else { stable = 0 }
            if stable >= 4 { return }
            previous = now
        }
    }

    static let look: Duration = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] == nil ? .microseconds(200) : .milliseconds(1)

    func fingerprint() async -> String {
        let verdict = await daemon.readiness
        let link = await daemon.link.snapshot
        return "\(verdict) \(link) \(await fake.calls.count) \(playback.waiting) \(bluez.inFlight)"
    }

    // MARK: - Invariants

    /// How long a state may lag behind what just happened before it counts as wrong: the
    /// debounce interval of invariants (a) and (b). The clock does not move meanwhile, so no
    /// timeout or retry can be what makes the state right; only the daemon's own tasks, which
    /// a loaded machine may run late, can. So the interval is generous (250 ms was exceeded by
    /// 25–275 ms under three busy loops, the lag clearing by itself): a wrong state that stays
    /// is still caught, and a right one costs nothing, as the check returns at once.
    static let debounce = Duration.seconds(2)

    func check(step: String) async throws {
        let deadline = ContinuousClock.now + Self.debounce
        while true {
            let failures = await violations(step: step)
            if failures.isEmpty { return }
            if ContinuousClock.now >= deadline {
                for failure in failures { fail(failure) }
                return
            }
            await settle()
        }
    }

    /// What is wrong now, if anything (invariants (a), (b), (d), (e)).
    func violations(step: String) async -> [String] {
        var failures: [String] = []
        func expect(_ condition: Bool, _ message: String, _ step: String) {
            if !condition { failures.append("\(message) after \"\(step)\"") }
        }
        let verdict = await daemon.readiness
        let link = await daemon.link.snapshot
        let devices = bluetoothdUp ? ((try? await fake.devices()) ?? []) : []
        let adapters = bluetoothdUp ? ((try? await fake.adapters()) ?? []) : []
        let adapterPresent = adapters.contains { $0.name == adapterName }
        let targetConnected = link.target.map { target in devices.contains { $0.address == target.address && $0.connected } } ?? false
        let soundfont = playback.soundfontLoaded
        let output = playback.outputUsable
        let allReady = bluetoothdUp && adapterPresent && targetConnected && soundfont && output
        let level = daemon.gate.level

        if allReady {
            expect(level == .playbackReady, "(a) every input is ready but readiness is \(level): \(verdict.waitingFor?.message ?? "-")", step)
        } else {
            expect(level < .playbackReady, "(b) readiness is playbackReady although an input is not ready [link \(link), devices \(devices.map { "\($0.address) \($0.adapterName) \($0.connected)" })] "
                   + "(bluetoothd \(bluetoothdUp), adapter \(adapterPresent), link \(targetConnected), soundfont \(soundfont), output \(output))", step)
            let code = verdict.waitingFor?.code
            if !output {
                expect(code == .outputUnusable, "(b) the output is unusable but waitingFor is \(String(describing: code))", step)
            } else if !bluetoothdUp {
                expect(code == .noBluetoothd, "(b) bluetoothd is gone but waitingFor is \(String(describing: code))", step)
            } else if !targetConnected, link.target != nil, userHolds, !link.connected {
                expect(code == .userDisconnected || code == .noAdapter || code == .noBluetoothd,
                       "(b) the user disconnected but waitingFor is \(String(describing: code))", step)
            } else if targetConnected, !soundfont {
                expect(code == .soundfontMissing || code == .soundfontLoading,
                       "(b) only the soundfont is missing but waitingFor is \(String(describing: code))", step)
            }
            expect(verdict.waitingFor != nil, "(b) not ready, and no reason given", step)
        }
        if userHolds, await daemon.link.snapshot.target != nil {
            expect(bluez.connectCalls == connectCallsAtHold, "(d) a Connect was sent after the user's disconnect", step)
        }
        expect(connectOperations.most <= 1, "(e) \(connectOperations.most) connect operations were in flight at once", step)
        if let target = link.target, forgottenByUser.contains(target.address) {
            // Taken back afresh, it is a speaker like any other again (the daemon remembers it anew).
            if target.why == .userPick || target.why == .autoPick {
                forgottenByUser.remove(target.address)
            } else {
                expect(false, "(f) \(target.address), forgotten by the user, is the target again (\(target.why))", step)
            }
        }
        return failures
    }

    func expect(_ condition: Bool, _ message: String, _ step: String) {
        guard !condition else { return }
        fail("\(message) after \"\(step)\"")
    }

    func fail(_ message: String) {
        let timeline = log.joined(separator: "\n  ")
        let text = "seed \(seed): \(message)\ntimeline:\n  \(timeline)"
        Issue.record(Comment(rawValue: text))
    }
}

/// Connect operations running at once in the daemon's operation queue, and the most seen.
final class OperationCount: Sendable {
    private let counts = Mutex((now: 0, most: 0))
    func started() { counts.withLock { $0.now += 1; $0.most = max($0.most, $0.now) } }
    func finished() { counts.withLock { $0.now -= 1 } }
    var most: Int { counts.withLock { $0.most } }
}

/// The fake BlueZ, counting `Connect` calls and how many are in flight at once.
final class CountingBlueZ: BlueZClient, @unchecked Sendable {
    let fake: FakeBlueZClient
    private let counts = Mutex((calls: 0, inFlight: 0, maxInFlight: 0))

    init(_ fake: FakeBlueZClient) { self.fake = fake }

    var connectCalls: Int { counts.withLock { $0.calls } }
    var inFlight: Int { counts.withLock { $0.inFlight } }
    var maxInFlight: Int { counts.withLock { $0.maxInFlight } }

    func connect(_ device: BluetoothAddress) async throws {
        counts.withLock { $0.calls += 1; $0.inFlight += 1; $0.maxInFlight = max($0.maxInFlight, $0.inFlight) }
        defer { counts.withLock { $0.inFlight -= 1 } }
        try await fake.connect(device)
    }

    func adapters() async throws -> [Adapter] { try await fake.adapters() }
    func devices() async throws -> [Device] { try await fake.devices() }
    func powerOn(_ adapter: BluetoothAddress) async throws { try await fake.powerOn(adapter) }
    func startDiscovery(on adapter: BluetoothAddress, filter: DiscoveryFilter) async throws {
        try await fake.startDiscovery(on: adapter, filter: filter)
    }
    func stopDiscovery(on adapter: BluetoothAddress) async throws { try await fake.stopDiscovery(on: adapter) }
    func connectProfile(_ device: BluetoothAddress, uuid: String) async throws { try await fake.connectProfile(device, uuid: uuid) }
    func pair(_ device: BluetoothAddress) async throws { try await fake.pair(device) }
    func setTrusted(_ device: BluetoothAddress, _ trusted: Bool) async throws { try await fake.setTrusted(device, trusted) }
    func disconnect(_ device: BluetoothAddress) async throws { try await fake.disconnect(device) }
    func removeDevice(_ device: BluetoothAddress) async throws { try await fake.removeDevice(device) }
    func events() -> AsyncStream<BlueZEvent> { fake.events() }
    func shutDown() async { await fake.shutDown() }
}

/// The model's playback side: a soundfont that can be installed or removed, an output that can
/// become unusable and usable again (reported as the audio path's events, as BlueALSA's PCMs
/// are), and songs that wait in the readiness gate as the real coordinator's do.
final class ModelPlayback: StandInPlayback, StandInAudio, @unchecked Sendable {
    private struct State {
        var soundfontInstalled = true
        var soundfontLoaded = false
        var outputUsable = true
        var outputs: [AsyncStream<AudioPathReport>.Continuation] = []
        var waiting: [Int: Task<Void, any Error>] = [:]
        var abandoned: [Int: String] = [:]
        var nextTicket = 0
        /// What the daemon last said it waits for (`readinessChanged`).
        var reason: PlaybackWait?
    }
    private let state = Mutex(State())
    nonisolated(unsafe) var gate: ReadinessGate<DaemonReadiness>!
    nonisolated(unsafe) var clock: (any Clock<Duration>)!

    var soundfontInstalled: Bool { state.withLock { $0.soundfontInstalled } }
    var soundfontLoaded: Bool { state.withLock { $0.soundfontLoaded } }
    var outputUsable: Bool { state.withLock { $0.outputUsable } }
    var waiting: Int { state.withLock { $0.waiting.count } }

    /// Removing the file does not unload what is in memory, as with the real cache.
    func setSoundfont(installed: Bool) { state.withLock { $0.soundfontInstalled = installed } }

    func setOutput(usable: Bool) {
        let (outputs, value) = state.withLock { state in
            state.outputUsable = usable
            return (state.outputs, Self.path(usable))
        }
        for output in outputs { output.yield(value) }
    }

    static func path(_ usable: Bool) -> AudioPathReport {
        AudioPathReport(usable ? .ready(.standIn("the model output")) : .notReady(.outputUnusable("cannot write /model/out.wav: permission denied")))
    }

    func preloadSoundfont(_ path: String) async throws {
        let loaded = state.withLock { state in
            if state.soundfontInstalled { state.soundfontLoaded = true }
            return state.soundfontLoaded
        }
        if !loaded { throw SoundFontError.missing(path: path) }
    }

    func paths(to speaker: TargetSpeaker?, over bus: DBusConnection?) -> AsyncStream<AudioPathReport> {
        let (stream, continuation) = AsyncStream.makeStream(of: AudioPathReport.self)
        state.withLock { state in
            state.outputs.append(continuation)
            continuation.yield(Self.path(state.outputUsable))
        }
        return stream
    }

    /// As the real player: the song is read (here: closed), then a song that would wait fails at
    /// once when the daemon said waiting cannot succeed, or waits in the gate.
    func play(file: FileDescriptor, displayName: String, queue: Bool) async throws(PlaybackServiceError) -> PlaybackSnapshot {
        try? file.close()
        guard !gate.isReached(.playbackReady) else { return .idle }
        if let reason = state.withLock({ $0.reason }), !reason.waitingCanSucceed {
            throw .cannotWait(file: displayName, reason: reason.message)
        }
        let gate = gate!
        let waiter = Task { try await gate.wait(for: .playbackReady, timeout: .seconds(30)) }
        let ticket = state.withLock { state in
            defer { state.nextTicket += 1 }
            state.waiting[state.nextTicket] = waiter
            return state.nextTicket
        }
        let outcome = await withTaskCancellationHandler { await waiter.result } onCancel: { waiter.cancel() }
        let abandoned = state.withLock { state in
            state.waiting[ticket] = nil
            return state.abandoned.removeValue(forKey: ticket)
        }
        if let abandoned { throw .cannotWait(file: displayName, reason: abandoned) }
        switch outcome {
        case .success: return .idle
        case .failure(ReadinessError.timedOut):
            throw .notReady(file: displayName, after: .seconds(30), waitingFor: state.withLock { $0.reason?.message } ?? "starting")
        case .failure: throw .cancelled(file: displayName)
        }
    }

    /// As the real player: songs waiting when waiting can no longer succeed fail with the reason.
    func readinessChanged(_ waiting: PlaybackWait?) async {
        let tasks = state.withLock { state -> [Task<Void, any Error>] in
            let before = state.reason
            state.reason = waiting
            guard let waiting, !waiting.waitingCanSucceed, waiting != before else { return [] }
            for ticket in state.waiting.keys { state.abandoned[ticket] = waiting.message }
            return Array(state.waiting.values)
        }
        for task in tasks { task.cancel() }
    }

}
