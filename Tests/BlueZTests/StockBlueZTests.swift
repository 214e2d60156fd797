@testable import BlueZ
import Clocks
import DBus
import Synchronization
import TestSupport
import Testing

/// The client against python-dbusmock's stock `bluez5` template, unchanged.
@Suite("BlueZ client against the stock bluez5 mock")
struct StockBlueZTests {
    let speaker = try! BluetoothAddress("11:22:33:44:55:66")
    let hci0 = try! BluetoothAddress("00:01:02:03:04:05")

    @Test("an adapter and a device added to BlueZ show up as typed models and events")
    func discoveryOfObjects() async throws {
        let bluez = try await BlueZWorld.start()
        defer { Task { await bluez.stop() } }
        #expect(try await bluez.client.adapters().isEmpty)
        await #expect(throws: BlueZClientError.noAdapter) { try await bluez.client.defaultAdapter() }

        try await bluez.mock("AddAdapter", .string("hci0"), .string("speakerbox"))
        let added = await nextEvent(bluez.events) { if case .adapterAdded = $0 { true } else { false } }
        guard case .adapterAdded(let adapter)? = added else { return }
        #expect(adapter.name == "hci0")
        #expect(adapter.address == hci0)
        #expect(adapter.powered)

        try await bluez.mock("AddDevice", .string("hci0"), .string(speaker.description), .string("JBL Flip 5"))
        _ = await nextEvent(bluez.events) { $0 == .deviceAdded(Device(address: self.speaker, name: "JBL Flip 5", alias: "JBL Flip 5", icon: "", deviceClass: 0, appearance: 0, rssi: -79, txPower: 0)) }
        let device = try #require(try await bluez.client.device(speaker))
        #expect(device.displayName == "JBL Flip 5")
        #expect(device.adapterName == "hci0")
        #expect(device.audioSink == .unknown)
        // The stock template sends ManufacturerData as aa{qv}: noted, never fatal.
        #expect(await bluez.client.decodingProblems.contains { $0.contains("ManufacturerData") })
    }

    @Test("connect is seen as connected from the signal although the stock mock keeps Connected false")
    func signalsAreTruth() async throws {
        let bluez = try await BlueZWorld.start()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddDevice", .string("hci0"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded = $0 { true } else { false } }

        try await bluez.client.connect(speaker)
        _ = await nextEvent(bluez.events) { $0 == .connected(self.speaker) }
        #expect(try await bluez.client.device(speaker)?.connected == true)
        let stored = try await bluez.storedProperty("Connected", of: BlueZWorld.devicePath("hci0", speaker), interface: "org.bluez.Device1")
        #expect(stored == .bool(false), "the stock mock leaves its stored property stale")

        try await bluez.client.disconnect(speaker)
        _ = await nextEvent(bluez.events) { $0 == .disconnected(self.speaker, .unspecified) }
        #expect(try await bluez.client.device(speaker)?.connected == false)
    }

    @Test("power on, a filtered discovery session and forgetting a device")
    func adapterOperations() async throws {
        let bluez = try await BlueZWorld.start()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddDevice", .string("hci0"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded = $0 { true } else { false } }
        _ = try await bluez.control.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties",
                                     method: "Set", arguments: [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.bool(false))])
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { !a.powered } else { false } }

        try await bluez.client.powerOn(hci0)
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { a.powered } else { false } }

        try await bluez.client.startDiscovery(on: hci0, filter: .audioSinks)
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { a.discovering } else { false } }
        let filter = try await bluez.storedProperty("DiscoveryFilter", of: "/org/bluez/hci0", interface: "org.bluez.Adapter1")
        #expect("\(filter)".contains("bredr"))
        #expect("\(filter)".contains(BlueZUUID.a2dpSink))
        try await bluez.client.stopDiscovery(on: hci0)
        _ = await nextEvent(bluez.events) { if case .adapterChanged(let a) = $0 { !a.discovering } else { false } }

        try await bluez.client.setTrusted(speaker, true)
        _ = await nextEvent(bluez.events) { if case .deviceChanged(let d) = $0 { d.trusted } else { false } }
        try await bluez.client.removeDevice(speaker)
        _ = await nextEvent(bluez.events) { $0 == .deviceRemoved(self.speaker) }
        await #expect(throws: BlueZClientError.unknownDevice(speaker)) { try await bluez.client.connect(speaker) }
    }

    @Test("Connect made to fail with page-timeout through AddMethod says the speaker is off or out of range")
    func pageTimeoutInjected() async throws {
        let bluez = try await BlueZWorld.start()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddDevice", .string("hci0"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded = $0 { true } else { false } }
        try await bluez.mock("AddMethod", .string("org.bluez.Device1"), .string("Connect"), .string(""), .string(""),
                             .string("raise dbus.exceptions.DBusException('br-connection-page-timeout', name='org.bluez.Error.Failed')"),
                             path: BlueZWorld.devicePath("hci0", speaker), interface: "org.freedesktop.DBus.Mock")
        do {
            try await bluez.client.connect(speaker)
            Issue.record("connect should have failed")
        } catch let error as BlueZClientError {
            #expect(error.bluezError?.kind == .failed)
            #expect(error.bluezError?.connectionFailure?.reason == .pageTimeout)
            #expect("\(error)".contains("the speaker is off or out of range"))
        }
    }

    @Test("a Connect that never answers is abandoned after our timeout, measured on the injected clock")
    func hangingConnectTimesOut() async throws {
        let bluez = try await BlueZWorld.start(configuration: .init(connectTimeout: .seconds(30)))
        defer { Task { await bluez.stop() } }
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddDevice", .string("hci0"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded = $0 { true } else { false } }
        // The stock mock can only hang by blocking; it stalls 10 s of real time, our timeout is 30 s
        // of test time. (It stalled 3 s: under AddressSanitizer on a loaded machine the client had
        // not yet armed its timer when the late answer came, and the Connect succeeded.)
        try await bluez.mock("AddMethod", .string("org.bluez.Device1"), .string("Connect"), .string(""), .string(""),
                             .string("import time; time.sleep(10)"),
                             path: BlueZWorld.devicePath("hci0", speaker), interface: "org.freedesktop.DBus.Mock")
        let attempt = Task { try await bluez.client.connect(speaker) }
        await advanceUntilDone(bluez.clock, by: .seconds(30), attempt)
        await #expect(throws: BlueZClientError.timedOut(operation: "Connect to \(speaker)", after: .seconds(30))) {
            try await attempt.value
        }
    }

    @Test("bluetoothd restarting: the cache is dropped and rebuilt, the agent re-registered, subscribers told")
    func restart() async throws {
        let bluez = try await BlueZWorld.start()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        _ = await nextEvent(bluez.events) { if case .adapterAdded = $0 { true } else { false } }
        #expect(await bluez.client.isAgentRegistered)

        try await bluez.world.restartBlueZ()
        _ = await nextEvent(bluez.events) { $0 == .adapterRemoved(name: "hci0", address: self.hci0) }
        _ = await nextEvent(bluez.events) { $0 == .bluetoothdRestarted }
        #expect(try await bluez.client.adapters().isEmpty, "the restarted mock has no adapter")
        #expect(await bluez.client.isAgentRegistered)
        let calls = try await bluez.mock("GetMethodCalls", .string("RegisterAgent"), path: "/org/bluez", interface: "org.freedesktop.DBus.Mock")
        #expect("\(calls)".contains("NoInputNoOutput"))

        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        _ = await nextEvent(bluez.events) { if case .adapterAdded = $0 { true } else { false } }
        #expect(try await bluez.client.defaultAdapter().address == hci0)
    }

    @Test("the adapter is unplugged and comes back as hci1: the speaker is found again by its address")
    func adapterReplug() async throws {
        let bluez = try await BlueZWorld.start()
        defer { Task { await bluez.stop() } }
        try await bluez.mock("AddAdapter", .string("hci0"), .string("box"))
        try await bluez.mock("AddDevice", .string("hci0"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded = $0 { true } else { false } }

        try await bluez.mock("RemoveAdapter", .string("hci0"))
        _ = await nextEvent(bluez.events) { $0 == .deviceRemoved(self.speaker) }
        _ = await nextEvent(bluez.events) { if case .adapterRemoved(name: "hci0", _) = $0 { true } else { false } }
        #expect(try await bluez.client.devices().isEmpty, "the stock mock keeps the orphan; we do not show it")
        await #expect(throws: BlueZClientError.unknownDevice(speaker)) { try await bluez.client.connect(speaker) }

        try await bluez.mock("AddAdapter", .string("hci1"), .string("box"))
        try await bluez.mock("AddDevice", .string("hci1"), .string(speaker.description), .string("Flip"))
        _ = await nextEvent(bluez.events) { if case .deviceAdded(let d) = $0 { d.adapterName == "hci1" } else { false } }
        try await bluez.client.connect(speaker)
        _ = await nextEvent(bluez.events) { $0 == .connected(self.speaker) }
        #expect(try await bluez.client.device(speaker)?.adapterName == "hci1")
    }

    @Test("bluetoothd not running at start: calls say so, and the client picks BlueZ up when it appears")
    func lateBluetoothd() async throws {
        let bluez = try await BlueZWorld.start(bluez: false)
        defer { Task { await bluez.stop() } }
        await #expect(throws: BlueZClientError.bluetoothdNotRunning) { try await bluez.client.adapters() }
        try await bluez.world.startBlueZ()
        _ = await nextEvent(bluez.events) { $0 == .bluetoothdAppeared }
        #expect(try await bluez.client.adapters().isEmpty)
        #expect(await bluez.client.isAgentRegistered)
    }
}

/// Advances the test clock until `task` finishes: the timeout's sleeper may register only after
/// the call reached the bus, so one advance may come too early.
func advanceUntilDone<T: Sendable>(_ clock: TestClock<Duration>, by step: Duration, _ task: Task<T, any Error>) async {
    let finished = DoneFlag()
    let watcher = Task {
        _ = try? await task.value
        finished.set()
    }
    while !finished.isSet {
        await clock.advance(by: step)
        await Task.yield()
    }
    await watcher.value
}

/// speakerd's start-up registers the pairing agent just after `start` instead of before it
/// returns (`registersAgentInBackground`): the agent must still reach bluetoothd.
@Suite("Pairing agent registered in the background")
struct BackgroundAgentTests {
    @Test("with registration in the background, start returns and the agent still reaches bluetoothd")
    func agentRegistersAfterStart() async throws {
        let world = try await FakeBusWorld.start()
        let control = try await world.connect()
        defer { control.close() }
        // The mock announces each call it takes; subscribe before the client exists.
        var calls = try await control.signals(matching: DBusMatchRule(
            path: "/org/bluez", interface: "org.freedesktop.DBus.Mock", member: "MethodCalled")).makeAsyncIterator()
        let client = try await DBusBlueZClient.start(
            connection: try await world.connect(), configuration: .init(registersAgentInBackground: true))
        var methods: [String] = []
        while !methods.contains("RequestDefaultAgent"), let call = await calls.next() {
            if case .string(let method)? = call.arguments.first { methods.append(method) }
        }
        #expect(methods == ["RegisterAgent", "RequestDefaultAgent"])
        await client.shutDown()
        client.connection.close()
        _ = world
    }
}
