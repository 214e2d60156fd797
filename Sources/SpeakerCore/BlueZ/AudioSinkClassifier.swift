/// Decides whether a Bluetooth device can play our audio, from what BlueZ tells us about it.
///
/// Why three sources: during discovery a speaker often shows only its Class of Device (from the
/// inquiry response) and an Icon derived from it; the service UUIDs arrive only after an SDP search
/// or from EIR data. A phone advertises A2DP *source*, HFP *gateway* and sometimes even A2DP sink,
/// so the device's own major class vetoes it: a phone, keyboard, mouse or computer is never a speaker.
public enum AudioSinkClassifier {
    /// How sure we are that a device is a speaker (or headphones) we can stream to.
    public enum Verdict: Equatable, Sendable, CustomStringConvertible {
        /// It says it is an A2DP sink, or an audio device of a speaker-like kind.
        case audioSink(because: String)
        /// Only weaker signs (a hands-free/headset profile, an audio icon): offered, ranked lower.
        case possibleAudioSink(because: String)
        /// It is something else (phone, computer, input device, a source of audio).
        case notAudioSink(because: String)
        /// BlueZ knows nothing yet (no class, icon or UUIDs): not offered until it learns more.
        case unknown

        /// Whether the scan-and-pick list should offer it.
        public var isOffered: Bool {
            switch self {
            case .audioSink, .possibleAudioSink: return true
            case .notAudioSink, .unknown: return false
            }
        }

        /// Strong evidence (A2DP sink or a speaker-like class), as opposed to a weak sign.
        public var isDefinite: Bool {
            if case .audioSink = self { return true }
            return false
        }

        public var description: String {
            switch self {
            case .audioSink(let why): return "audio sink (\(why))"
            case .possibleAudioSink(let why): return "possible audio sink (\(why))"
            case .notAudioSink(let why): return "not an audio sink (\(why))"
            case .unknown: return "unknown kind of device"
            }
        }
    }

    /// The facts the classifier reads; all optional because BlueZ fills them in over time.
    public struct Evidence: Equatable, Sendable {
        public var uuids: Set<String>
        public var deviceClass: UInt32?
        public var icon: String?

        public init(uuids: some Sequence<String> = [], deviceClass: UInt32? = nil, icon: String? = nil) {
            self.uuids = Set(uuids.map { $0.lowercased() })
            self.deviceClass = deviceClass
            self.icon = icon
        }
    }

    public static func classify(_ evidence: Evidence) -> Verdict {
        let deviceClass = evidence.deviceClass.flatMap { $0 == 0 ? nil : ClassOfDevice(rawValue: $0) }
        let icon = evidence.icon.flatMap { $0.isEmpty ? nil : $0 }

        // 1. Vetoes: what the device says it is beats the profiles it happens to offer.
        if let deviceClass, let other = deviceClass.nonAudioMajorClassName {
            return .notAudioSink(because: "its class of device is \(other)")
        }
        if let icon, let other = nonAudioIcons[icon] {
            return .notAudioSink(because: "BlueZ shows it as \(other)")
        }
        if let deviceClass, deviceClass.majorClass == ClassOfDevice.audioVideoMajor,
           let kind = deviceClass.nonSinkAudioVideoMinorName {
            return .notAudioSink(because: "it is an audio/video \(kind)")
        }

        // 2. Strong signs.
        if evidence.uuids.contains(BlueZUUID.a2dpSink) {
            return .audioSink(because: "it offers the A2DP audio sink profile")
        }
        if let deviceClass, let kind = deviceClass.sinkMinorClassName {
            return .audioSink(because: "its class of device is audio/video \(kind)")
        }

        // 3. Weak signs: a headset-only profile or an audio icon.
        if evidence.uuids.contains(BlueZUUID.handsfree) || evidence.uuids.contains(BlueZUUID.headset) {
            return .possibleAudioSink(because: "it offers a hands-free or headset audio profile")
        }
        if let icon, audioIcons.contains(icon) {
            return .possibleAudioSink(because: "BlueZ shows it as \(icon)")
        }

        // 4. Nothing that says "speaker": if it told us anything at all, that is a no.
        if evidence.uuids.contains(BlueZUUID.a2dpSource) || evidence.uuids.contains(BlueZUUID.handsfreeAudioGateway)
            || evidence.uuids.contains(BlueZUUID.headsetAudioGateway) {
            return .notAudioSink(because: "it is a source of audio (like a phone), not a sink")
        }
        if deviceClass != nil || icon != nil || !evidence.uuids.isEmpty {
            return .notAudioSink(because: "it offers no audio sink profile")
        }
        return .unknown
    }

    /// BlueZ's icons (derived from class of device / appearance) for things that are not speakers.
    static let nonAudioIcons: [String: String] = [
        "phone": "a phone", "computer": "a computer", "input-keyboard": "a keyboard",
        "input-mouse": "a mouse", "input-gaming": "a game controller", "input-tablet": "a tablet",
        "modem": "a modem", "network-wireless": "a network device", "printer": "a printer",
        "camera-photo": "a camera", "camera-video": "a video camera", "video-display": "a display",
        "multimedia-player": "a media player",
    ]

    /// Icons BlueZ gives audio/video devices we could stream to.
    static let audioIcons: Set<String> = ["audio-card", "audio-headphones", "audio-headset"]
}
