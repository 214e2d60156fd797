import BlueZ
import Configuration
import CustomDump
@testable import Daemon
import Foundation
import PropertyBased
import Testing
import TestSupport

/// The link's decisions as scenarios: what each request and BlueZ report does to the target,
/// its link, its reconnects and the user's hold, and what the link's owner is told to do.
@Suite("Link core scenarios")
struct LinkCoreTests {
    static let flip = try! BluetoothAddress("11:22:33:AA:BB:CC")
    static let charge = try! BluetoothAddress("22:33:44:BB:CC:DD")
    static let stranger = try! BluetoothAddress("33:44:55:CC:DD:EE")
    static let known = [speaker(flip, "JBL Flip 5"), speaker(charge, "JBL Charge 4")]
    static let start = ErasedClock.Instant(offset: .zero)

    static func speaker(_ address: BluetoothAddress, _ name: String) -> KnownSpeaker {
        KnownSpeaker(address: address, name: name, firstConnected: Date(timeIntervalSince1970: 0), lastConnected: Date(timeIntervalSince1970: 0))
    }

    static func device(_ address: BluetoothAddress, connected: Bool, paired: Bool = true, resolved: Bool = false) -> Device {
        Device(address: address, paired: paired, trusted: paired, connected: connected, servicesResolved: resolved)
    }

    static func core() -> LinkCore { LinkCore(policy: ReconnectPolicy(random: SplitMix64(seed: 7))) }

    /// The snapshots `effects` publish, in order.
    static func published(_ effects: [LinkCore.Effect]) -> [LinkSnapshot] {
        effects.compactMap { if case .publish(let snapshot) = $0 { snapshot } else { nil } }
    }

    /// The results the attempts' own runs hear (`attemptReturned`, `linkConfirmed`).
    static func answers(_ effects: [LinkCore.Effect]) -> [LinkCore.AttemptResult] {
        effects.compactMap { if case .answerAttempt(let result) = $0 { result } else { nil } }
    }

    /// The callers `effects` answer.
    static func replies(_ effects: [LinkCore.Effect]) -> [LinkCore.Reply: LinkCore.AttemptResult] {
        var replies: [LinkCore.Reply: LinkCore.AttemptResult] = [:]
        for case let .answer(reply, result) in effects { replies[reply] = result }
        return replies
    }

    static func attemptsRun(_ effects: [LinkCore.Effect]) -> [LinkCore.AttemptID] {
        effects.compactMap { if case let .runAttempt(id, _) = $0 { id } else { nil } }
    }

    /// A core whose target is the Flip, chosen at start-up, not connected.
    static func targetingFlip() -> LinkCore {
        var core = core()
        _ = core.step(.choose(flip, name: "JBL Flip 5", why: .lastKnown), now: start)
        return core
    }

    @Test("a known speaker switched on connects by itself: it becomes the target, connected, with its reconnects afresh")
    func inboundKnownSpeaker() {
        var core = Self.core()
        let effects = core.step(.bluez(.connected(Self.charge), known: Self.known, attempting: nil), now: Self.start)
        let target = LinkSnapshot.Target(address: Self.charge, name: "JBL Charge 4", why: .inbound)
        var chosen = LinkSnapshot(target: target)
        chosen.revision = 1
        var connected = LinkSnapshot(target: target, connected: true)
        connected.revision = 2
        expectNoDifference(effects, [.publish(chosen), .linkCameUp(Self.charge), .publish(connected)])
        #expect(core.reconnect?.policy.state == .connected)
        #expect(core.step(.bluez(.connected(Self.charge), known: Self.known, attempting: nil), now: Self.start) == [.catchUp(revision: 2)],
                "a second report of the same link waits for the first to be taken in, and changes nothing")
    }

    @Test("a speaker out of reach at boot is retried when its timer fires, its failure arms the next; an old timer's or an old target's reports do nothing")
    func retriedOnTheClock() throws {
        var core = Self.targetingFlip()
        let armed = core.step(.policy(.unreachableAtBoot), now: Self.start)
        let (deadline, number) = try #require(armed.compactMap { if case let .armRetry(deadline, target) = $0 { (deadline, target) } else { nil } }.first)
        #expect(core.snapshot.activity == .retrying(in: Self.start.duration(to: deadline)))
        #expect(core.step(.retryDue(deadline: deadline, target: number - 1), now: deadline).isEmpty, "another target's timer")
        let fired = core.step(.retryDue(deadline: deadline, target: number), now: deadline)
        let attempt = try #require(Self.attemptsRun(fired).first)
        #expect(core.snapshot.activity == .connecting)
        let failed = core.step(.attemptEnded(attempt, .failed(reason: "Page Timeout")), now: deadline.advanced(by: .seconds(5)))
        #expect(failed.contains { if case .armRetry = $0 { true } else { false } }, "the backoff takes over")
        #expect(core.step(.attemptEnded(attempt, .connected), now: deadline).isEmpty, "an attempt ends once")
        _ = core.step(.choose(Self.charge, name: "JBL Charge 4", why: .userPick), now: deadline)
        #expect(core.step(.attemptEnded(attempt, .connected), now: deadline).isEmpty, "the Flip's attempt says nothing of the Charge")
    }

    @Test("a connect waiting on one speaker when another is chosen, or when it is forgotten, hears why, not that speakerd stops")
    func waitingConnectHearsWhy() {
        var core = Self.targetingFlip()
        _ = core.step(.connectAsked(byUser: true, reply: .init(1)), now: Self.start)
        let chosen = core.step(.choose(Self.charge, name: "JBL Charge 4", why: .userPick), now: Self.start)
        #expect(Self.replies(chosen) == [.init(1): .failed(reason: "JBL Charge 4 (\(Self.charge)) was chosen instead of JBL Flip 5")])
        _ = core.step(.connectAsked(byUser: true, reply: .init(2)), now: Self.start)
        #expect(Self.replies(core.step(.forget(Self.charge), now: Self.start)) == [.init(2): .failed(reason: "you forgot it")])
    }

    @Test("a speaker the user forgot is not brought back by start-up's list or by its connecting, only by the user or a scan's pick")
    func forgottenStaysForgotten() {
        var core = Self.targetingFlip()
        _ = core.step(.forget(Self.flip), now: Self.start)
        #expect(core.snapshot.target == nil)
        #expect(core.reconnect == nil, "nothing left to reconnect")
        #expect(core.step(.choose(Self.flip, name: "JBL Flip 5", why: .lastKnown), now: Self.start) == [])
        #expect(core.step(.bluez(.connected(Self.flip), known: Self.known, attempting: nil), now: Self.start) == [])
        #expect(core.snapshot.target == nil)
        _ = core.step(.choose(Self.flip, name: "JBL Flip 5", why: .autoPick), now: Self.start)
        #expect(core.snapshot.target?.address == Self.flip, "a scan's pick is a choice made afresh")
        #expect(!core.forgotten.contains(Self.flip))
    }

    @Test("the link a pairing brings up is not the speaker connected: BlueZ's Paired decides, and a refused pairing leaves it down")
    func pairingLinkIsNotTheSpeaker() {
        var core = Self.core()
        _ = core.step(.choose(Self.stranger, name: "Boom 3", why: .userPick), now: Self.start)
        #expect(core.step(.bluez(.connected(Self.stranger), known: Self.known, attempting: Self.stranger), now: Self.start) == [.askPaired(Self.stranger)])
        #expect(core.step(.pairedAnswer(Self.stranger, paired: false), now: Self.start) == [], "still pairing: not connected")
        #expect(core.step(.bluez(.deviceChanged(Self.device(Self.stranger, connected: true, paired: false)), known: Self.known, attempting: nil),
                          now: Self.start) == [],
                "a speaker not remembered is only ever one an attempt pairs")
        #expect(!core.snapshot.connected)
        let paired = core.step(.pairedAnswer(Self.stranger, paired: true), now: Self.start)
        #expect(paired.contains(.linkCameUp(Self.stranger)))
        #expect(core.snapshot.connected)
    }

    @Test("the user disconnects while a Connect may be out: the attempt is stopped, the link ended, and the attempt's late success is not a link")
    func userDisconnectWins() throws {
        var core = Self.targetingFlip()
        let asked = core.step(.connectAsked(byUser: false, reply: .init(1)), now: Self.start)
        let attempt = try #require(Self.attemptsRun(asked).first)
        #expect(core.refusal(connectingTo: Self.flip) == nil, "its Connect may go out")
        let effects = core.step(.userDisconnect, now: Self.start)
        var held = core.snapshot
        held.revision = 3
        expectNoDifference(effects, [.publish(held), .cancelConnect, .disconnect(Self.flip)])
        #expect(core.snapshot.activity == .heldByUser)
        #expect(core.step(.attemptReturned(Self.flip, .connected, dropsBefore: 0), now: Self.start)
            == [.answerAttempt(.failed(reason: "you disconnected it"))])
        #expect(core.step(.attemptEnded(attempt, .failed(reason: "you disconnected it")), now: Self.start)
            == [.answer(.init(1), .failed(reason: "you disconnected it"))], "its caller hears it; nothing is retried")
        #expect(!core.snapshot.connected)
        #expect(core.refusal(connectingTo: Self.flip) == "you disconnected it", "no Connect goes out after the user's disconnect")
        #expect(core.step(.connectAsked(byUser: false, reply: .init(2)), now: Self.start)
            == [.answer(.init(2), .failed(reason: "you disconnected it; 'composer-cli connect' reconnects"))],
                "start-up run again does not overrule the user")
        #expect(core.step(.bluez(.disconnected(Self.flip, .local), known: Self.known, attempting: nil), now: Self.start)
            .contains(.disconnectReported))
        let again = core.step(.connectAsked(byUser: true, reply: .init(3)), now: Self.start)
        #expect(Self.attemptsRun(again).count == 1, "the user's own connect lifts the hold")
        #expect(!core.heldByUser)
    }

    @Test("the user disconnects a target whose link we have not heard of: BlueZ is asked to end it all the same")
    func userDisconnectOfAnUnheardLink() {
        var core = Self.targetingFlip()
        let effects = core.step(.userDisconnect, now: Self.start)
        #expect(effects.contains(.disconnect(Self.flip)), "BlueZ may have a link to it: \(effects)")
        #expect(core.heldByUser && core.snapshot.activity == .heldByUser)
    }

    @Test("BlueZ reports the link down while our Connect was under way: its success is checked with BlueZ before it counts")
    func dropDuringTheAttempt() {
        var core = Self.targetingFlip()
        let dropsBefore = core.drops
        _ = core.step(.bluez(.deviceAdded(Self.device(Self.flip, connected: true)), known: Self.known, attempting: nil), now: Self.start)
        _ = core.step(.bluez(.disconnected(Self.flip, .timeout), known: Self.known, attempting: nil), now: Self.start)
        #expect(core.step(.attemptReturned(Self.flip, .connected, dropsBefore: dropsBefore), now: Self.start) == [.confirmLink(Self.flip)])
        #expect(core.step(.linkConfirmed(Self.flip, connected: false), now: Self.start)
            == [.answerAttempt(.failed(reason: "the link dropped again at once"))])
        #expect(!core.snapshot.connected)
        _ = core.step(.attemptReturned(Self.flip, .connected, dropsBefore: core.drops), now: Self.start)
        #expect(core.snapshot.connected, "an undisturbed success is the link")
    }

    @Test("a speaker that stays off is said once per reason, and again after it has connected")
    func failuresSaidOnce() {
        var core = Self.targetingFlip()
        let line = LinkCore.Effect.log("connecting JBL Flip 5 (\(Self.flip)) failed: Page Timeout")
        #expect(core.step(.attemptFailed(Self.flip, reason: "Page Timeout"), now: Self.start) == [line])
        #expect(core.step(.attemptFailed(Self.flip, reason: "Page Timeout"), now: Self.start) == [])
        _ = core.step(.attemptReturned(Self.flip, .connected, dropsBefore: core.drops), now: Self.start)
        _ = core.step(.bluez(.disconnected(Self.flip, .timeout), known: Self.known, attempting: nil), now: Self.start)
        #expect(core.step(.attemptFailed(Self.flip, reason: "Page Timeout"), now: Self.start) == [line])
    }

    @Test("services resolved are followed once BlueZ has shown them for this speaker, and go back to unresolved when the link drops")
    func servicesResolved() {
        var core = Self.targetingFlip()
        _ = core.step(.bluez(.deviceChanged(Self.device(Self.flip, connected: true, resolved: false)), known: Self.known, attempting: nil),
                      now: Self.start)
        #expect(core.snapshot.servicesResolved == nil, "never shown resolved: BlueZ says nothing yet")
        #expect(core.snapshot.ready)
        _ = core.step(.bluez(.deviceChanged(Self.device(Self.flip, connected: true, resolved: true)), known: Self.known, attempting: nil),
                      now: Self.start)
        #expect(core.snapshot.servicesResolved == true)
        _ = core.step(.bluez(.bluetoothdVanished, known: Self.known, attempting: nil), now: Self.start)
        #expect(core.snapshot.servicesResolved == false)
        #expect(!core.snapshot.ready)
    }

    @Test("the stop answers every caller waiting, stops the attempts and the timer; after it nothing moves but answers")
    func nothingAfterTheStop() throws {
        var core = Self.targetingFlip()
        _ = core.step(.policy(.unreachableAtBoot), now: Self.start)
        let attempt = try #require(Self.attemptsRun(core.step(.connectAsked(byUser: true, reply: .init(1)), now: Self.start)).first)
        #expect(core.step(.stop, now: Self.start) == [.stopAttempt(attempt), .answer(.init(1), .failed(reason: "speakerd is stopping"))])
        var waiting = Self.targetingFlip()
        _ = waiting.step(.policy(.unreachableAtBoot), now: Self.start)
        #expect(waiting.step(.stop, now: Self.start) == [.disarmRetry], "no timer is left armed behind the stop")
        #expect(core.step(.choose(Self.charge, name: "JBL Charge 4", why: .userPick), now: Self.start) == [])
        #expect(core.step(.bluez(.connected(Self.flip), known: Self.known, attempting: nil), now: Self.start) == [])
        #expect(core.step(.attemptEnded(attempt, .connected), now: Self.start) == [])
        #expect(core.step(.attemptReturned(Self.flip, .connected, dropsBefore: 0), now: Self.start)
            == [.answerAttempt(.failed(reason: "speakerd is stopping"))])
        #expect(core.step(.connectAsked(byUser: true, reply: .init(2)), now: Self.start) == [.answer(.init(2), .failed(reason: "speakerd is stopping"))])
    }
}

/// Seeded random sequences of requests, BlueZ reports, attempt results and timers through the
/// link core, its rules checked after every step; a failing sequence shrinks to the few events
/// that break it.
@Suite("The link core under any order of events")
struct LinkCoreModelTests {
    static let addresses = [LinkCoreTests.flip, LinkCoreTests.charge, LinkCoreTests.stranger]
    static let whys: [LinkSnapshot.Why] = [.lastKnown, .otherKnown, .userPick, .autoPick, .inbound]
    static let results: [LinkCore.AttemptResult] = [.connected, .connected, .failed(reason: "Page Timeout"), .pairingRefused(reason: "refused")]
    static let reasons: [DisconnectReason] = [.timeout, .remote, .local, .unknown]
    static let policyEvents: [LinkCore.PolicyEvent] = [.unreachableAtBoot, .requestWaiting, .requestEnded, .preparingForSleep, .resumedFromSleep]

    struct Model {
        var core = LinkCoreTests.core()
        var now = LinkCoreTests.start
        /// What the model knows: the user's hold and the speakers they forgot.
        var held = false
        var forgotten: Set<BluetoothAddress> = []
        var lastRevision = 0
        var stopped = false
        var attempting: BluetoothAddress?
        /// Attempts run and not yet ended, callers asked and answered, the timer armed.
        var running: [LinkCore.AttemptID] = []
        var asked: Set<LinkCore.Reply> = []
        var answered: Set<LinkCore.Reply> = []
        var lastReply: UInt64 = 0
        var armed: (deadline: ErasedClock.Instant, target: Int)?

        static func pick<T>(_ values: [T], _ index: Int) -> T { values[index % values.count] }

        /// The event `code` stands for; nil for a step of the shell's alone (an attempt's Connect
        /// going out or settled, time passing).
        mutating func event(_ code: Int) -> LinkCore.Event? {
            let address = Self.pick(LinkCoreModelTests.addresses, code / 16)
            let detail = code / 64
            switch code % 20 {
            case 0: return .choose(address, name: "speaker", why: Self.pick(LinkCoreModelTests.whys, detail))
            case 1:
                lastReply += 1
                return .connectAsked(byUser: detail % 2 == 0, reply: .init(lastReply))
            case 2: return .userDisconnect
            case 3: return .forget(address)
            case 4: return .bluez(.connected(address), known: LinkCoreTests.known, attempting: attempting)
            case 5: return .bluez(.disconnected(address, Self.pick(LinkCoreModelTests.reasons, detail)), known: LinkCoreTests.known, attempting: attempting)
            case 6: return .bluez(.deviceChanged(LinkCoreTests.device(address, connected: detail % 2 == 0, paired: detail % 3 != 0,
                                                                      resolved: detail % 5 < 2)),
                                  known: LinkCoreTests.known, attempting: attempting)
            case 7: return .bluez(.deviceAdded(LinkCoreTests.device(address, connected: detail % 2 == 0, paired: detail % 3 != 0)),
                                  known: LinkCoreTests.known, attempting: attempting)
            case 8: return .bluez(detail % 2 == 0 ? .bluetoothdVanished : .deviceRemoved(address), known: LinkCoreTests.known, attempting: attempting)
            case 9: return .pairedAnswer(address, paired: detail % 3 == 0 ? nil : detail % 3 == 1)
            case 10: return .policy(Self.pick(LinkCoreModelTests.policyEvents, detail))
            case 11:
                if core.refusal(connectingTo: address) == nil { attempting = address }
                return nil
            case 12:
                attempting = nil
                return nil
            case 13: return .attemptReturned(address, Self.pick(LinkCoreModelTests.results, detail), dropsBefore: core.drops - detail % 2)
            case 14: return .linkConfirmed(address, connected: detail % 2 == 0)
            case 15:
                // An attempt the reconnects started ends (now and then one long over ends again).
                guard let id = detail % 5 == 0 ? running.last : running.first else { return nil }
                return .attemptEnded(id, Self.pick(LinkCoreModelTests.results, detail))
            case 16:
                guard let armed else { return nil }
                now = max(now, armed.deadline)
                return .retryDue(deadline: armed.deadline, target: detail % 7 == 0 ? armed.target - 1 : armed.target)
            case 17: return .callerLeft(.init(UInt64(detail) % (lastReply + 1)))
            case 18: return .disconnectReturned(address)
            default:
                if detail % 10 == 0 { return .stop }
                now = now.advanced(by: .milliseconds(detail % 5_000))
                return nil
            }
        }

        mutating func apply(_ code: Int) {
            guard let event = event(code) else { return }
            let before = core
            let effects = core.step(event, now: now)
            let after = core.snapshot

            // The model's own account of the hold and the forgotten speakers.
            switch event {
            case .userDisconnect where before.snapshot.target != nil && !stopped: held = true
            case .connectAsked(byUser: true, _) where !stopped: held = false
            case .forget(let address) where !stopped:
                forgotten.insert(address)
                if before.snapshot.target?.address == address { held = false }
            case .choose(let address, _, let why) where !stopped && (why == .userPick || why == .autoPick):
                forgotten.remove(address)
            case .stop: stopped = true
            default: break
            }
            if after.target?.address != before.snapshot.target?.address, after.target != nil { held = false }
            if case let .connectAsked(_, reply) = event { asked.insert(reply) }
            if case let .attemptEnded(id, _) = event { running.removeAll { $0 == id } }

            for effect in effects {
                switch effect {
                case let .runAttempt(id, address):
                    #expect(!held, "an attempt started while the user holds, after \(event)")
                    #expect(address == after.target?.address, "an attempt at \(address), not the target")
                    running.append(id)
                case let .answer(reply, _):
                    #expect(asked.contains(reply), "answered a call nobody made")
                    #expect(!answered.contains(reply), "answered \(reply) twice")
                    answered.insert(reply)
                case let .armRetry(deadline, target):
                    #expect(deadline > now, "armed for the past")
                    armed = (deadline, target)
                case .disarmRetry:
                    armed = nil
                default: break
                }
            }
            if case let .retryDue(deadline, target) = event, armed?.deadline == deadline, armed?.target == target {
                if !effects.contains(where: { if case .armRetry = $0 { true } else { false } }) { armed = nil }
            }

            #expect(core.heldByUser == held, "the hold is \(core.heldByUser), the user's word says \(held), after \(event)")
            #expect(!after.connected || after.target != nil, "connected with no target, after \(event)")
            if held, let target = after.target {
                #expect(core.refusal(connectingTo: target.address) != nil, "a Connect may go out while the user holds, after \(event)")
            }
            if held, !after.connected { #expect(after.activity == .heldByUser, "held but showing \(after.activity), after \(event)") }
            if after.connected, !held { #expect(after.activity == .idle, "connected but showing \(after.activity), after \(event)") }
            // No timer is left armed for a target gone, or after the stop.
            if let armed {
                #expect(armed.target == core.reconnectNumber && !stopped, "a retry left armed for a target gone, after \(event)")
            }

            // A forgotten speaker comes back only by a choice made afresh.
            if let target = after.target?.address, target != before.snapshot.target?.address {
                let afresh: Bool = if case .choose(_, _, let why) = event { why == .userPick || why == .autoPick } else { false }
                #expect(afresh || !before.forgotten.contains(target), "forgotten \(target) became the target again by \(event)")
            }
            // A link only a pairing brought up is not the speaker connected.
            if !before.snapshot.connected, after.connected {
                switch event {
                case .pairedAnswer(_, let paired): #expect(paired != false, "a pairing's link taken for the speaker")
                case .bluez(.deviceChanged(let device), let known, let attempting):
                    #expect(!(device.paired == false && LinkCore.mayBePairingLink(device.address, known: known, attempting: attempting)),
                            "a pairing's link taken for the speaker")
                case .bluez(.connected(let address), let known, let attempting) where address == before.snapshot.target?.address:
                    #expect(!LinkCore.mayBePairingLink(address, known: known, attempting: attempting), "connected without asking BlueZ")
                default: break
                }
            }
            // Every publish is newer than the last, and the last says what the core now holds.
            let published = LinkCoreTests.published(effects)
            for snapshot in published {
                #expect(snapshot.revision > lastRevision, "published revision \(snapshot.revision) after \(lastRevision)")
                lastRevision = snapshot.revision
            }
            if let last = published.last { #expect(last == after, "the last publish is not the core's state, after \(event)") }
            if published.isEmpty { #expect(after == before.snapshot, "the state changed unpublished, after \(event)") }
            // An attempt's own run hears whether its result stands exactly once.
            let answers = LinkCoreTests.answers(effects).count
            switch event {
            case .attemptReturned:
                #expect(answers + effects.count { if case .confirmLink = $0 { true } else { false } } == 1, "an attempt got \(answers) answers")
            case .linkConfirmed:
                #expect(answers == 1, "a confirmed attempt got \(answers) answers")
            default:
                #expect(answers == 0, "\(event) answered an attempt nobody ran")
            }
            if stopped, event != .stop {
                #expect(effects.allSatisfy { effect in
                    switch effect {
                    case .answerAttempt, .answer: true
                    default: false
                    }
                }, "\(effects) after the stop")
            }
        }

        /// The end: the daemon stops, and every caller has had its answer.
        mutating func finish() {
            apply(20 * 64 * 10 + 19)  // .stop
            let waiting = asked.subtracting(answered)
            #expect(waiting.isEmpty, "callers never answered: \(waiting)")
            #expect(armed == nil || core.isStopped, "a retry armed behind the stop")
        }
    }

    @Test("any sequence: the user's hold is theirs alone, a forgotten speaker comes back only afresh, a pairing's link is not the speaker, no timer left for a target gone, every change published in order and every caller answered exactly once",
          .shrinking(true))
    func invariants() async {
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...40_000).array(of: 1...80)) { codes in
            await Task.yield()  // the suites beside this one get the thread between cases
            var model = Model()
            for code in codes { model.apply(code) }
            model.finish()
        }
    }
}
