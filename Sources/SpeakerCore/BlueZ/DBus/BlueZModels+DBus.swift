import DBus
/// How `Adapter` and `Device` are read off the bus: each property declared once, in one place.
extension Adapter {
    static let properties = BlueZPropertyTable<Adapter>(interface: BlueZInterface.adapter, [
        .custom("Address", signature: "s",
                apply: { adapter, value throws(DBusError) in adapter.address = try? BluetoothAddress(try value.as(String.self)) },
                invalidate: { $0.address = nil }),
        .optional("Alias", \.alias),
        .value("Powered", \.powered, default: false),
        .custom("PowerState", signature: "s",
                apply: { adapter, value throws(DBusError) in adapter.powerState = PowerState(try value.as(String.self)) },
                invalidate: { $0.powerState = nil }),
        .value("Discovering", \.discovering, default: false),
        .value("Discoverable", \.discoverable, default: false),
        .value("Pairable", \.pairable, default: false),
        .value("UUIDs", \.uuids, default: []),
    ])

    /// An adapter from its object path and `org.bluez.Adapter1` properties.
    init(path: DBusObjectPath, properties: [String: DBusValue]) {
        self.init(name: BlueZPaths.lastElement(of: path), address: nil)
        Self.properties.apply(properties, to: &self)
    }
}

extension Device {
    static let properties = BlueZPropertyTable<Device>(interface: BlueZInterface.device, [
        // Address is the key: it is decoded before the table runs (see init below).
        .optional("Name", \.name),
        .optional("Alias", \.alias),
        .optional("Icon", \.icon),
        .optional("Class", \.deviceClass),
        .optional("Appearance", \.appearance),
        .value("Paired", \.paired, default: false),
        .value("Bonded", \.bonded, default: false),
        .value("Trusted", \.trusted, default: false),
        .value("Blocked", \.blocked, default: false),
        .value("Connected", \.connected, default: false),
        .value("ServicesResolved", \.servicesResolved, default: false),
        .value("LegacyPairing", \.legacyPairing, default: false),
        .value("UUIDs", \.uuids, default: []),
        .optional("RSSI", \.rssi),
        .optional("TxPower", \.txPower),
        .custom("Adapter", signature: "o",
                apply: { device, value throws(DBusError) in
                    device.adapterName = BlueZPaths.lastElement(of: try value.as(DBusObjectPath.self))
                },
                invalidate: { _ in }),
        .custom("ManufacturerData", signature: "a{qv}",
                apply: { device, value throws(DBusError) in
                    let entries = try value.as([UInt16: DBusValue].self)
                    var data: [UInt16: [UInt8]] = [:]
                    for (company, bytes) in entries { data[company] = try bytes.as([UInt8].self, at: "company \(company)") }
                    device.manufacturerData = data
                },
                invalidate: { $0.manufacturerData = [:] }),
    ])

    /// A device from its object path and `org.bluez.Device1` properties; nil without a valid
    /// `Address`, since a device we cannot name by address is one we cannot find again.
    init?(path: DBusObjectPath, properties: [String: DBusValue]) {
        guard let text = try? properties["Address"]?.as(String.self), let address = try? BluetoothAddress(text) else {
            return nil
        }
        self.init(address: address, adapterName: BlueZPaths.adapterName(ofDevice: path))
        Self.properties.apply(properties, to: &self)
    }
}
