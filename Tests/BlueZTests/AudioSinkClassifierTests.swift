@testable import BlueZ
import Testing

/// Real devices as BlueZ reports them (Class, Icon, UUIDs as seen in `bluetoothctl info`).
struct ObservedDevice: CustomTestStringConvertible, Sendable {
    let label: String
    let deviceClass: UInt32?
    let icon: String?
    let uuids: [String]
    let offered: Bool
    var testDescription: String { label }
}

private func uuid16(_ value: String) -> String { "0000\(value)-0000-1000-8000-00805f9b34fb" }

private let observedDevices: [ObservedDevice] = [
    .init(label: "JBL Flip 5 (loudspeaker, A2DP sink)", deviceClass: 0x240414, icon: "audio-card",
          uuids: [uuid16("110b"), uuid16("110c"), uuid16("110e"), uuid16("111e")], offered: true),
    .init(label: "UE Boom seen in inquiry before SDP (class only)", deviceClass: 0x240414, icon: "audio-card",
          uuids: [], offered: true),
    .init(label: "Bose SoundLink Mini II (headphones class)", deviceClass: 0x240418, icon: "audio-headphones",
          uuids: [uuid16("110b"), uuid16("111e")], offered: true),
    .init(label: "Sony WH-1000XM4 (wearable headset)", deviceClass: 0x240404, icon: "audio-headset",
          uuids: [uuid16("110b"), uuid16("1108"), uuid16("111e")], offered: true),
    .init(label: "Car kit (car audio)", deviceClass: 0x240420, icon: "audio-card", uuids: [], offered: true),
    .init(label: "Denon receiver (hi-fi audio)", deviceClass: 0x240428, icon: "audio-card", uuids: [], offered: true),
    .init(label: "Portable radio (portable audio)", deviceClass: 0x24041C, icon: "audio-card", uuids: [], offered: true),
    .init(label: "LE earbuds with only an icon", deviceClass: nil, icon: "audio-headphones", uuids: [], offered: true),
    .init(label: "Mono headset with only hands-free", deviceClass: nil, icon: nil, uuids: [uuid16("111e")], offered: true),
    .init(label: "Pixel phone advertising A2DP source, HFP gateway and A2DP sink", deviceClass: 0x5A020C,
          icon: "phone", uuids: [uuid16("110a"), uuid16("110b"), uuid16("111f"), uuid16("1112")], offered: false),
    .init(label: "python-dbusmock's paired phone", deviceClass: 5_898_764, icon: "phone",
          uuids: [uuid16("1105"), uuid16("110a"), uuid16("110c"), uuid16("1112"), uuid16("111f")], offered: false),
    .init(label: "Logitech keyboard", deviceClass: 0x000540, icon: "input-keyboard", uuids: [uuid16("1124")], offered: false),
    .init(label: "Bluetooth mouse", deviceClass: 0x002580, icon: "input-mouse", uuids: [uuid16("1124")], offered: false),
    .init(label: "Laptop running PipeWire (computer advertising A2DP sink)", deviceClass: 0x7A010C, icon: "computer",
          uuids: [uuid16("110a"), uuid16("110b")], offered: false),
    .init(label: "LE phone known only by icon", deviceClass: nil, icon: "phone", uuids: [uuid16("110b")], offered: false),
    .init(label: "USB microphone (audio/video microphone)", deviceClass: 0x240410, icon: "audio-card", uuids: [], offered: false),
    .init(label: "Phone known only by its A2DP source", deviceClass: nil, icon: nil, uuids: [uuid16("110a")], offered: false),
    .init(label: "Fitness band (wearable, no audio)", deviceClass: 0x000704, icon: nil, uuids: [uuid16("180d")], offered: false),
]

@Suite("Audio-sink classification")
struct AudioSinkClassifierTests {
    @Test("only speakers, headphones and car audio are offered; phones, keyboards, mice and computers never",
          arguments: observedDevices)
    func observed(device: ObservedDevice) {
        let verdict = AudioSinkClassifier.classify(.init(uuids: device.uuids, deviceClass: device.deviceClass, icon: device.icon))
        #expect(verdict.isOffered == device.offered, "\(device.label): \(verdict)")
    }

    @Test("the A2DP sink UUID is strong evidence; a hands-free profile alone is weaker")
    func strength() {
        let sink = AudioSinkClassifier.classify(.init(uuids: [BlueZUUID.a2dpSink.uppercased()]))
        guard case .audioSink = sink else { Issue.record("expected audioSink, got \(sink)"); return }
        let headset = AudioSinkClassifier.classify(.init(uuids: [BlueZUUID.handsfree]))
        guard case .possibleAudioSink = headset else { Issue.record("expected possibleAudioSink, got \(headset)"); return }
    }

    @Test("a device BlueZ knows nothing about yet is not offered until it learns more")
    func unknownDevice() {
        #expect(AudioSinkClassifier.classify(.init(uuids: [], deviceClass: 0, icon: "")) == .unknown)
    }

    @Test("the class of device is decoded by the Assigned Numbers layout")
    func classOfDevice() {
        let flip = ClassOfDevice(rawValue: 0x240414)
        #expect(flip.majorClass == 0x04)
        #expect(flip.minorClass == 0x05)
        #expect(flip.hasAudioService)
        #expect(flip.hasRenderingService)
    }

    @Test("a Device reports its verdict from its own properties")
    func deviceVerdict() throws {
        let device = Device(address: try BluetoothAddress("11:22:33:44:55:66"), name: "Flip", deviceClass: 0x240414)
        #expect(device.audioSink.isOffered)
        #expect(device.displayName == "Flip")
    }
}
