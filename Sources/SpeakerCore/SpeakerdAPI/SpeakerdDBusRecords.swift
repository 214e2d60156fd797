import BlueZ
import DBus
import MIDI
/// The reports as D-Bus property bags (`a{sv}`), the idiomatic record shape on the bus:
/// extensible (new keys do not break old clients) and readable in `busctl introspect`.
/// Keys are the JSON keys capitalised, as D-Bus convention has it.
public enum SpeakerdDBusRecords {
    // MARK: - Status

    static func encode(_ report: StatusReport) -> DBusValue { .properties(bag(report)) }

    private static func bag(_ report: StatusReport) -> [String: DBusValue] {
        var bag: [String: DBusValue] = [
            "Readiness": .string(report.readiness),
            "Message": .string(report.message),
            "Playback": encode(report.playback),
        ]
        if let speaker = report.speaker { bag["Speaker"] = encode(speaker) }
        if let waiting = report.waitingFor {
            bag["WaitingFor"] = .properties(["Code": .string(waiting.code), "Message": .string(waiting.message)])
        }
        if !report.warnings.isEmpty { bag["Warnings"] = .strings(report.warnings) }
        if let path = report.audioPath { bag["AudioPath"] = .string(path) }
        if let rate = report.audioSampleRateHz { bag["AudioSampleRateHz"] = .uint32(UInt32(clamping: rate)) }
        if let choice = report.outputChoice { bag["OutputChoice"] = .string(choice) }
        if let volume = report.volume { bag["Volume"] = .uint32(UInt32(clamping: volume)) }
        return bag
    }

    /// A status that also names a `Play` request still waiting (its outcome comes as `PlayRequestEnded`).
    static func encode(_ report: StatusReport, pendingRequest: UInt64) -> DBusValue {
        var bag = bag(report)
        bag["Request"] = .uint64(pendingRequest)
        return .properties(bag)
    }

    /// The waiting `Play` request a status names, if any.
    static func pendingRequest(from value: DBusValue) throws(DBusError) -> UInt64? {
        try value.as([String: DBusValue].self, at: "status").decode("Request", as: UInt64.self)
    }

    public static func encode(_ speaker: StatusReport.Speaker) -> DBusValue {
        .properties(["Address": .string(speaker.address), "Name": .string(speaker.name), "Connected": .bool(speaker.connected)])
    }

    public static func encode(_ playback: StatusReport.Playback) -> DBusValue {
        var bag: [String: DBusValue] = ["State": .string(playback.state)]
        if let file = playback.file { bag["File"] = .string(file) }
        if let position = playback.positionSeconds { bag["PositionSeconds"] = .double(position) }
        if let duration = playback.durationSeconds { bag["DurationSeconds"] = .double(duration) }
        if let error = playback.error { bag["Error"] = .string(error) }
        if let latency = playback.latencyMs { bag["LatencyMs"] = .uint32(UInt32(clamping: latency)) }
        if let place = playback.musicalPosition {
            var fields: [String: DBusValue] = ["Bar": .int32(Int32(clamping: place.bar)), "Beat": .int32(Int32(clamping: place.beat)),
                                               "Bars": .int32(Int32(clamping: place.bars))]
            if let bpm = place.bpm { fields["Bpm"] = .double(bpm) }
            bag["MusicalPosition"] = .properties(fields)
        }
        if let controls = playback.controls {
            bag["Controls"] = .properties([
                "Loop": .string(controls.loop ?? ""), "Tempo": .string(controls.tempo ?? ""),
                "Transpose": .int32(Int32(controls.transpose)),
                "Mute": .array(element: "s", controls.mute.map(DBusValue.string)),
                "Solo": .array(element: "s", controls.solo.map(DBusValue.string)),
            ])
        }
        if !playback.queue.isEmpty {
            bag["Queue"] = array(playback.queue.map { .properties(["File": .string($0.file), "DurationSeconds": .double($0.durationSeconds)]) })
        }
        return .properties(bag)
    }

    static func status(from value: DBusValue) throws(DBusError) -> StatusReport {
        let bag = try value.as([String: DBusValue].self, at: "status")
        return StatusReport(
            readiness: try require(bag, "Readiness", String.self),
            message: try bag.decode("Message", as: String.self) ?? "",
            speaker: try bag["Speaker"].map { (v: DBusValue) throws(DBusError) in try speaker(from: v) },
            playback: try bag["Playback"].map { (v: DBusValue) throws(DBusError) in try playback(from: v) } ?? .idle,
            waitingFor: try bag["WaitingFor"].map { (v: DBusValue) throws(DBusError) in try waitingFor(from: v) },
            warnings: try bag.decode("Warnings", as: [String].self) ?? [],
            audioPath: try bag.decode("AudioPath", as: String.self),
            audioSampleRateHz: try bag.decode("AudioSampleRateHz", as: UInt32.self).map { Int($0) },
            outputChoice: try bag.decode("OutputChoice", as: String.self),
            volume: try bag.decode("Volume", as: UInt32.self).map { Int($0) })
    }

    static func waitingFor(from value: DBusValue) throws(DBusError) -> StatusReport.WaitingFor {
        let bag = try value.as([String: DBusValue].self, at: "waitingFor")
        return .init(code: try require(bag, "Code", String.self), message: try bag.decode("Message", as: String.self) ?? "")
    }

    static func speaker(from value: DBusValue) throws(DBusError) -> StatusReport.Speaker {
        let bag = try value.as([String: DBusValue].self, at: "speaker")
        return .init(address: try require(bag, "Address", String.self), name: try bag.decode("Name", as: String.self) ?? "",
                     connected: try bag.decode("Connected", as: Bool.self) ?? false)
    }

    static func playback(from value: DBusValue) throws(DBusError) -> StatusReport.Playback {
        let bag = try value.as([String: DBusValue].self, at: "playback")
        return .init(state: try require(bag, "State", String.self), file: try bag.decode("File", as: String.self),
                     positionSeconds: try bag.decode("PositionSeconds", as: Double.self),
                     durationSeconds: try bag.decode("DurationSeconds", as: Double.self),
                     error: try bag.decode("Error", as: String.self),
                     queue: try (bag.decode("Queue", as: [[String: DBusValue]].self) ?? []).map { (entry: [String: DBusValue]) throws(DBusError) in
                         StatusReport.QueuedSong(file: try require(entry, "File", String.self),
                                                 durationSeconds: try entry.decode("DurationSeconds", as: Double.self) ?? 0)
                     },
                     controls: try bag["Controls"].map { (v: DBusValue) throws(DBusError) in try controls(from: v) },
                     musicalPosition: try bag["MusicalPosition"].map { (v: DBusValue) throws(DBusError) in
                         let place = try v.as([String: DBusValue].self, at: "musicalPosition")
                         return StatusReport.MusicalPosition(bar: Int(try require(place, "Bar", Int32.self)),
                                                             beat: Int(try require(place, "Beat", Int32.self)),
                                                             bars: Int(try require(place, "Bars", Int32.self)),
                                                             bpm: try place.decode("Bpm", as: Double.self))
                     },
                     latencyMs: try bag.decode("LatencyMs", as: UInt32.self).map(Int.init))
    }

    static func controls(from value: DBusValue) throws(DBusError) -> StatusReport.Controls {
        let bag = try value.as([String: DBusValue].self, at: "controls")
        let loop = try bag.decode("Loop", as: String.self) ?? "", tempo = try bag.decode("Tempo", as: String.self) ?? ""
        return .init(loop: loop.isEmpty ? nil : loop, tempo: tempo.isEmpty ? nil : tempo,
                     transpose: Int(try bag.decode("Transpose", as: Int32.self) ?? 0),
                     mute: try bag.decode("Mute", as: [String].self) ?? [], solo: try bag.decode("Solo", as: [String].self) ?? [])
    }

    // MARK: - Volume

    static func encode(_ report: VolumeReport) -> DBusValue {
        .properties(["Percent": .uint32(UInt32(clamping: report.percent)), "Address": .string(report.address),
                     "Name": .string(report.name), "Device": .string(report.device)])
    }

    static func volume(from value: DBusValue) throws(DBusError) -> VolumeReport {
        let bag = try value.as([String: DBusValue].self, at: "volume")
        return VolumeReport(percent: Int(try require(bag, "Percent", UInt32.self)),
                            address: try bag.decode("Address", as: String.self) ?? "",
                            name: try bag.decode("Name", as: String.self) ?? "",
                            device: try bag.decode("Device", as: String.self) ?? "")
    }

    /// The `Volume` property: the status's volume as `{Percent}`, empty while none is known.
    public static func volumeProperty(_ percent: Int?) -> DBusValue {
        .properties(percent.map { ["Percent": .uint32(UInt32(clamping: $0))] } ?? [:])
    }

    // MARK: - Start-up timeline

    static func encode(_ report: StartupReport) -> DBusValue {
        var bag: [String: DBusValue] = [
            "Scenario": .string(report.scenario),
            "CriticalPath": .strings(report.criticalPath),
            "Operations": array(report.operations.map { operation in
                var bag: [String: DBusValue] = [
                    "Name": .string(operation.name), "StartMs": .double(operation.startMs), "Outcome": .string(operation.outcome),
                ]
                if let end = operation.endMs { bag["EndMs"] = .double(end) }
                if let reason = operation.reason { bag["Reason"] = .string(reason) }
                return .properties(bag)
            }),
        ]
        if let choice = report.outputChoice { bag["OutputChoice"] = .string(choice) }
        bag["Run"] = .uint32(UInt32(clamping: report.run))
        bag["StartedAfterMs"] = .double(report.startedAfterMs)
        if let reason = report.reason { bag["Reason"] = .string(reason) }
        if let boot = report.bootRun { bag["BootRun"] = encode(boot) }
        return .properties(bag)
    }

    static func startup(from value: DBusValue) throws(DBusError) -> StartupReport {
        let bag = try value.as([String: DBusValue].self, at: "startup")
        var operations: [StartupReport.Operation] = []
        for entry in try bag.decode("Operations", as: [[String: DBusValue]].self) ?? [] {
            operations.append(.init(name: try require(entry, "Name", String.self),
                                    startMs: try require(entry, "StartMs", Double.self),
                                    endMs: try entry.decode("EndMs", as: Double.self),
                                    outcome: try require(entry, "Outcome", String.self),
                                    reason: try entry.decode("Reason", as: String.self)))
        }
        // A speakerd older than the run history sends none of these: its report is the boot's.
        let boot = try bag["BootRun"].map { value throws(DBusError) in try startup(from: value) }
        return StartupReport(scenario: try bag.decode("Scenario", as: String.self) ?? "",
                             operations: operations,
                             criticalPath: try bag.decode("CriticalPath", as: [String].self) ?? [],
                             outputChoice: try bag.decode("OutputChoice", as: String.self),
                             run: Int(try bag.decode("Run", as: UInt32.self) ?? 1),
                             startedAfterMs: try bag.decode("StartedAfterMs", as: Double.self) ?? 0,
                             reason: try bag.decode("Reason", as: String.self),
                             bootRun: boot)
    }

    // MARK: - The composer's controls of a play

    /// The longest text one control may carry (a position, a loop, a tempo, a list of parts).
    static let arrangementTextLimit = 256

    public static func encode(_ text: ArrangementText) -> DBusValue {
        var bag: [String: DBusValue] = [:]
        if let from = text.from { bag["From"] = .string(from) }
        if let to = text.to { bag["To"] = .string(to) }
        if let loop = text.loop { bag["Loop"] = .string(loop) }
        if text.loopCount != 1 { bag["LoopCount"] = .int32(Int32(clamping: text.loopCount)) }
        if let tempo = text.tempo { bag["Tempo"] = .string(tempo) }
        if text.transpose != 0 { bag["Transpose"] = .int32(Int32(clamping: text.transpose)) }
        if let mute = text.mute { bag["Mute"] = .string(mute) }
        if let solo = text.solo { bag["Solo"] = .string(solo) }
        if text.countIn != 0 { bag["CountIn"] = .int32(Int32(clamping: text.countIn)) }
        return .properties(bag)
    }

    /// The controls a client sent; a key nobody knows is refused rather than ignored (a newer
    /// composer-cli asking for something this speakerd cannot do must hear so).
    public static func arrangement(from value: DBusValue) throws(DBusError) -> ArrangementText {
        let bag = try value.as([String: DBusValue].self, at: "arrangement")
        let known: Set<String> = ["From", "To", "Loop", "LoopCount", "Tempo", "Transpose", "Mute", "Solo", "CountIn"]
        if let unknown = bag.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalidArgument("this speakerd does not know the control '\(unknown.prefix(40))'; is composer-cli newer than speakerd?")
        }
        func text(_ key: String) throws(DBusError) -> String? {
            guard let value = try bag.decode(key, as: String.self) else { return nil }
            guard value.utf8.count <= arrangementTextLimit else {
                throw .invalidArgument("the control \(key) is \(value.utf8.count) bytes long (at most \(arrangementTextLimit))")
            }
            return value
        }
        return ArrangementText(from: try text("From"), to: try text("To"), loop: try text("Loop"),
                               loopCount: Int(try bag.decode("LoopCount", as: Int32.self) ?? 1),
                               tempo: try text("Tempo"), transpose: Int(try bag.decode("Transpose", as: Int32.self) ?? 0),
                               mute: try text("Mute"), solo: try text("Solo"),
                               countIn: Int(try bag.decode("CountIn", as: Int32.self) ?? 0))
    }

    // MARK: - Scan and speakers

    public static func encode(_ report: ScanReport) -> DBusValue {
        array(report.candidates.map { candidate in
            var bag: [String: DBusValue] = [
                "Address": .string(candidate.address), "Name": .string(candidate.name),
                "Known": .bool(candidate.known), "AudioSink": .bool(candidate.audioSink),
            ]
            if let rssi = candidate.rssi { bag["RSSI"] = .int16(Int16(clamping: rssi)) }
            return .properties(bag)
        })
    }

    static func scan(from value: DBusValue) throws(DBusError) -> ScanReport {
        var candidates: [ScanReport.Candidate] = []
        for bag in try value.as([[String: DBusValue]].self, at: "scan") {
            candidates.append(.init(address: try require(bag, "Address", String.self),
                                    name: try bag.decode("Name", as: String.self) ?? "",
                                    rssi: try bag.decode("RSSI", as: Int16.self).map(Int.init),
                                    known: try bag.decode("Known", as: Bool.self) ?? false,
                                    audioSink: try bag.decode("AudioSink", as: Bool.self) ?? false))
        }
        return ScanReport(candidates: candidates)
    }

    static func encode(_ report: SpeakersReport) -> DBusValue {
        array(report.speakers.map { speaker in
            .properties(["Address": .string(speaker.address), "Name": .string(speaker.name),
                         "Connected": .bool(speaker.connected), "LastConnected": .string(speaker.lastConnected)])
        })
    }

    static func speakers(from value: DBusValue) throws(DBusError) -> SpeakersReport {
        var speakers: [SpeakersReport.Speaker] = []
        for bag in try value.as([[String: DBusValue]].self, at: "speakers") {
            speakers.append(.init(address: try require(bag, "Address", String.self),
                                  name: try bag.decode("Name", as: String.self) ?? "",
                                  connected: try bag.decode("Connected", as: Bool.self) ?? false,
                                  lastConnected: try bag.decode("LastConnected", as: String.self) ?? ""))
        }
        return SpeakersReport(speakers: speakers)
    }

    // MARK: - Helpers

    static func array(_ bags: [DBusValue]) -> DBusValue { .array(element: "a{sv}", bags) }

    private static func require<T: DBusDecodable>(_ bag: [String: DBusValue], _ key: String, _ type: T.Type) throws(DBusError) -> T {
        guard let value = try bag.decode(key, as: T.self) else {
            throw .typeMismatch(expected: T.dbusSignature.rawValue, actual: "nothing", location: "key '\(key)'")
        }
        return value
    }
}
