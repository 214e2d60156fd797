@testable import TestSupport
@testable import BlueZ
import Testing

@Suite("In-process fake BlueZ")
struct FakeBlueZClientTests {
    let adapterAddress = try! BluetoothAddress("00:01:02:03:04:05")
    let speaker = try! BluetoothAddress("11:22:33:44:55:66")

    func makeWorld() -> FakeBlueZClient {
        FakeBlueZClient(
            adapters: [Adapter(name: "hci0", address: adapterAddress, powered: false, powerState: .off)],
            devices: [Device(address: speaker, name: "JBL Flip 5", deviceClass: 0x240414, paired: true)]
        )
    }

    @Test("connecting a known speaker emits connected and records the call")
    func connect() async throws {
        let fake = makeWorld()
        var events = fake.events().makeAsyncIterator()
        try await fake.connect(speaker)
        #expect(await fake.calls == [.connect(speaker)])
        #expect(await events.next() == .deviceChanged(Device(address: speaker, name: "JBL Flip 5", deviceClass: 0x240414, paired: true, connected: true)))
        #expect(await events.next() == .connected(speaker))
        #expect(try await fake.device(speaker)?.connected == true)
    }

    @Test("a speaker that is off fails with page-timeout, explained")
    func pageTimeout() async throws {
        let fake = makeWorld()
        await fake.setBehaviour(.fail(FakeBlueZClient.pageTimeout), for: speaker)
        await #expect {
            try await fake.connect(speaker)
        } throws: { error in
            (error as? BlueZClientError)?.bluezError?.connectionFailure?.reason == .pageTimeout
        }
    }

    @Test("a hanging connect ends when the caller cancels")
    func hangIsCancellable() async throws {
        let fake = makeWorld()
        await fake.setBehaviour(.hang, for: speaker)
        let attempt = Task { try await fake.connect(speaker) }
        while await fake.calls.isEmpty { await Task.yield() }
        attempt.cancel()
        await #expect(throws: CancellationError.self) { try await attempt.value }
    }

    @Test("an rfkill-blocked adapter refuses to power on with a clear error")
    func blocked() async throws {
        let fake = makeWorld()
        await fake.blockAdapter(named: "hci0")
        await #expect(throws: BlueZClientError.adapterBlocked(name: "hci0")) { try await fake.powerOn(adapterAddress) }
        #expect(try await fake.defaultAdapter().isBlocked)
    }

    @Test("bluetoothd restart is announced, then what went with it, and the world comes back")
    func restart() async throws {
        let fake = makeWorld()
        var events = fake.events().makeAsyncIterator()
        await fake.stopBluetoothd()
        #expect(await events.next() == .bluetoothdVanished)
        #expect(await events.next() == .deviceRemoved(speaker))
        #expect(await events.next() == .adapterRemoved(name: "hci0", address: adapterAddress))
        await #expect(throws: BlueZClientError.bluetoothdNotRunning) { try await fake.adapters() }
        let hci1 = Adapter(name: "hci1", address: adapterAddress, powered: true)
        await fake.startBluetoothd(adapters: [hci1], devices: [])
        #expect(await events.next() == .bluetoothdAppeared)
        #expect(await events.next() == .adapterAdded(hci1))
        #expect(await events.next() == .bluetoothdRestarted)
        #expect(try await fake.defaultAdapter().name == "hci1")
    }

    @Test("removing an adapter removes its devices first, then the adapter")
    func removeAdapter() async throws {
        let fake = makeWorld()
        var events = fake.events().makeAsyncIterator()
        await fake.removeAdapter(named: "hci0")
        #expect(await events.next() == .deviceRemoved(speaker))
        #expect(await events.next() == .adapterRemoved(name: "hci0", address: adapterAddress))
        await #expect(throws: BlueZClientError.noAdapter) { try await fake.defaultAdapter() }
    }

    @Test("the speaker ending the link is reported with BlueZ's reason")
    func remoteDisconnect() async throws {
        let fake = makeWorld()
        try await fake.connect(speaker)
        var events = fake.events().makeAsyncIterator()
        await fake.dropConnection(speaker, reason: .remote)
        _ = await events.next()
        #expect(await events.next() == .disconnected(speaker, .remote))
    }

    @Test("pair, trust, discover and forget follow BlueZ's rules")
    func lifecycle() async throws {
        let stranger = try BluetoothAddress("AA:BB:CC:DD:EE:FF")
        let fake = makeWorld()
        try await fake.powerOn(adapterAddress)
        try await fake.startDiscovery(on: adapterAddress, filter: .audioSinks)
        #expect(try await fake.defaultAdapter().discovering)
        await fake.addDevice(Device(address: stranger, name: "Boom", icon: "audio-card"))
        try await fake.pair(stranger)
        await #expect(throws: BlueZClientError.self) { try await fake.pair(stranger) }
        try await fake.setTrusted(stranger, true)
        try await fake.stopDiscovery(on: adapterAddress)
        #expect(try await fake.device(stranger)?.trusted == true)
        #expect(try await fake.audioSinkCandidates().map(\.address).contains(stranger))
        try await fake.removeDevice(stranger)
        await #expect(throws: BlueZClientError.unknownDevice(stranger)) { try await fake.connect(stranger) }
        await #expect(throws: BlueZClientError.self) { try await fake.disconnect(speaker) }
    }

    @Test("a per-device stream sees only that speaker's events")
    func perDeviceEvents() async throws {
        let other = try BluetoothAddress("AA:BB:CC:DD:EE:FF")
        let fake = makeWorld()
        await fake.addDevice(Device(address: other, name: "Boom", icon: "audio-card"))
        var mine = fake.events(for: speaker).makeAsyncIterator()
        try await fake.connect(other)
        try await fake.connect(speaker)
        guard case .deviceChanged(let device)? = await mine.next() else { Issue.record("expected a change"); return }
        #expect(device.address == speaker)
        #expect(await mine.next() == .connected(speaker))
    }

    @Test("scan-and-pick candidates: definite speakers first, then by signal strength")
    func candidateOrder() async throws {
        let weak = try BluetoothAddress("AA:00:00:00:00:01")
        let strong = try BluetoothAddress("AA:00:00:00:00:02")
        let headsetOnly = try BluetoothAddress("AA:00:00:00:00:03")
        let phone = try BluetoothAddress("AA:00:00:00:00:04")
        let fake = FakeBlueZClient(adapters: [], devices: [
            Device(address: headsetOnly, uuids: [BlueZUUID.handsfree], rssi: -30),
            Device(address: weak, deviceClass: 0x240414, rssi: -80),
            Device(address: phone, icon: "phone", uuids: [BlueZUUID.a2dpSink], rssi: -20),
            Device(address: strong, uuids: [BlueZUUID.a2dpSink], rssi: -50),
        ])
        #expect(try await fake.audioSinkCandidates().map(\.address) == [strong, weak, headsetOnly])
    }
}
