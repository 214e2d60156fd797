/// The Bluetooth Class of Device (the `Class` property), decoded as the Assigned Numbers define it.
///
/// Layout: bits 2–7 minor class, bits 8–12 major class, bits 13–23 service classes.
public struct ClassOfDevice: Equatable, Hashable, Sendable {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public var majorClass: UInt32 { (rawValue >> 8) & 0x1F }
    public var minorClass: UInt32 { (rawValue >> 2) & 0x3F }
    /// The Audio service-class bit (21) and the Rendering bit (18).
    public var hasAudioService: Bool { rawValue & (1 << 21) != 0 }
    public var hasRenderingService: Bool { rawValue & (1 << 18) != 0 }

    static let audioVideoMajor: UInt32 = 0x04

    /// A name for a major class that can never be a speaker.
    var nonAudioMajorClassName: String? {
        switch majorClass {
        case 0x01: return "computer"
        case 0x02: return "phone"
        case 0x03: return "network access point"
        case 0x05: return "peripheral (keyboard, mouse, joystick)"
        case 0x06: return "imaging (printer, scanner, camera)"
        case 0x08: return "toy"
        case 0x09: return "health device"
        default: return nil
        }
    }

    /// Audio/video minor classes that play sound to a listener.
    var sinkMinorClassName: String? {
        guard majorClass == Self.audioVideoMajor else { return nil }
        switch minorClass {
        case 0x01: return "wearable headset"
        case 0x02: return "hands-free device"
        case 0x05: return "loudspeaker"
        case 0x06: return "headphones"
        case 0x07: return "portable audio"
        case 0x08: return "car audio"
        case 0x0A: return "hi-fi audio device"
        case 0x0F: return "video display and loudspeaker"
        default: return nil
        }
    }

    /// Audio/video minor classes that are not something to play to (a microphone, a camera).
    var nonSinkAudioVideoMinorName: String? {
        guard majorClass == Self.audioVideoMajor else { return nil }
        switch minorClass {
        case 0x04: return "microphone"
        case 0x09: return "set-top box"
        case 0x0B: return "VCR"
        case 0x0C: return "video camera"
        case 0x0D: return "camcorder"
        case 0x0E: return "video monitor"
        case 0x12: return "gaming toy"
        default: return nil
        }
    }
}

/// Service UUIDs speakerd cares about (Bluetooth Assigned Numbers, 16-bit values in the base UUID).
public enum BlueZUUID {
    /// A2DP Audio Sink (0x110B): the device can receive our audio stream.
    public static let a2dpSink = "0000110b-0000-1000-8000-00805f9b34fb"
    /// A2DP Audio Source (0x110A): phones and computers.
    public static let a2dpSource = "0000110a-0000-1000-8000-00805f9b34fb"
    /// Hands-Free unit (0x111E): headsets and car kits.
    public static let handsfree = "0000111e-0000-1000-8000-00805f9b34fb"
    /// Hands-Free Audio Gateway (0x111F): phones.
    public static let handsfreeAudioGateway = "0000111f-0000-1000-8000-00805f9b34fb"
    /// Headset (0x1108).
    public static let headset = "00001108-0000-1000-8000-00805f9b34fb"
    /// Headset Audio Gateway (0x1112): phones.
    public static let headsetAudioGateway = "00001112-0000-1000-8000-00805f9b34fb"
}
