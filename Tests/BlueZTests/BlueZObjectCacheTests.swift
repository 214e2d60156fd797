@testable import BlueZ
@testable import DBus
import Testing

/// The cache on its own: what BlueZ's signals mean, without a bus.
@Suite("BlueZ object cache")
struct BlueZObjectCacheTests {
    let speaker = try! BluetoothAddress("11:22:33:44:55:66")
    let hci0: DBusObjectPath = "/org/bluez/hci0"
    let hci1: DBusObjectPath = "/org/bluez/hci1"

    func adapterProperties(_ address: String, powered: Bool = true) -> [String: DBusValue] {
        ["Address": .string(address), "Powered": .bool(powered), "Alias": .string("box")]
    }

    func deviceProperties(adapter: DBusObjectPath, connected: Bool = false) -> [String: DBusValue] {
        ["Address": .string(speaker.description), "Name": .string("Flip"), "Adapter": .objectPath(adapter),
         "Connected": .bool(connected), "RSSI": .int16(-70), "Class": .uint32(0x240414)]
    }

    func devicePath(_ adapter: DBusObjectPath) -> DBusObjectPath { try! adapter.appending(speaker.devicePathElement) }

    func loaded() async -> BlueZObjectCache {
        let cache = BlueZObjectCache()
        _ = await cache.load([
            hci0: [BlueZInterface.adapter: adapterProperties("00:01:02:03:04:05")],
            devicePath(hci0): [BlueZInterface.device: deviceProperties(adapter: hci0)],
        ])
        return cache
    }

    @Test("GetManagedObjects becomes typed adapters and devices, announced adapter first")
    func load() async {
        let cache = BlueZObjectCache()
        let update = await cache.load([
            hci0: [BlueZInterface.adapter: adapterProperties("00:01:02:03:04:05")],
            devicePath(hci0): [BlueZInterface.device: deviceProperties(adapter: hci0)],
        ])
        guard update.events.count == 2, case .adapterAdded(let adapter) = update.events[0],
              case .deviceAdded(let device) = update.events[1] else {
            Issue.record("unexpected events \(update.events)")
            return
        }
        #expect(adapter.name == "hci0")
        #expect(device.address == speaker)
        #expect(device.audioSink.isOffered)
        #expect(await cache.path(ofDevice: speaker) == devicePath(hci0))
    }

    @Test("a Disconnected reason is attached to the Connected=false that follows it")
    func disconnectReason() async {
        let cache = await loaded()
        _ = await cache.propertiesChanged(at: devicePath(hci0), interface: BlueZInterface.device, changed: ["Connected": .bool(true)], invalidated: [])
        await cache.disconnectedSignal(at: devicePath(hci0), reason: .timeout)
        let update = await cache.propertiesChanged(at: devicePath(hci0), interface: BlueZInterface.device, changed: ["Connected": .bool(false)], invalidated: [])
        #expect(update.events.last == .disconnected(speaker, .timeout))
    }

    @Test("RSSI-only changes are noise for the coalescer; a name change is an event at once")
    func noise() async {
        let cache = await loaded()
        let rssi = await cache.propertiesChanged(at: devicePath(hci0), interface: BlueZInterface.device, changed: ["RSSI": .int16(-50)], invalidated: [])
        #expect(rssi.events.isEmpty)
        #expect(rssi.noisyDevices == [speaker])
        let alias = await cache.propertiesChanged(at: devicePath(hci0), interface: BlueZInterface.device, changed: ["Alias": .string("Kitchen")], invalidated: [])
        #expect(alias.noisyDevices.isEmpty)
        guard case .deviceChanged(let device)? = alias.events.first else { Issue.record("no change event"); return }
        #expect(device.displayName == "Kitchen")
        #expect(device.rssi == -50)
    }

    @Test("an invalidated property falls back to BlueZ's default")
    func invalidation() async {
        let cache = await loaded()
        _ = await cache.propertiesChanged(at: devicePath(hci0), interface: BlueZInterface.device, changed: [:], invalidated: ["RSSI", "Name"])
        let device = await cache.device(at: devicePath(hci0))
        #expect(device?.rssi == nil)
        #expect(device?.name == nil)
    }

    @Test("removing an adapter removes its devices even when BlueZ does not say so")
    func adapterRemovedTakesDevices() async {
        let cache = await loaded()
        let update = await cache.interfacesRemoved(at: hci0, [BlueZInterface.adapter])
        #expect(update.events == [.deviceRemoved(speaker), .adapterRemoved(name: "hci0", address: try! BluetoothAddress("00:01:02:03:04:05"))])
        #expect(await cache.devices.isEmpty)
        #expect(await cache.path(ofDevice: speaker) == nil)
    }

    @Test("a device whose adapter is gone is not shown; it reappears under hci1 by address")
    func orphansAndReplug() async {
        let cache = BlueZObjectCache()
        _ = await cache.load([devicePath(hci0): [BlueZInterface.device: deviceProperties(adapter: hci0)]])
        #expect(await cache.devices.isEmpty)
        _ = await cache.interfacesAdded(at: hci1, [BlueZInterface.adapter: adapterProperties("00:01:02:03:04:05")])
        let update = await cache.interfacesAdded(at: devicePath(hci1), [BlueZInterface.device: deviceProperties(adapter: hci1, connected: true)])
        #expect(update.events == [.deviceAdded(Device(address: speaker, adapterName: "hci1", name: "Flip", deviceClass: 0x240414, connected: true, rssi: -70)), .connected(speaker)])
        #expect(await cache.path(ofDevice: speaker) == devicePath(hci1))
    }

    @Test("with the speaker seen by two adapters, the powered adapter's copy is used")
    func twoAdapters() async {
        let cache = BlueZObjectCache()
        _ = await cache.load([
            hci0: [BlueZInterface.adapter: adapterProperties("00:01:02:03:04:05", powered: false)],
            hci1: [BlueZInterface.adapter: adapterProperties("00:01:02:03:04:06", powered: true)],
            devicePath(hci0): [BlueZInterface.device: deviceProperties(adapter: hci0)],
            devicePath(hci1): [BlueZInterface.device: deviceProperties(adapter: hci1)],
        ])
        #expect(await cache.path(ofDevice: speaker) == devicePath(hci1))
    }

    @Test("a mistyped property is skipped and noted; the device is still there")
    func mistyped() async {
        let cache = BlueZObjectCache()
        var properties = deviceProperties(adapter: hci0)
        properties["ManufacturerData"] = .array(element: "a{qv}", [])
        properties["Paired"] = .string("yes")
        _ = await cache.load([
            hci0: [BlueZInterface.adapter: adapterProperties("00:01:02:03:04:05")],
            devicePath(hci0): [BlueZInterface.device: properties],
        ])
        #expect(await cache.devices.map(\.address) == [speaker])
        let problems = await cache.decodingProblems.map(\.description)
        #expect(problems.contains { $0.contains("ManufacturerData") })
        #expect(problems.contains { $0.contains("Paired") })
    }

    @Test("a device without a valid address is ignored rather than crashing the cache")
    func badAddress() async {
        let cache = BlueZObjectCache()
        var properties = deviceProperties(adapter: hci0)
        properties["Address"] = .string("not-an-address")
        _ = await cache.load([
            hci0: [BlueZInterface.adapter: adapterProperties("00:01:02:03:04:05")],
            devicePath(hci0): [BlueZInterface.device: properties],
        ])
        #expect(await cache.devices.isEmpty)
    }

    @Test("bluetoothd vanishing drops everything and says the speaker is no longer connected")
    func clear() async {
        let cache = await loaded()
        _ = await cache.propertiesChanged(at: devicePath(hci0), interface: BlueZInterface.device, changed: ["Connected": .bool(true)], invalidated: [])
        let update = await cache.clear()
        #expect(update.events.prefix(2) == [.disconnected(speaker, .unspecified), .deviceRemoved(speaker)])
        #expect(await cache.adapters.isEmpty)
    }

    @Test("manufacturer data a{qv} of byte arrays is decoded")
    func manufacturerData() async {
        let cache = await loaded()
        let value = DBusValue.dictionary(key: "q", value: "v", [DBusDictionaryEntry(key: .uint16(76), value: .variant(.array(element: "y", [.byte(1), .byte(2)])))])
        _ = await cache.propertiesChanged(at: devicePath(hci0), interface: BlueZInterface.device, changed: ["ManufacturerData": value], invalidated: [])
        #expect(await cache.device(at: devicePath(hci0))?.manufacturerData == [76: [1, 2]])
    }
}
