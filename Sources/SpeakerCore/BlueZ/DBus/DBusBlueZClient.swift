import AsyncAlgorithms
import AsyncSignals
import DBus
import Logging

/// The real `BlueZClient`: org.bluez over the system bus (or any bus, for tests).
///
/// It keeps a `BlueZObjectCache` current from BlueZ's signals, survives bluetoothd restarts
/// (NameOwnerChanged: drop the cache, re-sync, re-register the agent, tell subscribers) and adapter
/// re-plugs (devices are always looked up by address, paths are never remembered), and coalesces
/// RSSI bursts. Call `shutDown()` when done: it ends the background tasks and event streams.
public actor DBusBlueZClient: BlueZClient {
    /// The client's own lifecycle.
    private enum State {
        case created
        case running(pump: Task<Void, Never>, coalescer: Task<Void, Never>)
        case shutDown
    }

    /// What we know of bluetoothd, from org.bluez's owner.
    private enum Bluetoothd: Equatable {
        case unknown
        case absent
        case present(owner: String)
    }

    /// Signals and owner changes, merged into one ordered input for the pump.
    private enum Input: Sendable {
        case signal(DBusSignal)
        case owner(String?)
    }

    public nonisolated let connection: DBusConnection
    let configuration: BlueZClientConfiguration
    let clock: any Clock<Duration>
    let cache = BlueZObjectCache()
    let agent: BlueZAgent
    let logger: Logger
    private let broadcaster = Broadcaster<BlueZEvent>(bufferingNewest: 1024)
    private var state = State.created
    private var bluetoothd = Bluetoothd.unknown
    private var hasSeenBluetoothd = false
    private var agentRegistered = false
    /// Whether this bluetoothd is new enough (`BlueZSupport`); judged again for every new owner.
    var support = BlueZSupport.Verdict.undetermined
    private var noisyPending: Set<BluetoothAddress> = []
    private let throttleTrigger = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    private let debounceTrigger = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    private init(connection: DBusConnection, clock: any Clock<Duration>, configuration: BlueZClientConfiguration, logger: Logger) {
        self.connection = connection
        self.logger = logger
        self.clock = clock
        self.configuration = configuration
        self.agent = BlueZAgent(path: configuration.agentPath)
    }

    /// Connects the client to BlueZ on `connection`: subscribes first, then reads every object,
    /// then registers the agent. Works when bluetoothd is not running yet (it is picked up when it
    /// appears; calls meanwhile throw `.bluetoothdNotRunning`). A bluetoothd too old for speakerd
    /// (`BlueZSupport`) is named by every call (`.unsupportedBlueZ`) until a newer one takes org.bluez.
    public static func start(
        connection: DBusConnection, clock: any Clock<Duration> = ContinuousClock(),
        configuration: BlueZClientConfiguration = .init(), logger: Logger = Logger(label: "speakerd.bluez")
    ) async throws -> DBusBlueZClient {
        let client = DBusBlueZClient(connection: connection, clock: clock, configuration: configuration, logger: logger)
        try await client.run()
        return client
    }

    private func run() async throws {
        guard case .created = state else { return }
        // Subscribe before reading, so nothing that happens in between is lost.
        let signals = try await connection.signals(matching: DBusMatchRule(sender: BlueZInterface.service))
        let owners = try await connection.nameOwnerChanges(for: BlueZInterface.service)
        if configuration.registersAgent {
            try connection.export(try agent.makeObject(), at: agent.path)
        }
        await ownerChanged(try await connection.nameOwner(of: BlueZInterface.service))

        let inputs = merge(signals.map { Input.signal($0) }, owners.map { Input.owner($0) })
        let pump = Task { [weak self] in
            for await input in inputs {
                guard let self else { return }
                await self.handle(input)
            }
        }
        let coalescer = Self.coalesce(
            throttled: throttleTrigger.stream, debounced: debounceTrigger.stream,
            interval: configuration.noisyChangeInterval, clock: clock
        ) { [weak self] in await self?.flushNoisy() }
        state = .running(pump: pump, coalescer: coalescer)
    }

    /// Stops listening, unregisters the agent, ends every event stream. Idempotent.
    public func shutDown() async {
        guard case .running(let pump, let coalescer) = state else {
            state = .shutDown
            broadcaster.finish()
            return
        }
        state = .shutDown
        pump.cancel()
        coalescer.cancel()
        throttleTrigger.continuation.finish()
        debounceTrigger.continuation.finish()
        if agentRegistered, case .present = bluetoothd {
            _ = try? await connection.call(
                destination: BlueZInterface.service, path: BlueZPaths.manager, interface: BlueZInterface.agentManager,
                method: "UnregisterAgent", arguments: [.objectPath(agent.path)], timeout: .seconds(1))
        }
        if configuration.registersAgent { connection.unexport(at: agent.path) }
        broadcaster.finish()
    }

    public nonisolated func events() -> AsyncStream<BlueZEvent> {
        broadcaster.subscribe()
    }

    /// Mistyped properties BlueZ sent (kept for `doctor`; never fatal).
    public var decodingProblems: [String] {
        get async { await cache.decodingProblems.map(\.description) }
    }

    // MARK: - Input

    private func handle(_ input: Input) async {
        switch input {
        case .owner(let owner):
            await ownerChanged(owner)
        case .signal(let raw):
            // Only the current bluetoothd speaks for BlueZ; a late signal from a dead one is stale.
            guard case .present(let owner) = bluetoothd, raw.sender == owner else { return }
            do {
                guard let signal = try BlueZSignal(raw) else { return }
                await apply(signal)
            } catch {
                logger.warning("ignoring a malformed \(raw.interface).\(raw.member) from BlueZ at \(raw.path): \(error)")
            }
        }
    }

    private func apply(_ signal: BlueZSignal) async {
        let update: BlueZObjectCache.Update
        switch signal {
        case .interfacesAdded(let path, let interfaces):
            update = await cache.interfacesAdded(at: path, interfaces)
            // The first adapter of a bluetoothd that had none tells its age.
            if interfaces[BlueZInterface.adapter] != nil { await checkSupport() }
        case .interfacesRemoved(let path, let interfaces):
            update = await cache.interfacesRemoved(at: path, interfaces)
        case .propertiesChanged(let path, let interface, let changed, let invalidated):
            update = await cache.propertiesChanged(at: path, interface: interface, changed: changed, invalidated: invalidated)
        case .disconnected(let path, let reason):
            await cache.disconnectedSignal(at: path, reason: reason)
            return
        }
        publish(update)
    }

    private func publish(_ update: BlueZObjectCache.Update) {
        for event in update.events { broadcaster.publish(event) }
        guard !update.noisyDevices.isEmpty else { return }
        noisyPending.formUnion(update.noisyDevices)
        throttleTrigger.continuation.yield()
        debounceTrigger.continuation.yield()
    }

    /// Announces the current state of every device whose noisy properties changed since last time.
    private func flushNoisy() async {
        let addresses = noisyPending
        noisyPending.removeAll()
        for address in addresses.sorted() {
            guard let path = await cache.path(ofDevice: address), let device = await cache.device(at: path) else { continue }
            broadcaster.publish(.deviceChanged(device))
        }
    }

    /// Leading-edge throttle plus trailing debounce, both from swift-async-algorithms: a steady
    /// RSSI stream reaches subscribers at most about once per interval, and the last value of a
    /// burst is never held back.
    private static func coalesce<C: Clock>(
        throttled: AsyncStream<Void>, debounced: AsyncStream<Void>, interval: Duration, clock: C,
        flush: @escaping @Sendable () async -> Void
    ) -> Task<Void, Never> where C.Duration == Duration {
        Task {
            let ticks = merge(throttled._throttle(for: interval, clock: clock, latest: true),
                              debounced.debounce(for: interval, clock: clock))
            for await _ in ticks { await flush() }
        }
    }

    // MARK: - bluetoothd coming and going

    private func ownerChanged(_ owner: String?) async {
        switch (bluetoothd, owner) {
        case (.present(let current), let new?) where current == new:
            return
        case (.absent, nil):
            return
        case (.unknown, nil):
            bluetoothd = .absent
        case (.present, nil):
            logger.warning("bluetoothd left the bus (org.bluez has no owner); waiting for it to come back")
            bluetoothd = .absent
            agentRegistered = false
            support = .undetermined
            await vanished()
        case (let previous, let new?):
            if case .present = previous {
                // A new owner without a gap: bluetoothd restarted between two of our reads.
                await vanished()
            }
            logger.info("bluetoothd is on the bus as \(new); reading its objects")
            bluetoothd = .present(owner: new)
            agentRegistered = false
            support = .undetermined
            let restarted = hasSeenBluetoothd
            hasSeenBluetoothd = true
            await resynchronise()
            // A BlueZ too old has no AgentManager1 to register with; it is only named, not used.
            if case .tooOld = support {
            } else if previous == .unknown, configuration.registersAgentInBackground {
                Task { [weak self] in await self?.registerAgent() }
            } else {
                await registerAgent()
            }
            // Announced once usable: the cache is rebuilt and the agent is in place.
            if previous != .unknown { broadcaster.publish(.bluetoothdAppeared) }
            if restarted { broadcaster.publish(.bluetoothdRestarted) }
        }
    }

    /// Empties the cache and says so: the cause first, then what went with it. A subscriber
    /// reading the removals first would take them for news of their own: the daemon said
    /// "waiting for a Bluetooth adapter to be plugged in" for a moment whenever bluetoothd left,
    /// and a start-up step ending in that moment failed with it.
    private func vanished() async {
        let removals = await cache.clear()
        broadcaster.publish(.bluetoothdVanished)
        publish(removals)
    }

    /// Rebuilds the cache from `GetManagedObjects`. Signals received meanwhile are applied after it.
    private func resynchronise() async {
        do {
            let reply = try await connection.call(
                destination: BlueZInterface.service, path: .root, interface: BlueZInterface.objectManager,
                method: "GetManagedObjects", timeout: configuration.callTimeout)
            let managed = try reply.decode([DBusObjectPath: [String: [String: DBusValue]]].self, at: 0)
            publish(await cache.load(managed))
            await checkSupport()
        } catch where BlueZSupport.lacksObjectManager(error) {
            await judgePreFive(error)
            publish(await cache.clear())
        } catch {
            // bluetoothd vanished again, or answered nonsense: the next owner change re-syncs.
            logger.warning("could not read BlueZ's objects: \(error)")
            publish(await cache.clear())
        }
    }

    private func registerAgent() async {
        guard configuration.registersAgent else { return }
        let path = DBusValue.objectPath(agent.path)
        do {
            _ = try await connection.call(
                destination: BlueZInterface.service, path: BlueZPaths.manager, interface: BlueZInterface.agentManager,
                method: "RegisterAgent", arguments: [path, .string(BlueZAgent.capability)], timeout: configuration.callTimeout)
        } catch .remote(let name, _) where name == "org.bluez.Error.AlreadyExists" {
            // Ours already: fine.
        } catch {
            logger.error("could not register the pairing agent with BlueZ: \(error); pairing will need another agent")
            return
        }
        _ = try? await connection.call(
            destination: BlueZInterface.service, path: BlueZPaths.manager, interface: BlueZInterface.agentManager,
            method: "RequestDefaultAgent", arguments: [path], timeout: configuration.callTimeout)
        agentRegistered = true
    }

    /// Whether our agent is registered with the current bluetoothd.
    public var isAgentRegistered: Bool { agentRegistered }

    // MARK: - Helpers for the operations

    func requireBluetoothd() throws(BlueZClientError) {
        switch state {
        case .running: break
        case .created, .shutDown: throw .bus("the BlueZ client is not running")
        }
        guard case .present = bluetoothd else { throw .bluetoothdNotRunning }
        if case .tooOld(let found) = support { throw .unsupportedBlueZ(found: found, needed: BlueZSupport.minimumVersion) }
    }

    func broadcast(_ update: BlueZObjectCache.Update) { publish(update) }
}
