import AudioPath
import BlueZ
import Configuration
@testable import Daemon
import Foundation
import PropertyBased
import Readiness
import Testing
import TestSupport

/// Readiness derived from the world, on the cores: random timelines of what happens to a speaker
/// box (the speaker switched off and on, a `Connect` that fails with page-timeout or hangs, the
/// speaker connecting inbound, bluetoothd stopping and starting, the adapter coming back under
/// another index, the user's connect, disconnect and forget, the soundfont and the output breaking
/// and mending, time passing), fed to the link's core and the daemon's core as their shells feed
/// them, with the clock in the test's hand.
///
/// The world answers as BlueZ does, by two paths: its signals, in their order, and its replies to
/// our calls, in theirs; which path is heard first is the timeline's to choose, so every
/// interleaving the real bus allows is tried. Start-up feeds its steps' events as the sequencer
/// would. After every step everything sent has been heard (no clock time passes) and:
/// - (a) every input ready ⇒ `playbackReady` at once: no timeout or retry timer is needed;
/// - (b) any input not ready ⇒ not `playbackReady`, and `waitingFor` names that input;
/// - (d) no `Connect` reaches BlueZ after the user's disconnect until the user asks again;
/// - (f) a speaker the user forgot is the target again only by the user's connect or a scan's
///   auto-pick, never as a known speaker;
/// - and at the end every `connect` the user made has had its answer, once.
///
/// The same invariants on the whole daemon with its tasks: `ReadinessTimelineModelTests`.
@Suite("Readiness derived from the world, on the cores: random timelines")
struct ReadinessCoreModelTests {
    @Test("every random timeline keeps readiness equal to what the world shows, with the right reason", .shrinking(true))
    func randomTimelines() async {
        await propertyCheck(count: 3_000, input: Gen.int(in: 0...1_000_000).array(of: 4...28)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var box = CoreBox(setup: codes.first ?? 0)
            box.start()
            box.check(after: "start-up")
            for code in codes.dropFirst() {
                let action = box.act(code)
                // What the world shows and what readiness says agree once they have heard each other.
                if box.isSettled { box.check(after: action) }
            }
            box.finish()
        }
    }

    @Test("a speaker that connected by itself before the user picked it is disconnected when the user says so, its report still on its way")
    func disconnectOfALinkNotYetHeard() {
        var box = CoreBox(setup: 0)
        box.start()
        box.world.devices[CoreBox.charge]?.connected = true  // switched on; BlueZ's report not heard yet
        box.signal(.deviceChanged(box.deviceState(CoreBox.charge)))
        box.signal(.connected(CoreBox.charge))
        #expect(box.userConnects(CoreBox.charge) == "user connects \(CoreBox.charge)")
        #expect(box.userDisconnects() == "user disconnects (was connected: false)")
        box.settle()
        #expect(box.world.devices[CoreBox.charge]?.connected == false, "BlueZ kept the link the user ended")
        #expect(box.link.heldByUser && !box.link.snapshot.connected)
        #expect(box.daemon.verdict.waitingFor?.code == .userDisconnected)
        #expect(box.violations(after: "the user's disconnect").isEmpty, "\(box.violations(after: "the user's disconnect"))")
    }

    @Test("the check is not blind: readiness the world no longer shows is a violation")
    func theCheckSeesAWrongVerdict() {
        // The world is all ready, but the daemon never heard the link come up: (a) must fail.
        var box = CoreBox(setup: 0)
        box.start()
        #expect(box.violations(after: "start-up").isEmpty, "\(box.violations(after: "start-up")) \(box.log)")
        #expect(box.daemon.tracking.gateLevel == .playbackReady, "the known speaker connects at start-up: \(box.log)")
        box.world.devices[CoreBox.flip]?.connected = false  // the speaker gone, and nobody told
        #expect(box.violations(after: "a silent drop").contains { $0.hasPrefix("(b)") })
    }
}

/// One timeline's box: the link's core and the daemon's core, what their shells hold (the
/// attempts under way, the retry timer, the audio path followed, start-up's run), and the world
/// they talk to.
struct CoreBox {
    static let flip = try! BluetoothAddress("11:22:33:AA:BB:CC")
    static let charge = try! BluetoothAddress("22:33:44:BB:CC:DD")
    static let names = [flip: "JBL Flip 5", charge: "JBL Charge 4"]
    static let soundfont = "/model/font.sf2"

    // MARK: The cores
    var link = LinkCore(policy: ReconnectPolicy(random: SplitMix64(seed: 11)))
    var daemon = DaemonCore(tracking: ReadinessTracking(inputs: ReadinessInputs(soundfont: .notLoaded(path: CoreBox.soundfont))),
                            configuredAdapter: nil)
    var now = ErasedClock.Instant(offset: .zero)

    // MARK: The world
    struct WorldDevice {
        var behaviour = Behaviour.succeed
        var connected = false
        var on = true
    }
    enum Behaviour: Equatable { case succeed, fail, hang }
    struct World {
        var bluetoothd = true
        var adapter = "hci0"
        var devices: [BluetoothAddress: WorldDevice] = [CoreBox.flip: .init(), CoreBox.charge: .init()]
        var soundfontInstalled = true
        var soundfontLoaded = false
        /// Start-up tried to load it and it was not there.
        var soundfontFailed = false
        var outputUsable = true
        /// The state file's known speakers, most recent first.
        var known: [KnownSpeaker] = []
    }
    var world = World()
    let autoPick: Bool

    // MARK: The shells
    /// A connect operation of the link's: the attempts waiting on it, and how far its work got.
    struct ConnectOperation {
        let number: Int
        let address: BluetoothAddress
        var attempts: [LinkCore.AttemptID]
        let dropsBefore: Int
        var wentOut = false
        /// Its Connect hangs until the operation's 10 s timeout.
        var hangsUntil: ErasedClock.Instant?
        /// Its outcome is on its way; anything later about it is ignored.
        var ending = false
    }
    enum Outcome: Equatable { case ok, failed(String), timedOut, cancelled, linkUp, noBlueZ }
    var operations: [ConnectOperation] = []
    /// Attempts stopped before their task ran.
    var stoppedAttempts: Set<LinkCore.AttemptID> = []
    var lastOperation = 0
    var bluezAttached = false
    var adapterInUse: String?
    var retry: (deadline: ErasedClock.Instant, target: Int)?
    /// The audio path's follows, numbered: a report of one since replaced is not the latest.
    var followed: LinkSnapshot.Target?
    var follows = 0
    var lastReply: UInt64 = 0

    /// Start-up's run: where it waits (an attempt's answer, a scan's end), and the known speakers
    /// as it read them when it began (a forget meanwhile is not in that list).
    var startupKnown: [KnownSpeaker] = []
    enum StartupStage: Equatable {
        case knownAttempt(index: Int, reply: LinkCore.Reply, choices: Int)
        case scanning(choices: Int)
        case pickAttempt(reply: LinkCore.Reply)
    }
    var startup: StartupStage?

    /// What arrives later, by its path: BlueZ's signals (0), BlueZ's replies and the operation
    /// queue (1), the audio path's reports (2), start-up's steps (3), the shells' own tasks (4:
    /// an attempt starting, a cancellation reaching the queue, the state file's forget). Each
    /// path keeps its order.
    enum Arrival {
        case signal(BlueZEvent)
        case operationRuns(Int)
        case operationEnded(Int, Outcome)
        case attemptEnded(LinkCore.AttemptID, LinkCore.AttemptResult)
        case audioPath(follow: Int, AudioPathState)
        case startupAgain
        case startupResumes(LinkCore.AttemptResult?)
        case attemptStarts(LinkCore.AttemptID, BluetoothAddress)
        case cancelOperation(Int)
        case stateFileForgets(BluetoothAddress)
    }
    var paths: [[Arrival]] = [[], [], [], [], []]
    var order = SplitMix64(seed: 1)

    // MARK: What the model knows
    var userHolds = false
    var heldSpeaker: BluetoothAddress?
    var connectCalls = 0
    var forgottenByUser: Set<BluetoothAddress> = []
    var userReplies: Set<LinkCore.Reply> = []
    var answered: [LinkCore.Reply: Int] = [:]
    var log: [String] = []
    var failures: [String] = []

    init(setup: Int) {
        autoPick = setup % 2 == 0
        if setup % 4 != 1 {
            world.known = [KnownSpeaker(address: Self.flip, name: "JBL Flip 5", firstConnected: Date(timeIntervalSince1970: 0),
                                        lastConnected: Date(timeIntervalSince1970: 0))]
        }
        // Now and then the soundfont is not there yet at the first start-up.
        world.soundfontInstalled = setup % 3 != 2
        order = SplitMix64(seed: UInt64(setup))
        log.append("known: \(!world.known.isEmpty), autoPick: \(autoPick), soundfont: \(world.soundfontInstalled)")
    }

    // MARK: - Timeline

    mutating func start() {
        daemon(.start)
        runStartup()
        settle()
    }

    /// One step of the timeline; returns what it was, for the failure's account.
    mutating func act(_ code: Int) -> String {
        order = SplitMix64(seed: UInt64(code))
        let detail = code / 16
        let target = link.snapshot.target?.address ?? Self.flip
        let action: String
        switch code % 16 {
        case 0:
            world.devices[target]?.behaviour = .fail
            world.devices[target]?.on = false
            drop(target, reason: .timeout)
            action = "speaker \(target) switched off"
        case 1:
            world.devices[target]?.behaviour = .succeed
            world.devices[target]?.on = true
            action = "speaker \(target) switched on"
        case 2:
            world.devices[target]?.behaviour = .hang
            action = "Connect to \(target) hangs from now on"
        case 3:
            // Now and then the other speaker: known, it becomes the target when none is connected.
            let speaker = detail % 3 == 0 ? (target == Self.flip ? Self.charge : Self.flip) : target
            guard world.bluetoothd, let device = world.devices[speaker], device.on, !device.connected else {
                action = "nothing (inbound needs the speaker on and not connected)"
                break
            }
            world.devices[speaker]?.connected = true
            signal(.deviceChanged(deviceState(speaker)))
            signal(.connected(speaker))
            action = "speaker \(speaker) connects inbound"
        case 4:
            guard world.bluetoothd else { action = "nothing (bluetoothd is already stopped)"; break }
            world.bluetoothd = false
            signal(.bluetoothdVanished)
            for address in world.devices.keys.sorted(by: { $0.description < $1.description }) {
                if world.devices[address]?.connected == true {
                    world.devices[address]?.connected = false
                    signal(.disconnected(address, .unspecified))
                }
                signal(.deviceRemoved(address))
            }
            signal(.adapterRemoved(name: world.adapter, address: nil))
            action = "bluetoothd stops"
        case 5:
            guard !world.bluetoothd else { action = "nothing (bluetoothd is already running)"; break }
            world.bluetoothd = true
            world.devices = world.devices.merging([Self.flip: .init(), Self.charge: .init()]) { old, _ in
                WorldDevice(behaviour: old.behaviour, connected: false, on: old.on)
            }
            // Now and then the speaker, switched on, connects to it before we hear of it.
            let early = detail % 3 == 0 && world.devices[target]?.on == true
            if early { world.devices[target]?.connected = true }
            signal(.bluetoothdAppeared)
            signal(.adapterAdded(adapterState()))
            for address in [Self.flip, Self.charge] { signal(.deviceAdded(deviceState(address))) }
            signal(.bluetoothdRestarted)
            action = early ? "bluetoothd starts, \(target) connected to it at once" : "bluetoothd starts"
        case 6:
            guard world.bluetoothd else { action = "nothing (re-indexing needs bluetoothd)"; break }
            let old = world.adapter
            world.adapter = old == "hci0" ? "hci1" : "hci0"
            for address in world.devices.keys.sorted(by: { $0.description < $1.description }) {
                world.devices[address]?.connected = false
                signal(.deviceRemoved(address))
            }
            signal(.adapterRemoved(name: old, address: nil))
            world.devices = world.devices.merging([Self.flip: .init(), Self.charge: .init()]) { old, _ in old }
            signal(.adapterAdded(adapterState()))
            for address in [Self.flip, Self.charge] { signal(.deviceAdded(deviceState(address))) }
            action = "adapter re-indexed \(old) → \(world.adapter)"
        case 7:
            action = userConnects(detail % 3 == 0 ? Self.charge : Self.flip)
        case 8:
            action = userDisconnects()
        case 9:
            action = userForgets(target)
        case 10:
            world.soundfontInstalled.toggle()
            action = "soundfont \(world.soundfontInstalled ? "installed" : "removed")"
        case 11, 12:
            world.outputUsable.toggle()
            paths[2].append(.audioPath(follow: follows, pathState()))
            action = "output \(world.outputUsable ? "usable" : "unusable")"
        default:
            let seconds = [0.5, 1, 2, 5, 9, 12][detail % 6]
            advance(by: .milliseconds(Int(seconds * 1000)))
            action = "\(seconds) s pass"
        }
        if detail % 3 == 0 {
            // The user's next step comes while some of what this one set off is still on its way.
            settle(atMost: detail % 4 + 1)
            log.append(action + " (the next step before all of it is heard)")
        } else {
            log.append(action)
            settle()
        }
        return action
    }

    /// Nothing is on its way: the world and the cores have heard each other out.
    var isSettled: Bool { paths.allSatisfy(\.isEmpty) }

    /// The end: time passes until every hung `Connect` timed out, the daemon stops, and every
    /// `connect` the user made has had its answer, once.
    mutating func finish() {
        advance(by: .seconds(35))
        link(.stop)
        settle()
        for reply in userReplies where answered[reply] != 1 {
            fail("a user's connect was answered \(answered[reply] ?? 0) times")
        }
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
    }

    // MARK: - The user

    mutating func userConnects(_ address: BluetoothAddress) -> String {
        // As `SpeakerdDaemon.connect`: the adapter must have been reached, BlueZ must know it.
        guard daemon.tracking.gateLevel >= .adapter, bluezAttached else { return "user connect \(address) refused: not ready" }
        guard world.bluetoothd, world.devices[address] != nil else { return "user connect \(address) refused: BlueZ does not know it" }
        daemon(.userChose)
        userHolds = false
        forgottenByUser.remove(address)
        let name = world.known.first { $0.address == address }?.name ?? Self.names[address]!
        link(.choose(address, name: name, why: .userPick))
        let reply = newReply()
        userReplies.insert(reply)
        link(.connectAsked(byUser: true, reply: reply))
        return "user connects \(address)"
    }

    mutating func userDisconnects() -> String {
        daemon(.userChose)
        guard daemon.inputs.link.target != nil else { return "user disconnect refused: no speaker" }
        guard link.snapshot.connected || !link.heldByUser else { return "user disconnect refused: already disconnected" }
        let wasConnected = link.snapshot.connected
        var ending: BluetoothAddress?
        for effect in link.step(.userDisconnect, now: now) {
            if case .disconnect(let address) = effect { ending = address } else { _ = perform(effect) }
        }
        userHolds = true
        heldSpeaker = link.snapshot.target?.address
        if let address = ending, bluezAttached, world.bluetoothd {
            drop(address, reason: .local)
            link(.disconnectReturned(address))
        }
        return "user disconnects (was connected: \(wasConnected))"
    }

    mutating func userForgets(_ address: BluetoothAddress) -> String {
        daemon(.userChose)
        let wasConnected = link.snapshot.target?.address == address && link.snapshot.connected
        link(.forget(address))
        if wasConnected, world.bluetoothd { drop(address, reason: .local) }
        forgottenByUser.insert(address)
        if link.snapshot.target == nil { userHolds = false }
        paths[4].append(.stateFileForgets(address))  // BlueZ's reports meanwhile still find it known
        return "user forgets \(address)"
    }

    /// The forget reaches the state file, then BlueZ removes the pairing.
    mutating func stateFileForgets(_ address: BluetoothAddress) {
        guard world.known.contains(where: { $0.address == address }) else { return }
        world.known.removeAll { $0.address == address }
        if world.bluetoothd, world.devices.removeValue(forKey: address) != nil { signal(.deviceRemoved(address)) }
    }

    // MARK: - Start-up, as the sequencer runs it

    mutating func runStartup() {
        if case let .knownAttempt(_, reply, _) = startup { link(.callerLeft(reply)) }
        if case let .pickAttempt(reply) = startup { link(.callerLeft(reply)) }
        startup = nil
        daemon(.startupBegins)
        daemon(.observed(.bus(true)))
        guard world.bluetoothd else { return daemon(.blocked(.noBlueZ)) }
        bluezAttached = true
        if case .blocked = daemon.lifecycle { return }
        adapterInUse = world.adapter
        daemon(.observed(.bluetooth(.ready)))
        startupKnown = world.known
        if world.soundfontInstalled {
            world.soundfontLoaded = true
            daemon(.observed(.soundfont(.loaded)))
        } else if !world.soundfontLoaded {
            world.soundfontFailed = true
            daemon(.observed(.soundfont(.failed("soundfont \(Self.soundfont) is missing"))))
        }
        if startupKnown.isEmpty {
            scanAndPick(choices: daemon.linkHistory.userChoices)
        } else if !link.heldByUser {
            tryKnown(0, choices: daemon.linkHistory.userChoices)
        } else {
            endStartup()
        }
    }

    mutating func tryKnown(_ index: Int, choices: Int) {
        guard choices == daemon.linkHistory.userChoices else { return endStartup() }
        guard index < startupKnown.count else {
            guard let first = startupKnown.first else { return endStartup() }
            link(.choose(first.address, name: first.name, why: .lastKnown))
            link(.policy(.unreachableAtBoot))
            return scanAndPick(choices: choices)
        }
        let speaker = startupKnown[index]
        link(.choose(speaker.address, name: speaker.name, why: index == 0 ? .lastKnown : .otherKnown))
        let reply = newReply()
        startup = .knownAttempt(index: index, reply: reply, choices: choices)
        link(.connectAsked(byUser: false, reply: reply))
    }

    mutating func scanAndPick(choices: Int) {
        if autoPick { daemon(.observed(.choosing(.autoPickScanning))) }
        guard world.bluetoothd else {
            daemon(.observed(.choosing(.user)))
            return endStartup()
        }
        startup = .scanning(choices: choices)
        paths[3].append(.startupResumes(nil))
    }

    mutating func startupResumes(_ result: LinkCore.AttemptResult?) {
        switch startup {
        case let .knownAttempt(index, _, choices):
            if result == .connected || daemon.inputs.link.connected || daemon.inputs.link.activity == .heldByUser {
                return endStartup()
            }
            tryKnown(index + 1, choices: choices)
        case let .scanning(choices):
            guard !daemon.inputs.link.connected, choices == daemon.linkHistory.userChoices else {
                if daemon.inputs.link.target == nil { daemon(.observed(.choosing(.user))) }
                return endStartup()
            }
            let inRange = [Self.flip, Self.charge].filter { world.bluetoothd && world.devices[$0]?.on == true }
            if autoPick, let best = inRange.first {
                link(.choose(best, name: Self.names[best]!, why: .autoPick))
                let reply = newReply()
                startup = .pickAttempt(reply: reply)
                link(.connectAsked(byUser: false, reply: reply))
                return
            }
            daemon(.observed(.choosing(.user)))
            endStartup()
        case .pickAttempt, nil:
            endStartup()
        }
    }

    /// The audio backend step, then the end of the run.
    mutating func endStartup() {
        startup = nil
        if followed != link.snapshot.target || follows == 0 { followAudioPath(link.snapshot.target) }
        daemon(.startupEnded)
    }

    // MARK: - Running the cores' effects, as their shells do

    mutating func link(_ event: LinkCore.Event) {
        for effect in link.step(event, now: now) { _ = perform(effect) }
    }

    mutating func daemon(_ event: DaemonCore.Event) {
        for effect in daemon.step(event) { perform(effect) }
    }

    /// Carries out one of the link's effects; returns what an attempt's run hears, if this says.
    mutating func perform(_ effect: LinkCore.Effect) -> LinkCore.AttemptResult? {
        switch effect {
        case let .runAttempt(id, address):
            paths[4].append(.attemptStarts(id, address))  // in a task of its own
        case let .stopAttempt(id):
            // Its task is cancelled; the operation's cancellation reaches the queue in a task.
            if paths[4].contains(where: { if case .attemptStarts(id, _) = $0 { true } else { false } }) { stoppedAttempts.insert(id) }
            if let operation = operations.first(where: { $0.attempts.first == id && !$0.ending }) {
                paths[4].append(.cancelOperation(operation.number))
            }
        case let .armRetry(deadline, target):
            retry = (deadline, target)
        case .disarmRetry:
            retry = nil
        case let .answer(reply, result):
            answered[reply, default: 0] += 1
            if startup == .pickAttempt(reply: reply) {
                paths[3].append(.startupResumes(result))
            } else if case let .knownAttempt(_, waiting, _) = startup, waiting == reply {
                paths[3].append(.startupResumes(result))
            }
        case .publish(let snapshot):
            judgeTarget(snapshot)
            daemon(.linkChanged(snapshot, followed: .some(followed)))
        case .catchUp:
            break  // every publish is taken in before the next event here
        case .askPaired(let address):
            link(.pairedAnswer(address, paired: world.bluetoothd && world.devices[address] != nil ? true : nil))
        case .confirmLink(let address):
            var answer: LinkCore.AttemptResult?
            for effect in link.step(.linkConfirmed(address, connected: world.devices[address]?.connected == true), now: now) {
                if let result = perform(effect) { answer = result }
            }
            return answer
        case .linkCameUp(let address):
            if let operation = operations.first(where: { $0.address == address && !$0.ending }) { decide(operation.number, .linkUp) }
        case .cancelConnect:
            // The operation whose Connect went out is cancelled at once; the attempt under way
            // has its task cancelled, whose operation's cancellation comes in a task.
            for operation in operations where !operation.ending {
                if operation.wentOut { decide(operation.number, .cancelled) } else { paths[4].append(.cancelOperation(operation.number)) }
            }
        case .disconnect, .disconnectReported, .log:
            break
        case .answerAttempt(let result):
            return result
        }
        return nil
    }

    /// An attempt's task begins, as `SpeakerLink.attempt` does: refused, joining the one under
    /// way, or queueing its connect operation.
    mutating func attemptStarts(_ id: LinkCore.AttemptID, _ address: BluetoothAddress) {
        if stoppedAttempts.remove(id) != nil {
            paths[1].append(.attemptEnded(id, .failed(reason: "cancelled")))  // its task was cancelled before it ran
        } else if let refusal = link.refusal(connectingTo: address) {
            paths[1].append(.attemptEnded(id, .failed(reason: refusal)))
        } else if let index = operations.firstIndex(where: { $0.address == address && !$0.ending }) {
            operations[index].attempts.append(id)  // joins the attempt under way
        } else {
            lastOperation += 1
            operations.append(ConnectOperation(number: lastOperation, address: address, attempts: [id], dropsBefore: link.drops))
            if bluezAttached { paths[1].append(.operationRuns(lastOperation)) } else { decide(lastOperation, .noBlueZ) }
        }
    }

    mutating func perform(_ effect: DaemonCore.Effect) {
        switch effect {
        case .readiness(.moveGate), .readiness(.tellPlayer), .readiness(.publishStatus), .readiness(.log), .log, .publish,
             .observeSpeaker, .linkSleep, .reportBusLost, .heardPlayback, .announceCandidates:
            break  // the gate's level is the tracking's own; the rest is the other owners'
        case .forgetAdapter:
            adapterInUse = nil
        case .detachBlueZ:
            bluezAttached = false
        case .observeLink(let event):
            let attempting = operations.first { !$0.ending }?.address
            link(.bluez(event, known: world.known, attempting: attempting))
        case .runStartupAgain:
            paths[3].append(.startupAgain)
        case .followAudioPath(let target):
            followAudioPath(target)
        case let .remember(target, _):
            let known = world.known.first { $0.address == target.address }
            world.known.removeAll { $0.address == target.address }
            world.known.insert(known ?? KnownSpeaker(address: target.address, name: target.name, firstConnected: Date(timeIntervalSince1970: 0),
                                                     lastConnected: Date(timeIntervalSince1970: 0)), at: 0)
        }
    }

    mutating func followAudioPath(_ target: LinkSnapshot.Target?) {
        follows += 1
        followed = target
        daemon(.pathFollowed)
        paths[2].append(.audioPath(follow: follows, pathState()))
    }

    /// An operation's outcome is decided: it arrives by BlueZ's replies, and nothing later about
    /// the operation counts.
    mutating func decide(_ number: Int, _ outcome: Outcome) {
        guard let index = operations.firstIndex(where: { $0.number == number }), !operations[index].ending else { return }
        operations[index].ending = true
        paths[1].append(.operationEnded(number, outcome))
    }

    /// The operation's work begins: it asks the link whether its Connect may go out, then sends it.
    mutating func operationRuns(_ number: Int) {
        guard let index = operations.firstIndex(where: { $0.number == number }), !operations[index].ending else { return }
        if operations.contains(where: { $0.wentOut && !$0.ending }) {
            paths[1].append(.operationRuns(number))  // the queue runs one link operation at a time
            return
        }
        let address = operations[index].address
        guard link.refusal(connectingTo: address) == nil else { return decide(number, .cancelled) }
        operations[index].wentOut = true
        guard world.bluetoothd else { return decide(number, .failed("bluetoothd is not running")) }
        guard let device = world.devices[address] else { return decide(number, .failed("\(address) is not known to bluetoothd")) }
        if device.connected { return decide(number, .ok) }
        if userHolds, address == heldSpeaker { fail("(d) a Connect was sent to \(address) after the user's disconnect") }
        connectCalls += 1
        switch device.behaviour {
        case .succeed:
            world.devices[address]?.connected = true
            signal(.deviceChanged(deviceState(address)))
            signal(.connected(address))
            decide(number, .ok)
        case .fail:
            decide(number, .failed("br-connection-page-timeout"))
        case .hang:
            operations[index].hangsUntil = now.advanced(by: .seconds(10))
        }
    }

    /// The operation's outcome reaches its attempts, as `SpeakerLink.runAttempt` and `attempt` see it.
    mutating func operationEnded(_ number: Int, _ outcome: Outcome) {
        guard let index = operations.firstIndex(where: { $0.number == number }) else { return }
        let operation = operations.remove(at: index)
        let result: LinkCore.AttemptResult
        switch outcome {
        case .ok, .linkUp:
            result = .connected
        case .noBlueZ:
            result = .failed(reason: "BlueZ is not reachable")
        case .cancelled:
            result = .failed(reason: "cancelled")
        case .failed(let reason):
            link(.attemptFailed(operation.address, reason: reason))
            result = .failed(reason: reason)
        case .timedOut:
            let reason = "it did not answer within 10 s (off or out of range)"
            link(.attemptFailed(operation.address, reason: reason))
            result = .failed(reason: reason)
        }
        for id in operation.attempts {
            var heard: LinkCore.AttemptResult?
            for effect in link.step(.attemptReturned(operation.address, result, dropsBefore: operation.dropsBefore), now: now) {
                if let answer = perform(effect) { heard = answer }
            }
            paths[1].append(.attemptEnded(id, heard ?? .failed(reason: "speakerd is stopping")))
        }
    }

    // MARK: - Arrivals and time

    /// Hears everything on its way (or the first `limit` arrivals), the paths taken in an order of
    /// the timeline's choosing.
    mutating func settle(atMost limit: Int? = nil) {
        var heard = 0
        while let path = paths.indices.filter({ !paths[$0].isEmpty }).randomElement(using: &order) {
            if let limit, heard == limit { return }
            heard += 1
            guard heard <= 10_000 else { return fail("the box never settles") }
            switch paths[path].removeFirst() {
            case .signal(let event): daemon(.bluez(event, adapterInUse: adapterInUse))
            case .operationRuns(let number): operationRuns(number)
            case let .operationEnded(number, outcome): operationEnded(number, outcome)
            case let .attemptEnded(id, result): link(.attemptEnded(id, result))
            case let .audioPath(follow, state): daemon(.audioPath(state, latest: follow == follows))
            case .startupAgain: runStartup()
            case .startupResumes(let result): startupResumes(result)
            case let .attemptStarts(id, address): attemptStarts(id, address)
            case .cancelOperation(let number): decide(number, .cancelled)
            case .stateFileForgets(let address): stateFileForgets(address)
            }
        }
    }

    /// Moves the clock in quarter seconds, firing what is due and hearing what follows each time.
    mutating func advance(by duration: Duration) {
        let end = now.advanced(by: duration)
        while now < end {
            now = min(end, now.advanced(by: .milliseconds(250)))
            if let armed = retry, armed.deadline <= now {
                retry = nil
                link(.retryDue(deadline: armed.deadline, target: armed.target))
            }
            for operation in operations where !operation.ending {
                if let deadline = operation.hangsUntil, deadline <= now { decide(operation.number, .timedOut) }
            }
            settle()
        }
    }

    // MARK: - The world's side

    mutating func signal(_ event: BlueZEvent) { paths[0].append(.signal(event)) }

    mutating func drop(_ address: BluetoothAddress, reason: DisconnectReason) {
        guard world.devices[address]?.connected == true else { return }
        world.devices[address]?.connected = false
        signal(.deviceChanged(deviceState(address)))
        signal(.disconnected(address, reason))
    }

    func deviceState(_ address: BluetoothAddress) -> Device {
        Device(address: address, adapterName: world.adapter, name: Self.names[address], deviceClass: 0x240414, paired: true,
               trusted: true, connected: world.devices[address]?.connected ?? false, uuids: [BlueZUUID.a2dpSink])
    }

    func adapterState() -> Adapter {
        Adapter(name: world.adapter, address: try! BluetoothAddress("00:01:02:03:04:05"), powered: true, powerState: .on)
    }

    func pathState() -> AudioPathState {
        world.outputUsable ? .ready(.standIn("the model output")) : .notReady(.outputUnusable("cannot write /model/out.wav: permission denied"))
    }

    mutating func newReply() -> LinkCore.Reply {
        lastReply += 1
        return LinkCore.Reply(lastReply)
    }

    // MARK: - Invariants

    mutating func check(after step: String) {
        for failure in violations(after: step) { fail(failure) }
    }

    /// What is wrong now, if anything (invariants (a), (b)).
    mutating func violations(after step: String) -> [String] {
        var found: [String] = []
        func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition { found.append("\(message()) after \"\(step)\"") }
        }
        let verdict = daemon.verdict
        let level = daemon.tracking.gateLevel
        let snapshot = link.snapshot
        let targetConnected = snapshot.target.map { world.bluetoothd && world.devices[$0.address]?.connected == true } ?? false
        let allReady = world.bluetoothd && targetConnected && world.soundfontLoaded && world.outputUsable
        if allReady {
            expect(level == .playbackReady, "(a) every input is ready but readiness is \(level): \(verdict.waitingFor?.message ?? "-")")
        } else {
            expect(level < .playbackReady, "(b) readiness is playbackReady although an input is not ready (bluetoothd \(world.bluetoothd), "
                   + "link \(targetConnected), soundfont \(world.soundfontLoaded), output \(world.outputUsable))")
            let code = verdict.waitingFor?.code
            // A soundfont that failed to load comes first: waiting cannot get past it, so a `play`
            // fails at once with it, whatever the link does.
            if world.soundfontFailed, !world.soundfontLoaded {
                expect(code == .soundfontMissing, "(b) the soundfont failed to load but waitingFor is \(String(describing: code))")
            } else if !world.outputUsable {
                expect(code == .outputUnusable, "(b) the output is unusable but waitingFor is \(String(describing: code))")
            } else if !world.bluetoothd {
                expect(code == .noBluetoothd, "(b) bluetoothd is gone but waitingFor is \(String(describing: code))")
            } else if !targetConnected, snapshot.target != nil, userHolds, !snapshot.connected {
                expect(code == .userDisconnected || code == .noAdapter, "(b) the user disconnected but waitingFor is \(String(describing: code))")
            } else if targetConnected, !world.soundfontLoaded {
                expect(code == .soundfontMissing || code == .soundfontLoading,
                       "(b) only the soundfont is missing but waitingFor is \(String(describing: code))")
            }
            expect(verdict.waitingFor != nil, "(b) not ready, and no reason given")
        }
        return found
    }

    /// At every change the link publishes: the user's hold is on the speaker they disconnected, so
    /// another one becoming the target (connecting by itself, picked) is not held. Invariant (f): a
    /// forgotten speaker taken back afresh is a speaker like any other again (the daemon
    /// remembers it anew); any other way back is wrong.
    mutating func judgeTarget(_ snapshot: LinkSnapshot) {
        if userHolds, let target = snapshot.target, target.address != heldSpeaker { userHolds = false }
        guard let target = snapshot.target, forgottenByUser.contains(target.address) else { return }
        if target.why == .userPick || target.why == .autoPick {
            forgottenByUser.remove(target.address)
        } else {
            fail("(f) \(target.address), forgotten by the user, is the target again (\(target.why))")
        }
    }

    mutating func fail(_ message: String) {
        let devices = world.devices.sorted { $0.key.description < $1.key.description }
            .map { "\($0.key) connected \($0.value.connected), \($0.value.behaviour)" }
        failures.append("\(message)\nlink: \(link.snapshot), held \(link.heldByUser)\nworld: \(devices.joined(separator: "; "))\n"
                        + "timeline:\n  \(log.joined(separator: "\n  "))")
    }
}
