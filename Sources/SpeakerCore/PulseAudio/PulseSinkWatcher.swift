internal import CPulse
import AsyncSignals

/// One sink on a PulseAudio server (or PipeWire's pipewire-pulse), as the rest of speakerd sees
/// it: plain values, no libpulse types.
public struct SoundServerSink: Sendable, Equatable {
    public var index: UInt32
    /// The sink's name, which clients pass to put a stream on it (`bluez_sink.AA_BB….a2dp_sink`).
    /// Never used to recognise a speaker: its suffix is an id the server chooses.
    public var name: String
    public var properties: [String: String]
    /// The active profile of the card the sink belongs to (`a2dp_sink`, `headset_head_unit`);
    /// nil for a sink without a card (a null sink, a PipeWire node).
    public var cardProfile: String?
    /// The sink's sample rate (its sample spec): a Bluetooth sink's is the A2DP link's, 48 kHz
    /// with PipeWire and most speakers. A stream at another rate is resampled by the server.
    public var sampleRate: Int?

    public init(index: UInt32, name: String, properties: [String: String], cardProfile: String? = nil, sampleRate: Int? = nil) {
        self.index = index
        self.name = name
        self.properties = properties
        self.cardProfile = cardProfile
        self.sampleRate = sampleRate
    }

    /// Whether this is the A2DP sink of the speaker at `address` (`AA:BB:…`, as BlueZ spells it,
    /// in any case), by its properties: the address
    /// (`api.bluez5.address` from PipeWire, `device.string` from PulseAudio's bluez5 module) on
    /// the Bluetooth bus, with an A2DP profile (the sink's own `api.bluez5.profile` or
    /// `bluetooth.protocol`, or its card's active profile). A speaker left in a headset profile
    /// has a sink too, but not one worth playing music to.
    public func isA2DPSink(of address: String) -> Bool {
        guard Self.names(address, in: properties) else { return false }
        let profiles = [properties["api.bluez5.profile"], properties["bluetooth.protocol"]].compactMap { $0?.lowercased() }
        return profiles.contains { $0.contains("a2dp") } || cardProfile?.lowercased().hasPrefix("a2dp") == true
    }

    /// Whether a sink's or card's properties name the Bluetooth device at `address`: on the
    /// Bluetooth bus, with the address in `api.bluez5.address` (PipeWire) or `device.string`
    /// (PulseAudio's bluez5 module).
    static func names(_ address: String, in properties: [String: String]) -> Bool {
        guard properties["device.bus"] == "bluetooth" else { return false }
        let wanted = address.uppercased()
        return [properties["api.bluez5.address"], properties["device.string"]].contains { $0?.uppercased() == wanted }
    }
}

/// A card on the sound server: PulseAudio's bluez5 card for a speaker, or PipeWire's Bluetooth
/// device, with the profiles it offers. A speaker that connected as a headset (HSP/HFP) has a
/// card whose active profile is a headset one, and no A2DP sink until its card is switched.
public struct SoundServerCard: Sendable, Equatable {
    public var index: UInt32
    public var name: String
    public var properties: [String: String]
    public var activeProfile: String?
    /// Every profile the card offers that is not known to be unavailable, by name.
    public var availableProfiles: [String]

    public init(index: UInt32, name: String, properties: [String: String], activeProfile: String?, availableProfiles: [String]) {
        self.index = index
        self.name = name
        self.properties = properties
        self.activeProfile = activeProfile
        self.availableProfiles = availableProfiles
    }

    /// Whether a profile with libpulse's `pa_card_profile_info2.available` can be chosen: that
    /// field is a yes or no (zero: unavailable), not a `pa_available_t`, whose "no" is 1. Read
    /// as one, it skipped every available profile, and on real PipeWire a speaker's card in its
    /// headset profile "offered no A2DP profile", so it was never switched back.
    static func isChoosable(available: Int32) -> Bool { available != 0 }

    /// The card of the speaker at `address`, by its properties (as for sinks, never its name).
    public func belongs(to address: String) -> Bool {
        SoundServerSink.names(address, in: properties)
    }

    /// Whether the card is in a headset profile (PulseAudio's `headset_head_unit`, PipeWire's
    /// `headset-head-unit`, HSP/HFP names), which gives a speaker no music sink.
    public var isInHeadsetProfile: Bool {
        guard let profile = activeProfile?.lowercased() else { return false }
        return ["headset", "hsp", "hfp"].contains { profile.contains($0) }
    }

    /// The A2DP profile to switch to: the first available one whose name says A2DP.
    public var a2dpProfile: String? {
        availableProfiles.first { $0.lowercased().hasPrefix("a2dp") }
    }
}

/// libpulse, opened on first use instead of linked (see `CPulse.h` for why): only
/// `audio_output = pulseaudio` pays for its libraries.
enum PulseLibrary {
    /// The loaded library's functions; the C table's fields are named after them.
    typealias API = SpeakerdPulse

    /// Debian's libpulse0; the unversioned name exists only where the -dev package is.
    static let candidates = ["libpulse.so.0", "libpulse.so"]

    /// Opened once per process; a failure is kept too (the library does not appear by itself).
    private static let shared: Result<API, PulseLibraryError> = {
        var reasons: [String] = []
        for name in candidates {
            var message = [CChar](repeating: 0, count: 512)
            if let table = speakerd_pulse_load(name, &message, message.count) { return .success(table.pointee) }
            reasons.append(message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return .failure(PulseLibraryError(reason: reasons.first ?? "no library name to try"))
    }()

    static func api() throws(PulseLibraryError) -> API { try shared.get() }
}

/// libpulse could not be opened.
struct PulseLibraryError: Error, CustomStringConvertible {
    let reason: String
    var description: String { "libpulse is not available (\(reason)); install libpulse0" }
}

/// What a PulseAudio server shows of its sinks, over time.
public enum SoundServerState: Sendable, Equatable {
    /// The server could not be reached or the connection was lost (libpulse's sentence).
    case unreachable(String)
    /// Connected: every sink the server has now, and its cards.
    case sinks([SoundServerSink], cards: [SoundServerCard] = [])
}

/// The sinks of a PulseAudio server as an `AsyncStream`, kept current by libpulse's subscription
/// to sink and card events (no `pactl` polling).
///
/// Each connection runs libpulse's threaded main loop (its own thread, so no Swift concurrency
/// thread ever waits on the server). When the server cannot be reached or goes away, the stream
/// says so and connects again every `retryEvery`, so a server started later is found. Ending the
/// stream (its consumer cancelled) closes the connection and ends the main loop's thread.
public enum PulseSinkWatcher {
    /// - Parameter server: a PulseAudio server string (`unix:/run/user/1000/pulse/native`); nil
    ///   lets libpulse find the server as every client does (`PULSE_SERVER`, client.conf, the
    ///   user's runtime directory, the system-wide socket).
    public static func states(server: String?, retryEvery: Duration = .seconds(1)) -> AsyncStream<SoundServerState> {
        AsyncStream { continuation in
            let task = Task {
                while !Task.isCancelled {
                    let session = PulseSession(server: server)
                    for await state in session.states { continuation.yield(state) }
                    session.close()
                    try? await Task.sleep(for: retryEvery)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// One connection to a PulseAudio server: a `pa_context` on its own `pa_threaded_mainloop`.
///
/// `states` yields the sink list after connecting and after every sink or card event, and
/// finishes when the connection fails or ends. `close()` must be called once by the owner; it
/// tears the connection down on a thread of its own, because stopping the main loop joins its
/// thread.
///
/// Thread safety: `fetching`, `again`, `cards` and `collected` are touched only by libpulse's
/// callbacks, which all run on the main loop's thread; `close()` takes the main loop's lock
/// before it disconnects, so no callback runs during or after that.
private final class PulseSession: @unchecked Sendable {
    let states: AsyncStream<SoundServerState>
    private let continuation: AsyncStream<SoundServerState>.Continuation
    private let connection: PulseConnection?
    private var pulse: PulseLibrary.API? { connection?.pulse }
    private var context: OpaquePointer? { connection?.context }

    private var fetching = false
    private var again = false
    private var cards: [SoundServerCard] = []
    private var collected: [SoundServerSink] = []

    init(server: String?) {
        (states, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(8))
        switch PulseConnection.make(name: "speakerd") {
        case .failure(let error):
            connection = nil
            fail(error.reason)
        case .success(let connection):
            self.connection = connection
            let me = Unmanaged.passUnretained(self).toOpaque()
            let problem = connection.connect(server: server, configure: { context in
                connection.pulse.pa_context_set_subscribe_callback(context, { _, _, _, me in
                    guard let me else { return }
                    Unmanaged<PulseSession>.fromOpaque(me).takeUnretainedValue().refresh()
                }, me)
            }, stateChanged: { [unowned self] state in stateChanged(state) })
            if let problem { fail(problem) }
        }
    }

    /// Ends the connection and the main loop's thread, and finishes `states`.
    func close() {
        continuation.finish()
        DetachedThread.start(name: "pulse-close") { [self] in teardown() }
    }

    /// Disconnects (no callback runs after it) and ends the main loop, joining its thread.
    private func teardown() {
        connection?.teardown { context in connection?.pulse.pa_context_set_subscribe_callback(context, nil, nil) }
    }

    private func fail(_ reason: String) {
        continuation.yield(.unreachable(reason))
        continuation.finish()
    }

    // MARK: - On the main loop's thread

    private func stateChanged(_ state: pa_context_state_t) {
        guard let pulse, let context, let connection else { return }
        if state == PA_CONTEXT_READY {
            let mask = pa_subscription_mask_t(PA_SUBSCRIPTION_MASK_SINK.rawValue | PA_SUBSCRIPTION_MASK_CARD.rawValue)
            if let operation = pulse.pa_context_subscribe(context, mask, nil, nil) { pulse.pa_operation_unref(operation) }
            refresh()
        } else if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
            fail(connection.errorText)
        }
    }

    /// Reads the cards (for their active profiles), then the sinks, then yields the sinks; an
    /// event that arrives meanwhile reads everything once more afterwards.
    private func refresh() {
        guard let pulse, let context else { return }
        guard !fetching else {
            again = true
            return
        }
        fetching = true
        again = false
        cards = []
        let me = Unmanaged.passUnretained(self).toOpaque()
        let operation = pulse.pa_context_get_card_info_list(context, { _, info, end, me in
            guard let me else { return }
            let session = Unmanaged<PulseSession>.fromOpaque(me).takeUnretainedValue()
            if end != 0 { session.readSinks() } else if let card = info?.pointee { session.cards.append(session.card(card)) }
        }, me)
        if let operation { pulse.pa_operation_unref(operation) } else { fetching = false }
    }

    private func readSinks() {
        guard let pulse, let context else { return }
        collected = []
        let me = Unmanaged.passUnretained(self).toOpaque()
        let operation = pulse.pa_context_get_sink_info_list(context, { _, info, end, me in
            guard let me else { return }
            let session = Unmanaged<PulseSession>.fromOpaque(me).takeUnretainedValue()
            if end != 0 { session.finishRefresh() } else if let sink = info?.pointee {
                session.collected.append(SoundServerSink(
                    index: sink.index,
                    name: sink.name.map { String(cString: $0) } ?? "",
                    properties: session.dictionary(sink.proplist),
                    cardProfile: sink.card == UInt32.max ? nil : session.cards.first { $0.index == sink.card }?.activeProfile,
                    sampleRate: sink.sample_spec.rate == 0 ? nil : Int(sink.sample_spec.rate)))
            }
        }, me)
        if let operation { pulse.pa_operation_unref(operation) } else { fetching = false }
    }

    private func card(_ card: pa_card_info) -> SoundServerCard {
        let active = card.active_profile2?.pointee.name ?? card.active_profile?.pointee.name
        var profiles: [String] = []
        if let list = card.profiles2 {
            for index in 0..<Int(card.n_profiles) {
                guard let profile = list[index]?.pointee, SoundServerCard.isChoosable(available: profile.available),
                      let name = profile.name else { continue }
                profiles.append(String(cString: name))
            }
        }
        return SoundServerCard(index: card.index, name: card.name.map { String(cString: $0) } ?? "",
                               properties: dictionary(card.proplist), activeProfile: active.map { String(cString: $0) },
                               availableProfiles: profiles)
    }

    private func finishRefresh() {
        continuation.yield(.sinks(collected, cards: cards))
        fetching = false
        if again { refresh() }
    }

    private func dictionary(_ list: OpaquePointer?) -> [String: String] {
        guard let pulse, let list else { return [:] }
        var result: [String: String] = [:]
        var state: UnsafeMutableRawPointer?
        while let key = pulse.pa_proplist_iterate(list, &state) {
            if let value = pulse.pa_proplist_gets(list, key) { result[String(cString: key)] = String(cString: value) }
        }
        return result
    }
}
