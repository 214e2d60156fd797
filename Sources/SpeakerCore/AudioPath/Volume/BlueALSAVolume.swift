import DBus
/// BlueALSA's `org.bluealsa.PCM1.Volume` in percent.
///
/// The property has two shapes, and both are in use: bluez-alsa 4.0 and 4.1 (Debian 12's
/// `bluez-alsa-utils`) publish a `q`, the left channel in the high byte and the right in the low
/// one; 4.2 and later publish an `ay`, a byte per channel in `ChannelMap` order. In every byte
/// bit 7 mutes the channel and bits 0…6 are the level, 0…127 for A2DP. A value is written back in
/// the shape it was read in, with the mute bits kept as the user (or the speaker) left them.
enum BlueALSAVolume {
    /// The A2DP level that is 100 %.
    static let full = 127

    /// The loudest channel's level in percent; nil when the value has neither shape.
    static func percent(of value: DBusValue) -> Int? {
        guard let levels = channelBytes(value)?.map({ Int($0 & 0x7F) }), let loudest = levels.max() else { return nil }
        return (loudest * 100 + full / 2) / full
    }

    /// `value` with every channel's level set to `percent`, in `value`'s own shape; nil when the
    /// value has neither shape.
    static func setting(_ value: DBusValue, to percent: Int) -> DBusValue? {
        let level = UInt8((min(max(percent, 0), 100) * full + 50) / 100)
        guard let bytes = channelBytes(value) else { return nil }
        let changed = bytes.map { ($0 & 0x80) | level }
        switch value.unwrappingVariants {
        case .uint16:
            guard changed.count == 2 else { return nil }
            return .uint16(UInt16(changed[0]) << 8 | UInt16(changed[1]))
        default:
            return .array(element: "y", changed.map { .byte($0) })
        }
    }

    /// The per-channel bytes of either shape.
    private static func channelBytes(_ value: DBusValue) -> [UInt8]? {
        switch value.unwrappingVariants {
        case .uint16(let both): return [UInt8(both >> 8), UInt8(both & 0xFF)]
        case .array(_, let elements):
            let bytes = elements.compactMap { if case .byte(let byte) = $0 { byte } else { nil } }
            return bytes.count == elements.count && !bytes.isEmpty ? bytes : nil
        default: return nil
        }
    }
}

/// The volume of one BlueALSA PCM, read and written through `org.freedesktop.DBus.Properties`.
struct BlueALSAPCMVolume: SpeakerVolume {
    let connection: DBusConnection
    let service: String
    let pcm: DBusObjectPath
    let callTimeout: Duration

    static let properties = "org.freedesktop.DBus.Properties"
    static let property = "Volume"

    var deviceDescription: String { "BlueALSA PCM \(pcm.rawValue)" }

    func percent() async throws(SpeakerVolumeError) -> Int {
        let value = try await current()
        guard let percent = BlueALSAVolume.percent(of: value) else { throw unexpected(value) }
        return percent
    }

    func setPercent(_ percent: Int) async throws(SpeakerVolumeError) -> Int {
        await preferTheSpeakersOwnVolume()
        let value = try await current()
        guard let changed = BlueALSAVolume.setting(value, to: percent) else { throw unexpected(value) }
        do {
            _ = try await connection.call(destination: service, path: pcm, interface: Self.properties, method: "Set",
                                          arguments: [.string(BlueALSAPCM.interface), .string(Self.property), .variant(changed)],
                                          timeout: callTimeout)
        } catch {
            throw .failed(device: deviceDescription, reason: error.description)
        }
        return try await self.percent()
    }

    /// BlueALSA started without `--a2dp-volume` (Debian's unit) scales the samples itself
    /// (`SoftVolume` true) and tells the speaker nothing: a low volume then wastes the speaker's
    /// range on quiet samples at full amplification. Where the speaker takes AVRCP absolute volume
    /// (BlueZ shows a `Volume` on its transport, as real bluetoothd does once the speaker has said
    /// it supports it), the PCM is switched to native volume first, so BlueALSA hands the level to
    /// BlueZ, which sends it to the speaker. Found by the real-Bluetooth scenario `avrcp-volume`.
    /// Best-effort: where BlueZ cannot be asked, or the speaker takes no absolute volume, the
    /// software volume stays, which still works.
    private func preferTheSpeakersOwnVolume() async {
        guard case .bool(true)? = try? await property(Self.softVolume),
              case let .objectPath(device)? = try? await property(BlueALSAPCM.Property.device),
              await speakerTakesAbsoluteVolume(device) else { return }
        _ = try? await connection.call(destination: service, path: pcm, interface: Self.properties, method: "Set",
                                       arguments: [.string(BlueALSAPCM.interface), .string(Self.softVolume), .variant(.bool(false))],
                                       timeout: callTimeout)
    }

    static let softVolume = "SoftVolume"
    static let bluez = "org.bluez"
    static let transportInterface = "org.bluez.MediaTransport1"

    /// Whether one of BlueZ's media transports below `device` has a `Volume` (BlueZ publishes it
    /// only for a speaker that takes absolute volume).
    private func speakerTakesAbsoluteVolume(_ device: DBusObjectPath) async -> Bool {
        guard let reply = try? await connection.call(destination: Self.bluez, path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                                     method: "GetManagedObjects", timeout: callTimeout),
              case let .dictionary(_, _, objects)? = reply.first?.unwrappingVariants else { return false }
        return objects.contains { entry in
            guard case let .objectPath(path) = entry.key, path.rawValue.hasPrefix(device.rawValue + "/") else { return false }
            return BlueALSADBusPCMSource.interfaces(entry.value)[Self.transportInterface]?["Volume"] != nil
        }
    }

    /// One `org.bluealsa.PCM1` property of the PCM; nil when the reply holds nothing.
    private func property(_ name: String) async throws(DBusError) -> DBusValue? {
        try await connection.call(destination: service, path: pcm, interface: Self.properties, method: "Get",
                                  arguments: [.string(BlueALSAPCM.interface), .string(name)], timeout: callTimeout)
            .first?.unwrappingVariants
    }

    private func current() async throws(SpeakerVolumeError) -> DBusValue {
        let value: DBusValue?
        do {
            value = try await property(Self.property)
        } catch {
            throw .failed(device: deviceDescription, reason: error.description)
        }
        guard let value else { throw .failed(device: deviceDescription, reason: "Get(Volume) returned nothing") }
        return value
    }

    private func unexpected(_ value: DBusValue) -> SpeakerVolumeError {
        .failed(device: deviceDescription, reason: "its Volume is a '\(value.signature.rawValue)', not the 'q' or 'ay' BlueALSA documents")
    }
}
