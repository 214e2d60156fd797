/// What `composer-cli status` shows: how far the daemon is, which speaker, what is playing.
///
/// JSON keys are a public contract (DEVELOPERS.md): `readiness`, `speaker` {`address`,
/// `name`, `connected`}, `playback` {`state`, `file`, `positionSeconds`, `durationSeconds`}.
/// `message` is the same sentence systemd shows as STATUS=. `audioPath` (present only while the
/// path to the speaker is ready) says what audio goes through, e.g. `PulseAudio sink bluez_sink…`.
public struct StatusReport: Codable, Equatable, Sendable {
    public var readiness: String
    public var message: String
    public var speaker: Speaker?
    public var playback: Playback
    /// Why playback is not ready (nil, JSON null, once it is): a stable `code` and the sentence.
    public var waitingFor: WaitingFor?
    /// Conditions that do not stop playback but lose something (speakers not remembered).
    public var warnings: [String]
    /// What audio goes through to the speaker ("PulseAudio sink bluez_sink.…", "BlueALSA PCM …")
    /// while that path is ready; nil (the key left out of `--json`) otherwise.
    public var audioPath: String?
    /// The rate of that device's audio, in Hz (a sink's sample spec, a BlueALSA PCM's rate), which
    /// songs render at so that nothing on the way resamples them; nil (the key left out) when the
    /// path is not ready or its device does not say (a file, the null output).
    public var audioSampleRateHz: Int?
    /// Under `audio_output = auto`: what speakerd chose for the speaker and why ("BlueALSA
    /// (org.bluealsa is on the system bus)"); nil (the key left out) under any other setting.
    public var outputChoice: String?
    /// The speaker's volume in percent, as last set, restored or read through speakerd while its
    /// audio device is there; nil (the key left out of `--json`) otherwise.
    public var volume: Int?

    public init(readiness: String, message: String, speaker: Speaker?, playback: Playback,
                waitingFor: WaitingFor? = nil, warnings: [String] = [], audioPath: String? = nil,
                audioSampleRateHz: Int? = nil, outputChoice: String? = nil, volume: Int? = nil) {
        self.readiness = readiness
        self.message = message
        self.speaker = speaker
        self.playback = playback
        self.waitingFor = waitingFor
        self.warnings = warnings
        self.audioPath = audioPath
        self.audioSampleRateHz = audioSampleRateHz
        self.outputChoice = outputChoice
        self.volume = volume
    }

    enum CodingKeys: String, CodingKey {
        case readiness, message, speaker, playback, waitingFor, warnings, audioPath, audioSampleRateHz, outputChoice, volume
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        readiness = try container.decode(String.self, forKey: .readiness)
        message = try container.decode(String.self, forKey: .message)
        speaker = try container.decodeIfPresent(Speaker.self, forKey: .speaker)
        playback = try container.decode(Playback.self, forKey: .playback)
        waitingFor = try container.decodeIfPresent(WaitingFor.self, forKey: .waitingFor)
        warnings = try container.decodeIfPresent([String].self, forKey: .warnings) ?? []
        audioPath = try container.decodeIfPresent(String.self, forKey: .audioPath)
        audioSampleRateHz = try container.decodeIfPresent(Int.self, forKey: .audioSampleRateHz)
        outputChoice = try container.decodeIfPresent(String.self, forKey: .outputChoice)
        volume = try container.decodeIfPresent(Int.self, forKey: .volume)
    }

    /// `waitingFor` in `--json`: `code` is one of ``NotReadyReason/Code``'s raw values.
    public struct WaitingFor: Codable, Equatable, Sendable {
        public var code: String
        public var message: String

        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(readiness, forKey: .readiness)
        try container.encode(message, forKey: .message)
        try container.encode(speaker, forKey: .speaker)  // null when no speaker, never absent
        try container.encode(playback, forKey: .playback)
        try container.encode(waitingFor, forKey: .waitingFor)  // null when ready, never absent
        try container.encode(warnings, forKey: .warnings)
        try container.encodeIfPresent(audioPath, forKey: .audioPath)
        try container.encodeIfPresent(audioSampleRateHz, forKey: .audioSampleRateHz)
        try container.encodeIfPresent(outputChoice, forKey: .outputChoice)
        try container.encodeIfPresent(volume, forKey: .volume)
    }

    public struct Speaker: Codable, Equatable, Sendable {
        public var address: String
        public var name: String
        public var connected: Bool

        public init(address: String, name: String, connected: Bool) {
            self.address = address
            self.name = name
            self.connected = connected
        }

        enum CodingKeys: String, CodingKey { case address, name, connected }
    }

    public struct Playback: Codable, Equatable, Sendable {
        /// `idle`, `waiting` (for readiness), `playing`, `paused`, `stopped` or `failed`.
        public var state: String
        public var file: String?
        public var positionSeconds: Double?
        public var durationSeconds: Double?
        /// Why the song failed, while `state` is `failed` (a dead audio device, say); the key is
        /// left out of `--json` otherwise.
        public var error: String?
        /// The songs queued behind this one, in play order (`play --queue`, `play a.mid b.mid`).
        public var queue: [QueuedSong]
        /// The composer's controls the song plays with (a loop, another tempo or key, muted or
        /// soloed parts); the key is left out of `--json` while it plays as written.
        public var controls: Controls?
        /// Where the song is in its bars and beats (from its time signatures, 4/4 where it has
        /// none); the key is left out for a song without bars, or one started elsewhere than
        /// its start (`play --from`), whose position counts from there.
        public var musicalPosition: MusicalPosition?
        /// How far the speaker is behind what speakerd has rendered, in milliseconds: the output's
        /// reported latency, which `positionSeconds` already subtracts (it is the heard
        /// position). Left out when the output reports none (a file, null) or nothing plays.
        public var latencyMs: Int?

        public init(state: String, file: String? = nil, positionSeconds: Double? = nil, durationSeconds: Double? = nil,
                    error: String? = nil, queue: [QueuedSong] = [], controls: Controls? = nil,
                    musicalPosition: MusicalPosition? = nil, latencyMs: Int? = nil) {
            self.musicalPosition = musicalPosition
            self.latencyMs = latencyMs
            self.state = state
            self.file = file
            self.positionSeconds = positionSeconds
            self.durationSeconds = durationSeconds
            self.error = error
            self.queue = queue
            self.controls = controls
        }

        public static let idle = Playback(state: "idle")

        enum CodingKeys: String, CodingKey { case state, file, positionSeconds, durationSeconds, error, queue, controls, musicalPosition, latencyMs }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(state: try container.decode(String.self, forKey: .state),
                      file: try container.decodeIfPresent(String.self, forKey: .file),
                      positionSeconds: try container.decodeIfPresent(Double.self, forKey: .positionSeconds),
                      durationSeconds: try container.decodeIfPresent(Double.self, forKey: .durationSeconds),
                      error: try container.decodeIfPresent(String.self, forKey: .error),
                      queue: try container.decodeIfPresent([QueuedSong].self, forKey: .queue) ?? [],
                      controls: try container.decodeIfPresent(Controls.self, forKey: .controls),
                      musicalPosition: try container.decodeIfPresent(MusicalPosition.self, forKey: .musicalPosition),
                      latencyMs: try container.decodeIfPresent(Int.self, forKey: .latencyMs))
        }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(state, forKey: .state)
            try container.encode(file, forKey: .file)
            try container.encode(positionSeconds, forKey: .positionSeconds)
            try container.encode(durationSeconds, forKey: .durationSeconds)
            try container.encodeIfPresent(error, forKey: .error)
            try container.encode(queue, forKey: .queue)
            try container.encodeIfPresent(controls, forKey: .controls)
            try container.encodeIfPresent(musicalPosition, forKey: .musicalPosition)
            try container.encodeIfPresent(latencyMs, forKey: .latencyMs)
        }
    }

    /// "bar 17 beat 3 of 64" (`musicalPosition` in `status --json`: `bar`, `beat`, `bars`).
    public struct MusicalPosition: Codable, Equatable, Sendable {
        public var bar: Int
        public var beat: Int
        public var bars: Int
        /// The tempo heard there, in quarter notes a minute (the written tempo at that place, times
        /// a `tempo` control), to one decimal; nil from an older speakerd.
        public var bpm: Double?

        public init(bar: Int, beat: Int, bars: Int, bpm: Double? = nil) {
            self.bar = bar
            self.beat = beat
            self.bars = bars
            self.bpm = bpm.map { ($0 * 10).rounded() / 10 }
        }

        /// "bar 17 beat 3 of 64, 96 BPM" (the tempo to a tenth where it is not whole).
        public var sentence: String {
            let place = "bar \(bar) beat \(beat) of \(bars)"
            guard let bpm else { return place }
            let whole = bpm.rounded()
            return place + ", " + (whole == bpm ? "\(Int(whole))" : "\(Int(bpm))." + "\(Int((bpm * 10).rounded()) % 10)") + " BPM"
        }
    }

    /// The composer's controls a song plays with (`controls` in `status --json`: `loop` as
    /// `A-B` or null, `tempo` as `80%` or `96 BPM` or null, `transpose` in semitones, `mute` and
    /// `solo` as the parts named).
    public struct Controls: Codable, Equatable, Sendable {
        public var loop: String?
        public var tempo: String?
        public var transpose: Int
        public var mute: [String]
        public var solo: [String]

        public init(loop: String? = nil, tempo: String? = nil, transpose: Int = 0, mute: [String] = [], solo: [String] = []) {
            self.loop = loop
            self.tempo = tempo
            self.transpose = transpose
            self.mute = mute
            self.solo = solo
        }

        enum CodingKeys: String, CodingKey { case loop, tempo, transpose, mute, solo }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(loop, forKey: .loop)
            try container.encode(tempo, forKey: .tempo)
            try container.encode(transpose, forKey: .transpose)
            try container.encode(mute, forKey: .mute)
            try container.encode(solo, forKey: .solo)
        }

        /// "loop 17-24, tempo 80%, transpose -2, muted drums": what differs from the song as written.
        public var sentence: String {
            var parts: [String] = []
            if let loop { parts.append("loop \(loop)") }
            if let tempo { parts.append("tempo \(tempo)") }
            if transpose != 0 { parts.append("transpose \(transpose > 0 ? "+" : "")\(transpose)") }
            if !mute.isEmpty { parts.append("muted \(mute.joined(separator: ", "))") }
            if !solo.isEmpty { parts.append("solo \(solo.joined(separator: ", "))") }
            return parts.isEmpty ? "as written" : parts.joined(separator: ", ")
        }
    }

    /// A song waiting in the queue: its name and length (`queue` in `status --json`).
    public struct QueuedSong: Codable, Equatable, Sendable {
        public var file: String
        public var durationSeconds: Double

        public init(file: String, durationSeconds: Double) {
            self.file = file
            self.durationSeconds = durationSeconds
        }
    }

    /// "Next:      b.mid (1:02), then 2 more" while songs are queued.
    private var nextLine: [String] {
        guard let next = playback.queue.first else { return [] }
        let more = playback.queue.count - 1
        return ["Next:      \(next.file) (\(formatClock(next.durationSeconds)))" + (more > 0 ? ", then \(more) more" : "")]
    }

    /// Three aligned lines for a terminal.
    public var humanReadable: String {
        let speakerLine = speaker.map { "\($0.name) (\($0.address)), \($0.connected ? "connected" : "not connected")" }
            ?? "none"
        var playbackLine = playback.state
        if let file = playback.file { playbackLine += " \(file)" }
        if let position = playback.positionSeconds {
            playbackLine += " " + formatClock(position)
            if let duration = playback.durationSeconds { playbackLine += " / " + formatClock(duration) }
        }
        if let place = playback.musicalPosition { playbackLine += ", " + place.sentence }
        if let latency = playback.latencyMs { playbackLine += " (latency \(latency) ms)" }
        if let error = playback.error { playbackLine += ": \(error)" }
        let audioLine = audioPath.map { ["Audio:     \($0)" + (audioSampleRateHz.map { " at " + Self.kilohertz($0) } ?? "")] } ?? []
        let lines = [
            "Status:    \(message)",
            "Readiness: \(DaemonReadiness(rawValue: readiness)?.spoken ?? readiness)",
            "Speaker:   \(speakerLine)",
            "Playback:  \(playbackLine)",
        ] + (playback.controls.map { ["Controls:  \($0.sentence)"] } ?? []) + nextLine + audioLine + (outputChoice.map { ["Output:    auto chose \($0)"] } ?? [])
            + (volume.map { ["Volume:    \($0) %"] } ?? []) + warnings.map { "Warning:   \($0)" }
        return lines.joined(separator: "\n")
    }

    /// "48 kHz", "44.1 kHz", "22.05 kHz".
    static func kilohertz(_ hertz: Int) -> String {
        let thousandths = hertz % 1000
        guard thousandths != 0 else { return "\(hertz / 1000) kHz" }
        let digits = String(thousandths)
        var fraction = String(repeating: "0", count: 3 - digits.count) + digits
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(hertz / 1000).\(fraction) kHz"
    }
}
