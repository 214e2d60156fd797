@testable import AudioPath
@testable import BlueZ
import Foundation
@testable import PulseAudio
import Synchronization
import TestSupport
import Testing

/// A speaker that came back as a headset (HSP/HFP) instead of A2DP, the second complaint users
/// file most: its card on the sound server is switched to its A2DP profile, once per card, and
/// the path's reason says so.
@Suite("A speaker's card left in a headset profile is switched to A2DP, once")
struct HeadsetCardTests {
    static let speaker = try! BluetoothAddress("11:22:33:AA:BB:CC")
    static let flip = TargetSpeaker(address: speaker, name: "JBL Flip 5")
    static let builtIn = SoundServerSink(index: 0, name: "out", properties: ["device.bus": "pci"])

    /// PulseAudio's bluez5 card for the speaker, in `profile`.
    static func card(index: UInt32 = 3, profile: String, offers profiles: [String] = ["a2dp_sink", "headset_head_unit", "off"])
        -> SoundServerCard {
        SoundServerCard(index: index, name: "bluez_card.11_22_33_AA_BB_CC",
                        properties: ["device.bus": "bluetooth", "device.string": "11:22:33:AA:BB:CC"],
                        activeProfile: profile, availableProfiles: profiles)
    }

    /// The speaker's A2DP sink, which the card's switch brings.
    static let a2dpSink = SoundServerSink(index: 9, name: "bluez_sink.11_22_33_AA_BB_CC.a2dp_sink",
                                          properties: ["device.bus": "bluetooth", "device.string": "11:22:33:AA:BB:CC"],
                                          cardProfile: "a2dp_sink")

    /// Every switch asked for, and what the server answers (nil: switched).
    final class Switches: Sendable {
        let asked = Mutex<[(card: UInt32, profile: String)]>([])
        let answer: String?
        init(answer: String? = nil) { self.answer = answer }
        func record(_ card: UInt32, _ profile: String) -> String? {
            asked.withLock { $0.append((card, profile)) }
            return answer
        }
        var count: Int { asked.withLock { $0.count } }
    }

    @Test("a headset card gets one switch to its A2DP profile; the A2DP sink that follows makes the path ready; a new card (a reconnect) gets its own one")
    func switchedOnce() async {
        let (states, feed) = AsyncStream.makeStream(of: SoundServerState.self)
        let switches = Switches()
        var path = SoundServerBackend.follow(states, Self.flip, switchCard: { switches.record($0, $1) }).makeAsyncIterator()

        feed.yield(.sinks([Self.builtIn], cards: [Self.card(profile: "headset_head_unit")]))
        #expect(await path.next()?.state == .notReady(.noAudioDevice(
            "JBL Flip 5", "its card bluez_card.11_22_33_AA_BB_CC was in the headset profile headset_head_unit; speakerd switched it to a2dp_sink once")))
        #expect(switches.asked.withLock { $0.map(\.card) } == [3])
        #expect(switches.asked.withLock { $0.map(\.profile) } == ["a2dp_sink"])

        // The card falls back to the headset profile by itself: no second switch (no loop).
        feed.yield(.sinks([Self.builtIn], cards: [Self.card(profile: "a2dp_sink")]))
        #expect(await path.next()?.state == .notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet")))
        feed.yield(.sinks([Self.builtIn], cards: [Self.card(profile: "headset_head_unit")]))
        _ = await path.next()
        #expect(switches.count == 1, "a card that keeps falling back was switched again")

        feed.yield(.sinks([Self.builtIn, Self.a2dpSink], cards: [Self.card(profile: "a2dp_sink")]))
        #expect(await path.next()?.state.route?.description == "PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")

        feed.yield(.sinks([Self.builtIn], cards: [Self.card(index: 4, profile: "headset_head_unit")]))
        _ = await path.next()
        #expect(switches.asked.withLock { $0.map(\.card) } == [3, 4])
        feed.finish()
    }

    @Test("the switch stays in status's warnings once the A2DP sink made the path ready: one per card, gone with the card, and a reconnect's new card gets its own")
    func switchStaysAWarning() async {
        let (states, feed) = AsyncStream.makeStream(of: SoundServerState.self)
        let switches = Switches()
        var path = SoundServerBackend.follow(states, Self.flip, switchCard: { switches.record($0, $1) }).makeAsyncIterator()
        let warning = "JBL Flip 5: its card bluez_card.11_22_33_AA_BB_CC was in the headset profile headset_head_unit; speakerd switched it to a2dp_sink once"

        feed.yield(.sinks([Self.builtIn], cards: []))
        var report = await path.next()
        #expect(report?.warnings == [], "a warning before any card was switched")

        feed.yield(.sinks([Self.builtIn], cards: [Self.card(profile: "headset_head_unit")]))
        report = await path.next()
        #expect(report?.state == .notReady(.noAudioDevice(
            "JBL Flip 5", "its card bluez_card.11_22_33_AA_BB_CC was in the headset profile headset_head_unit; speakerd switched it to a2dp_sink once")))
        #expect(report?.warnings == [warning])

        feed.yield(.sinks([Self.builtIn, Self.a2dpSink], cards: [Self.card(profile: "a2dp_sink")]))
        report = await path.next()
        #expect(report?.state.route?.description == "PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")
        #expect(report?.warnings == [warning], "once the A2DP sink came, nothing says the speaker had come up as a headset")

        // The card falls back to the headset profile (no second switch): still one warning.
        feed.yield(.sinks([Self.builtIn], cards: [Self.card(profile: "headset_head_unit")]))
        report = await path.next()
        #expect(report?.warnings == [warning])
        #expect(switches.count == 1)

        // The speaker disconnects: its card goes, and the warning with it.
        feed.yield(.sinks([Self.builtIn], cards: []))
        report = await path.next()
        #expect(report?.state == .notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet")))
        #expect(report?.warnings == [], "a warning outlived its card")

        // It reconnects as a headset again: the new card is switched and reported, once.
        feed.yield(.sinks([Self.builtIn], cards: [Self.card(index: 4, profile: "headset_head_unit")]))
        _ = await path.next()
        feed.yield(.sinks([Self.builtIn, Self.a2dpSink], cards: [Self.card(index: 4, profile: "a2dp_sink")]))
        report = await path.next()
        #expect(report?.state.route?.description == "PulseAudio sink bluez_sink.11_22_33_AA_BB_CC.a2dp_sink")
        #expect(report?.warnings == [warning])
        #expect(switches.asked.withLock { $0.map(\.card) } == [3, 4])
        feed.finish()
    }

    @Test("a switch the server refuses is reported with its reason, and not retried")
    func refusedSwitch() async {
        let (states, feed) = AsyncStream.makeStream(of: SoundServerState.self)
        let switches = Switches(answer: "Not supported")
        var path = SoundServerBackend.follow(states, Self.flip, switchCard: { switches.record($0, $1) }).makeAsyncIterator()
        feed.yield(.sinks([Self.builtIn], cards: [Self.card(profile: "headset-head-unit", offers: ["a2dp-sink", "headset-head-unit"])]))
        var reports: [AudioPathReport] = []
        while let report = await path.next() {
            reports.append(report)
            if reports.count == 1 { feed.yield(.sinks([Self.builtIn], cards: [Self.card(profile: "headset-head-unit", offers: ["a2dp-sink", "headset-head-unit"])])); feed.finish() }
        }
        #expect(reports.first?.state == .notReady(.noAudioDevice(
            "JBL Flip 5", "its card bluez_card.11_22_33_AA_BB_CC is in the headset profile headset-head-unit; switching it to a2dp-sink failed: Not supported")))
        #expect(switches.count == 1)
        #expect(reports.allSatisfy { $0.warnings.isEmpty }, "a refused switch is the path's reason while it waits, not a switch made")
    }

    @Test("a headset card with no A2DP profile to offer, another speaker's card, and a card in A2DP are left alone")
    func leftAlone() async {
        let (states, feed) = AsyncStream.makeStream(of: SoundServerState.self)
        let switches = Switches()
        var path = SoundServerBackend.follow(states, Self.flip, switchCard: { switches.record($0, $1) }).makeAsyncIterator()
        feed.yield(.sinks([Self.builtIn], cards: [Self.card(profile: "headset_head_unit", offers: ["headset_head_unit", "off"])]))
        #expect(await path.next()?.state == .notReady(.noAudioDevice(
            "JBL Flip 5", "its card bluez_card.11_22_33_AA_BB_CC is in the headset profile headset_head_unit and offers no A2DP profile")))
        var other = Self.card(index: 5, profile: "headset_head_unit")
        other.properties["device.string"] = "44:55:66:77:88:99"
        feed.yield(.sinks([Self.builtIn], cards: [other, Self.card(index: 6, profile: "a2dp_sink")]))
        #expect(await path.next()?.state == .notReady(.noAudioDevice("JBL Flip 5", "no Bluetooth sink for it on the sound server yet")))
        feed.finish()
        #expect(switches.count == 0)
    }
}
