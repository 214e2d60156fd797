import AsyncSignals
import BlueZ
import Logging
import Readiness
import Configuration
import Synchronization

/// The one owner of the speaker link, for the daemon's whole life: it runs ``LinkCore``, which
/// decides what each request and BlueZ report means for the link, and carries out its effects.
///
/// Start-up's connect and scan steps, the user's `connect`/`disconnect`/`forget`, and BlueZ's
/// signals all come here. When to try again is the core's (its ``ReconnectDecision``, with the
/// ``ReconnectPolicy`` in it); each attempt runs through the daemon's ``AsyncOperationQueue`` (one
/// at a time, timed out, cancellable, and holding the sleep delay lock while it runs), and the
/// retry timer sleeps on the injected clock. Every change is handed to `onChange` in order.
public actor SpeakerLink {
    public typealias AttemptResult = LinkCore.AttemptResult

    private let clock: ErasedClock
    private let operations: AsyncOperationQueue
    private let logger: Logger
    private var onChange: (@Sendable (LinkSnapshot) async -> Void)?
    private var bluez: (any BlueZClient)?

    private var core: LinkCore
    /// The attempts the reconnects started, the retry timer, and the callers awaiting attempts.
    private var attempts: [LinkCore.AttemptID: Task<Void, Never>] = [:]
    private var retryTimer: Task<Void, Never>?
    private var replies: [LinkCore.Reply: OneShotSignal<AttemptResult, Never>] = [:]
    private var lastReply: UInt64 = 0
    /// The newest change being handed to `onChange`, and the newest revision taken in.
    private var lastDelivery: Task<Void, Never>?
    private var delivered = 0
    /// Callers waiting until a revision is taken in (`LinkCore.Effect.catchUp`).
    private var catchingUp: [(revision: Int, signal: OneShotSignal<Void, Never>)] = []
    /// The user's disconnects waiting for BlueZ's report of it (see `userDisconnect`).
    private var disconnectWaiters: [OneShotSignal<Void, Never>] = []
    /// The attempt under way for the current target, with the count of drops when it began;
    /// a second ask joins it (and judges its success against the same count).
    private var inFlight: (address: BluetoothAddress, task: Task<AttemptResult, Never>, dropsBefore: Int)?
    /// The connect operation whose work got past the user's hold: its Connect (or Pair) may be
    /// on its way to BlueZ, and a user's disconnect cancels it first.
    private var connecting: OperationID?
    /// The connect attempt under way, resolved when its speaker's link comes up before its
    /// operation ends (the speaker connected by itself while we paged it).
    private var attemptLinkUp: (address: BluetoothAddress, signal: OneShotSignal<Void, Never>)?

    public init(clock: any Clock<Duration>, reconnectCap: Duration, operations: AsyncOperationQueue, logger: Logger) {
        self.clock = ErasedClock(clock)
        self.operations = operations
        self.logger = logger
        core = LinkCore(policy: ReconnectPolicy(random: SystemRandomNumberGenerator(), cap: reconnectCap))
    }

    deinit {
        retryTimer?.cancel()
        for attempt in attempts.values { attempt.cancel() }
    }

    /// Where every change goes (the daemon recomputes readiness from it).
    public func follow(_ onChange: @escaping @Sendable (LinkSnapshot) async -> Void) { self.onChange = onChange }

    /// The BlueZ client to act through (nil while bluetoothd is away).
    public func attach(_ bluez: (any BlueZClient)?) { self.bluez = bluez }

    public var snapshot: LinkSnapshot { core.snapshot }

    /// Whether the user disconnected the target and has not asked to connect since.
    public var isHeldByUser: Bool { core.heldByUser }

    /// The reconnect policy's state for the current target (the status line's retry time).
    public var reconnectState: ReconnectPolicy<ErasedClock>.State? { core.reconnect?.policy.state }

    // MARK: - Requests

    /// Makes `address` the speaker to keep. A new target gets a fresh reconnect policy and any
    /// attempt at the old one is cancelled; the same target keeps its policy (its name and
    /// reason may be refreshed). A speaker the user forgot is chosen again only afresh.
    public func choose(_ address: BluetoothAddress, name: String, why: LinkSnapshot.Why) async {
        await run(.choose(address, name: name, why: why))
    }

    /// One attempt at the target now, awaited (lifts a user's hold; an attempt already under
    /// way is joined, never doubled).
    public func connectNow() async -> AttemptResult {
        await ask(byUser: true)
    }

    /// One attempt now, unless the user disconnected the target (start-up's own attempts: a
    /// start-up run again after bluetoothd came back does not overrule the user).
    public func connectUnlessHeld() async -> AttemptResult {
        await ask(byUser: false)
    }

    /// An attempt asked for and awaited. A caller that leaves cancels its attempt, and still
    /// hears how it ended.
    private func ask(byUser: Bool) async -> AttemptResult {
        lastReply += 1
        let reply = LinkCore.Reply(lastReply)
        let answer = OneShotSignal<AttemptResult, Never>()
        replies[reply] = answer
        return await withTaskCancellationHandler {
            await run(.connectAsked(byUser: byUser, reply: reply))
            return await withCheckedContinuation { continuation in
                answer.observe { continuation.resume(returning: $0.get()) }
            }
        } onCancel: {
            Task { await self.run(.callerLeft(reply)) }
        }
    }

    /// A person's request began waiting for the speaker: a speaker out of reach is tried now
    /// and every few seconds until `requestEnded()`; a user's disconnect still holds.
    public func requestWaiting() async { await run(.policy(.requestWaiting)) }

    /// The request that waited has its answer.
    public func requestEnded() async { await run(.policy(.requestEnded)) }

    /// No known speaker answered at start-up: keep trying the target in the background.
    public func unreachableAtBoot() async { await run(.policy(.unreachableAtBoot)) }

    /// logind's `PrepareForSleep`.
    public func systemSleep(starting: Bool) async { await run(.policy(starting ? .preparingForSleep : .resumedFromSleep)) }

    /// The user's `disconnect`: nothing reconnects until they ask again, and once it returns no
    /// Connect of ours is left to reach BlueZ.
    ///
    /// A connect operation already past the hold when the user asked may have its Connect on
    /// the wire (or BlueZ already paging the speaker): it is cancelled, which sends nothing
    /// more, and our Disconnect then follows it on the same connection, so BlueZ ends whatever
    /// it started. Only stopping the attempt let that Connect land after the user's word.
    public func userDisconnect() async throws {
        let wasUp = core.snapshot.connected
        var ending: BluetoothAddress?
        for effect in core.step(.userDisconnect, now: clock.now) {
            if case .disconnect(let address) = effect { ending = address } else { _ = await perform(effect) }
        }
        guard let address = ending, let bluez else { return }
        let seenBefore = core.disconnectsSeen
        // A speaker operation like the others: timed out, and holding the sleep delay lock.
        // "Not connected" is the user's wish already met (the link went, or never came up).
        let endedALink = OneShotSignal<Bool, Never>()
        let ticket = await operations.add("disconnect \(address)", group: "disconnect", timeout: .seconds(10)) { _ in
            do {
                try await bluez.disconnect(address)
                endedALink.succeed(true)
            } catch let error as BlueZClientError where error.bluezError?.kind == .notConnected {
                endedALink.succeed(false)
            }
        }
        switch try await ticket.outcome() {
        case .ok: break
        case .failed(let reason), .skipped(let reason): throw SpeakerOperationFailure(operation: "Disconnect", reason: reason)
        case .timedOut: throw SpeakerOperationFailure(operation: "Disconnect", reason: "BlueZ did not answer within 10 s")
        case .cancelled: throw CancellationError()
        }
        await run(.disconnectReturned(address))  // our call returning is already the truth for status
        // BlueZ signals the link down before it answers, but the answer and its signals reach
        // us by different paths. The user's next step (often `connect` at once) must not
        // overtake that signal: taken in after a new link is up, it would read as a drop of
        // the new link. So this returns once BlueZ's own report is handled (bounded, in case
        // a BlueZ never sends it, or the link we ended was one we had not heard of yet).
        if core.disconnectsSeen == seenBefore, wasUp || endedALink.result != .success(false) {
            let reported = OneShotSignal<Void, Never>()
            disconnectWaiters.append(reported)
            _ = try? await reported.value(timeout: .seconds(2))
            disconnectWaiters.removeAll { $0 === reported }
        }
    }

    /// The user forgot the speaker: nothing to keep connected any more, and nothing remembered
    /// brings it back. Returns whether it was the target and connected (the caller ends the link).
    public func forget(_ address: BluetoothAddress) async -> Bool {
        let wasConnected = core.snapshot.target?.address == address && core.snapshot.connected
        await run(.forget(address))
        return wasConnected
    }

    public func shutdown() async {
        await run(.stop)
        onChange = nil
    }

    // MARK: - Observing BlueZ

    /// Follows one BlueZ event. `known` are the remembered speakers: one of them connecting by
    /// itself becomes the target when there is none, or when the target is not connected.
    public func observe(_ event: BlueZEvent, known: [KnownSpeaker]) async {
        await run(.bluez(event, known: known, attempting: attemptLinkUp?.address))
    }

    // MARK: - Running the core

    /// Steps the core and carries out its effects in order; returns the answer for the caller
    /// of an attempt, if the step gave one.
    @discardableResult
    private func run(_ event: LinkCore.Event) async -> AttemptResult? {
        var answer: AttemptResult?
        for effect in core.step(event, now: clock.now) {
            if let result = await perform(effect) { answer = result }
        }
        return answer
    }

    private func perform(_ effect: LinkCore.Effect) async -> AttemptResult? {
        switch effect {
        case let .runAttempt(id, address):
            attempts[id] = Task { [weak self] in
                guard let self else { return }
                let result = await self.attempt(address)
                await self.attemptFinished(id, result)
            }
        case let .stopAttempt(id):
            attempts[id]?.cancel()
        case let .armRetry(deadline, target):
            retryTimer?.cancel()
            retryTimer = clock.timer(at: deadline) { [weak self] in await self?.run(.retryDue(deadline: deadline, target: target)) }
        case .disarmRetry:
            retryTimer?.cancel()
            retryTimer = nil
        case let .answer(reply, result):
            replies.removeValue(forKey: reply)?.succeed(result)
        case .publish(let snapshot):
            await deliver(snapshot)
        case .catchUp(let revision):
            await caughtUp(to: revision)
        case .askPaired(let address):
            let paired = (try? await bluez?.device(address))??.paired
            await run(.pairedAnswer(address, paired: paired))
        case .confirmLink(let address):
            let connected = (try? await bluez?.device(address))?.flatMap { $0 }?.connected ?? false
            return await run(.linkConfirmed(address, connected: connected))
        case .linkCameUp(let address):
            if let attempt = attemptLinkUp, attempt.address == address { _ = attempt.signal.succeed(()) }
            connecting = nil
        case .cancelConnect:
            if let operation = connecting {
                connecting = nil
                await operations.cancel(operation)
            }
            cancelInFlight()
        case .disconnect:
            break  // carried out by `userDisconnect`, the only step that asks for it
        case .disconnectReported:
            for waiter in disconnectWaiters { waiter.succeed(()) }
        case .answerAttempt(let result):
            return result
        case .log(let line):
            logger.info("\(line)")
        }
        return nil
    }

    /// An attempt the reconnects started has ended.
    private func attemptFinished(_ id: LinkCore.AttemptID, _ result: AttemptResult) async {
        attempts[id] = nil
        await run(.attemptEnded(id, result))
    }

    /// Hands the new snapshot to `onChange`, after every earlier one (deliveries form a chain),
    /// and returns once it is delivered.
    private func deliver(_ value: LinkSnapshot) async {
        let previous = lastDelivery, onChange = onChange
        let delivery = Task {
            await previous?.value
            await onChange?(value)
        }
        lastDelivery = delivery
        await delivery.value
        taken(value.revision)
    }

    /// Revision `revision` and all before it are taken in: whoever waits for them may go on.
    private func taken(_ revision: Int) {
        guard revision > delivered else { return }
        delivered = revision
        let done = catchingUp.filter { $0.revision <= revision }
        catchingUp.removeAll { $0.revision <= revision }
        for waiter in done { waiter.signal.succeed(()) }
    }

    /// Returns once the delivery of `revision` is taken in (its publish may still be on its way,
    /// in a step that suspended before it).
    private func caughtUp(to revision: Int) async {
        guard revision > delivered, !core.isStopped else { return }
        let signal = OneShotSignal<Void, Never>()
        catchingUp.append((revision, signal))
        _ = try? await signal.result()
    }

    /// The queue booked the connect operation's end: its work is finished or cancelled.
    private func connectEnded(_ operation: OperationID) {
        if connecting == operation { connecting = nil }
    }

    private func cancelInFlight() {
        inFlight?.task.cancel()
        inFlight = nil
    }

    /// The connect operation's work asks this before it sends anything: false once the user
    /// has disconnected (or the target changed, or the daemon stops).
    private func mayConnect(_ operation: OperationID, to address: BluetoothAddress) -> Bool {
        guard core.refusal(connectingTo: address) == nil else { return false }
        connecting = operation
        return true
    }

    /// One attempt, through the operation queue; a second ask for the same speaker joins it.
    private func attempt(_ address: BluetoothAddress) async -> AttemptResult {
        if let refusal = core.refusal(connectingTo: address) { return .failed(reason: refusal) }
        // A second ask joins the attempt under way and then judges its result like the first
        // (a joiner that returned at once could answer "connected" before the link is up).
        let result: AttemptResult, dropsBefore: Int
        if let inFlight, inFlight.address == address {
            dropsBefore = inFlight.dropsBefore
            result = await inFlight.task.value  // a joiner's cancellation is not the attempt's
        } else {
            dropsBefore = core.drops
            let task = Task { await self.runAttempt(address) }
            inFlight = (address, task, dropsBefore)
            result = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
            if inFlight?.task == task { inFlight = nil }
        }
        return await run(.attemptReturned(address, result, dropsBefore: dropsBefore)) ?? .failed(reason: "speakerd is stopping")
    }

    private func runAttempt(_ address: BluetoothAddress) async -> AttemptResult {
        guard let bluez else { return .failed(reason: "BlueZ is not reachable") }
        let settingUp = SettingUpMark()
        // The speaker may connect by itself while our Connect still pages it (switched on
        // meanwhile): BlueZ answers that Connect only after its page timeout, or never. The link
        // being up ends the attempt then (see `attemptLinkUp`). Marked before the operation is
        // queued, as its work may start at once: a pairing link reported before the mark was seen
        // as the speaker connected (CI, under AddressSanitizer).
        let linkCameUp = OneShotSignal<Void, Never>()
        attemptLinkUp = (address, linkCameUp)
        defer { if attemptLinkUp?.signal === linkCameUp { attemptLinkUp = nil } }
        let ticket = await operations.add(Self.connectOperationPrefix + "\(address)", group: "link", timeout: .seconds(10)) { [weak self] context in
            // The user may have disconnected while this waited in the queue: their disconnect
            // cancels the attempt (as `cancelInFlight` does), so no Connect goes out after it
            // and no failure is logged for it.
            guard let self, await self.mayConnect(context.id, to: address) else { throw CancellationError() }
            try await Self.connectSteps(bluez, address, clock: self.clock, settingUp: settingUp)
        }
        let operations = operations
        let outcome: OperationOutcome
        do {
            let ended = try await withTaskCancellationHandler {
                try await Self.firstEnd(of: ticket, or: linkCameUp)
            } onCancel: {
                Task { await operations.cancel(ticket.id) }
            }
            switch ended {
            case .operation(let ending):
                outcome = ending
            case .linkUp:
                // Paired and up: all our Connect had left to do is done. Its call is given up
                // (BlueZ keeps the link; nothing waits for, or later reports a timeout of, a
                // Connect that no longer matters). A speaker still pairing goes on as asked.
                // Not while the attempt still pairs or trusts the speaker: the link is then the
                // pairing's (bluetoothd says `Paired` well before it answers `Pair`, as it browses
                // the speaker's services first), and the trust and the `Connect` that brings the
                // audio profiles must still go out (`SettingUpMark`).
                if !settingUp.isSet, (try? await bluez.device(address))?.paired == true {
                    await operations.cancel(ticket.id)
                    return .connected
                }
                outcome = try await ticket.outcome()
            }
        } catch {
            // Its work may run on until the queue books the cancellation (and cancels it).
            Task { [weak self] in
                _ = try? await ticket.outcome()
                await self?.connectEnded(ticket.id)
            }
            return .failed(reason: "cancelled")
        }
        connectEnded(ticket.id)
        switch outcome {
        case .ok: return .connected
        case .failed(let reason):
            await run(.attemptFailed(address, reason: reason))
            if let refusal = settingUp.refusal { return .pairingRefused(reason: refusal) }
            return .failed(reason: reason)
        case .timedOut:
            let reason = "it did not answer within 10 s (off or out of range)"
            await run(.attemptFailed(address, reason: reason))
            return .failed(reason: reason)
        case .cancelled: return .failed(reason: "cancelled")
        case .skipped(let reason): return .failed(reason: reason)
        }
    }

    /// How an attempt's wait ended: its operation's outcome, or the link to its speaker up.
    private enum AttemptEnd: Sendable {
        case operation(OperationOutcome)
        case linkUp
    }

    /// Whichever comes first: the connect operation ending, or the link coming up meanwhile.
    private static func firstEnd(of ticket: OperationTicket, or linkCameUp: OneShotSignal<Void, Never>) async throws -> AttemptEnd {
        try await withThrowingTaskGroup(of: AttemptEnd.self) { group in
            group.addTask { .operation(try await ticket.outcome()) }
            group.addTask {
                _ = try await linkCameUp.result()
                return .linkUp
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    /// How long an attempt waits for a speaker bluetoothd does not list (yet) before its `Connect`
    /// goes out anyway (and fails, "not known to bluetoothd"). bluetoothd lists an adapter's paired
    /// devices just after the adapter itself (a dongle plugged in, the adapter or bluetoothd back):
    /// start-up's run for the new adapter asks for the known speaker at once, and without this wait
    /// took the failure for "no known speaker answered" and scanned while the speaker was there.
    static let listingGrace = Duration.seconds(2)

    /// How an attempt's operation is named in the queue ("connect ADDRESS"): start-up knows its
    /// `Connect` is about to go out when one starts.
    static let connectOperationPrefix = "connect "

    /// Pair and trust a new speaker, then `Connect`. A link that is already up is success, unless
    /// it is the one pairing brought up: bluetoothd connects the audio profiles only at our
    /// `Connect`, so it goes out after `Pair` whatever BlueZ says of the link meanwhile.
    private static func connectSteps(_ bluez: any BlueZClient, _ address: BluetoothAddress, clock: ErasedClock,
                                     settingUp: SettingUpMark) async throws {
        var listed = try await bluez.device(address)
        if listed == nil { listed = try await waitForListing(of: address, on: bluez, clock: clock) }
        if let device = listed {
            if device.connected { return }
            if !device.paired || !device.trusted {
                settingUp.set(true)
                if !device.paired {
                    do { try await bluez.pair(address) } catch let error as BlueZClientError {
                        if let refusal = error.bluezError?.pairingRefusal { settingUp.refused(refusal) }
                        throw error
                    }
                }
                if !device.trusted { try await bluez.setTrusted(address, true) }
                settingUp.set(false)
            }
        }
        do { try await bluez.connect(address) } catch let error as BlueZClientError where error.bluezError?.kind == .alreadyConnected {
            return  // Our cached view was stale (the link came up meanwhile).
        }
    }

    /// The device once bluetoothd lists it, or nil if it does not within `listingGrace`.
    private static func waitForListing(of address: BluetoothAddress, on bluez: any BlueZClient,
                                       clock: ErasedClock) async throws -> Device? {
        // Subscribed before looking again, so a listing in between is not missed.
        let events = bluez.events()
        if let device = try await bluez.device(address) { return device }
        let listing = try await timeboxed(listingGrace, clock: clock) { () async -> Device? in
            for await case .deviceAdded(let device) in events where device.address == address { return device }
            return nil
        }
        guard case .finished(let device) = listing else { return nil }
        return device
    }
}

/// Set while a connect attempt pairs or trusts a new speaker: a link that comes up meanwhile
/// (the pairing's own) does not end the attempt, which runs on to its trust and its `Connect`.
/// Once the `Connect` is out, the link up ends the attempt as before: BlueZ goes on with a call
/// it has been sent, and nothing waits for a page that no longer matters.
/// It also carries why the speaker would not pair, when its `Pair` was refused: the attempt then
/// ends in `pairingRefused`, which no retry follows.
final class SettingUpMark: Sendable {
    private let flag = Atomic<Bool>(false)
    private let refusalSaid = Mutex<String?>(nil)
    func set(_ value: Bool) { flag.store(value, ordering: .releasing) }
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func refused(_ why: String) { refusalSaid.withLock { $0 = why } }
    var refusal: String? { refusalSaid.withLock { $0 } }
}
